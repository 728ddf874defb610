"""The development Login: a token for any valid player name, with no password.

Off unless MACHIAVELOX_GATEWAY_DEV_LOGIN is true (`machiavelox up` and the tests turn it on; the
Helm chart refuses it outside `global.environment: development`): while off, Login fails with
UNIMPLEMENTED `auth/login-disabled`. While on, logins are throttled per source address (a token
bucket per client IP, MACHIAVELOX_GATEWAY_LOGIN_RATE and _LOGIN_BURST): over the limit, Login
fails with RESOURCE_EXHAUSTED `rate/limited`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import grpc

from machiavelox.identity.tokens import HmacTokens
from machiavelox.platform.errors import ServiceError, resource_exhausted
from machiavelox.platform.ratelimit import Rate, RateLimits

DEFAULT_LOGINS = Rate(per_s=10.0, burst=50)
"""Logins per source address: a local cluster's bots log in at once; a script cannot mint
thousands a second."""


def source_of(peer: str) -> str:
    """The client address of a gRPC peer string, without the port: `ipv4:10.0.0.7:53211` ->
    `ipv4:10.0.0.7`, `ipv6:[::1]:53211` -> `ipv6:[::1]` (other forms stay whole)."""
    family, sep, rest = peer.partition(":")
    if sep and family in ("ipv4", "ipv6") and ":" in rest:
        return f"{family}:{rest.rsplit(':', 1)[0]}"
    return peer


class DevLogin:
    def __init__(self, tokens: HmacTokens | None = None, rate: Rate = DEFAULT_LOGINS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.tokens = tokens  # None: Login is off
        self.limits = RateLimits(rate)
        self.clock = clock

    def issue(self, player: str, peer: str) -> tuple[str, int]:
        """A token for `player` and its expiry (unix seconds), or a ServiceError."""
        if self.tokens is None:
            raise ServiceError(grpc.StatusCode.UNIMPLEMENTED, "auth/login-disabled",
                               "this gateway has no development Login: sign in with the "
                               "identity provider")
        now = self.clock()
        bucket = self.limits.bucket(source_of(peer), now)
        if not bucket.take(now):
            wait_s = math.ceil(bucket.retry_after_s(now))
            raise resource_exhausted("rate/limited",
                               f"too many logins from this address; retry in {wait_s} s")
        return self.tokens.issue(player)
