"""Tests that talk to an internal service directly, as the services that call it do.

Internal services take mutual TLS and authorize each method by the caller's role
(platform/authz.py). `RoleChannels` holds one channel per role to one service, each
presenting that role's certificate of the test process's PKI (`session_pki`); its `stub`
sends every method over the channel of a role allowed to call it, so a test of the service's
behaviour uses one stub, as before, and every call is made as a real caller would make it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from machiavelox.local.pki import Pki, session_pki
from machiavelox.platform.authz import POLICY
from machiavelox.platform.tls import ROLES


def caller_of(service: str, method: str) -> str:
    """A role allowed to call `service`'s `method` (the first in ROLES' order)."""
    allowed = POLICY[f"/{service}/{method}"]
    return next(role for role in ROLES if role in allowed)


class RoleChannels:
    """Asyncio channels to the service of `server_role` at `address`, one per role."""

    def __init__(self, address: str, server_role: str, pki: Pki | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self.address = address
        self.server_role = server_role
        self.pki = pki or session_pki()
        self.options = list(options)
        self._channels: dict[str, grpc.aio.Channel] = {}

    def __call__(self, role: str) -> grpc.aio.Channel:
        channel = self._channels.get(role)
        if channel is None:
            channel = self._channels[role] = self.pki.tls(role).channel(
                self.address, self.server_role, options=self.options)
        return channel

    def stub(self, stub_class: Any, service: str) -> Any:
        """A `stub_class` stub whose every method goes as a role allowed to call it."""
        return RoutedStub(self, stub_class, service)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


class RoutedStub:
    def __init__(self, channels: RoleChannels, stub_class: Any, service: str) -> None:
        self._channels = channels
        self._stub_class = stub_class
        self._service = service
        self._stubs: dict[str, Any] = {}

    def __getattr__(self, method: str) -> Any:
        if method.startswith("_"):
            raise AttributeError(method)
        role = caller_of(self._service, method)
        stub = self._stubs.get(role)
        if stub is None:
            stub = self._stubs[role] = self._stub_class(self._channels(role))
        return getattr(stub, method)
