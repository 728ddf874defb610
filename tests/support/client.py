"""A test client of the gateway: one Play stream driven step by step."""

from __future__ import annotations

import asyncio
import collections
import itertools
from typing import Any

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import gateway_pb2, gateway_pb2_grpc
from machiavelox.bots.responses import unbatch
from machiavelox.identity.tokens import HmacTokens

_ids = itertools.count(1)
Metadata = tuple[tuple[str, str], ...]


def bearer(token: str) -> Metadata:
    """The call metadata that carries a player's bearer token."""
    return (("authorization", f"Bearer {token}"),)


def hmac_bearer(key: str, player: str) -> Metadata:
    """`bearer` of a development token for `player`, minted with the services' HMAC `key`
    (as the gateway's Login would issue it)."""
    token, _ = HmacTokens(key.encode()).issue(player)
    return bearer(token)


async def login(channel: grpc.aio.Channel, player: str) -> str:
    stub = gateway_pb2_grpc.GatewayServiceStub(channel)
    reply = await stub.Login(gateway_pb2.LoginRequest(player=player), timeout=5)
    token: str = reply.token
    return token


class PlayClient:
    def __init__(self, channel: grpc.aio.Channel, token: str | None) -> None:
        self.stub = gateway_pb2_grpc.GatewayServiceStub(channel)
        self.token = token
        self._requests: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()
        self.call: Any = None
        self.received: list[gateway_pb2.PlayResponse] = []
        self.batches: list[gateway_pb2.PlayResponse] = []  # as they came, when batched
        self._pending: collections.deque[gateway_pb2.PlayResponse] = collections.deque()

    async def _gen(self) -> Any:
        while True:
            item = await self._requests.get()
            if item is None:
                return
            yield item

    def open(self, table_id: str, last_seq: int = 0, batched: bool = False) -> None:
        """Join; with `batched`, `next` still returns single messages (a Batch unbatched), and
        `batches` keeps what came on the wire."""
        metadata = bearer(self.token) if self.token else ()
        self.call = self.stub.Play(self._gen(), metadata=metadata)
        self._pending.clear()
        self._requests.put_nowait(gateway_pb2.PlayRequest(
            join=gateway_pb2.Join(table_id=table_id, last_seq=last_seq, batched=batched)))

    def send_raw(self, request: gateway_pb2.PlayRequest) -> None:
        self._requests.put_nowait(request)

    def act(self, action: rules.Action, action_id: str = "") -> str:
        """Send `action` with `action_id` (a fresh one when "": a resend reuses one)."""
        action_id = action_id or f"a{next(_ids)}"
        self._requests.put_nowait(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id=action_id, action=codec.action_to_pb(action))))
        return action_id

    async def next(self, timeout: float = 5.0) -> gateway_pb2.PlayResponse:
        if not self._pending:
            response: gateway_pb2.PlayResponse = await asyncio.wait_for(self.call.read(),
                                                                        timeout)
            if response is grpc.aio.EOF:
                raise EOFError("the stream ended")
            if response.WhichOneof("kind") == "batch":
                self.batches.append(response)
            self._pending.extend(unbatch(response))
        single = self._pending.popleft()
        self.received.append(single)
        return single

    async def until(self, predicate: Any, timeout: float = 5.0) -> gateway_pb2.PlayResponse:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            response = await self.next(max(0.01, end - loop.time()))
            if predicate(response):
                return response

    def cut(self) -> None:
        """Drop the connection abruptly (the app lost its network)."""
        if self.call is not None:
            self.call.cancel()

    async def close(self) -> None:
        self._requests.put_nowait(None)
        if self.call is not None:
            self.call.cancel()
