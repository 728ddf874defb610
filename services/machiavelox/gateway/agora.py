"""The agorà through the gateway: apps reach one public endpoint only.

The gateway serves `MatchmakingService` itself and relays every call to the matchmaking service
(MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS), so on Kubernetes matchmaking stays inside the
cluster (its NetworkPolicy admits the gateways alone). The gateway checks the bearer token
first (a bad one never leaves it) and passes the call's `authorization` on, with the trace
context of its own server span (an app's `traceparent` only when the gateway trusts it);
matchmaking checks the token again (it trusts no caller). A refusal comes back as it was: the
same status code, message and machine-readable reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.platform.errors import REASON_KEY, ServiceError, unavailable
from machiavelox.platform.telemetry import inject_metadata
from machiavelox.platform.tls import Connect

from .auth import TokenVerifier, authenticate

_FORWARDED = ("authorization",)  # and the gateway's own trace context (inject_metadata)


def _relayed(err: grpc.aio.AioRpcError) -> ServiceError:
    reason = ""
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            reason = value.decode() if isinstance(value, bytes) else str(value)
    if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) \
            and not reason:
        return unavailable("agora/unavailable", "matchmaking is unreachable; try again")
    message = err.details() or ""
    if reason:  # matchmaking's details already start with its reason: keep one
        message = message.removeprefix(f"{reason}: ")
    return ServiceError(err.code(), reason or "agora/error", message)


class AgoraRelay(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, verifier: TokenVerifier, address: str, connect: Connect) -> None:
        self.verifier = verifier
        self.channel = connect(address)  # as the gateway (InternalTls.connector)
        self.stub = matchmaking_pb2_grpc.MatchmakingServiceStub(self.channel)

    def _metadata(self, context: Any) -> tuple[tuple[str, str | bytes], ...]:
        metadata = context.invocation_metadata()
        authenticate(self.verifier, metadata)
        return inject_metadata(tuple((k, v) for k, v in metadata or () if k in _FORWARDED))

    async def _unary(self, method: Any, request: Any, context: Any) -> Any:
        try:
            return await method(request, metadata=self._metadata(context), timeout=10)
        except grpc.aio.AioRpcError as err:
            raise _relayed(err) from None

    async def _stream(self, method: Any, request: Any, context: Any) -> AsyncIterator[Any]:
        call = method(request, metadata=self._metadata(context))
        try:
            async for reply in call:
                yield reply
        except grpc.aio.AioRpcError as err:
            raise _relayed(err) from None
        finally:
            call.cancel()  # the app went away: so does its ticket's stream

    async def Enqueue(self, request: matchmaking_pb2.EnqueueRequest,
                      context: Any) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        async for reply in self._stream(self.stub.Enqueue, request, context):
            yield reply

    async def JoinFriendlyTable(
            self, request: matchmaking_pb2.JoinFriendlyTableRequest,
            context: Any) -> AsyncIterator[matchmaking_pb2.JoinFriendlyTableResponse]:
        async for reply in self._stream(self.stub.JoinFriendlyTable, request, context):
            yield reply

    async def CancelTicket(self, request: matchmaking_pb2.CancelTicketRequest,
                           context: Any) -> matchmaking_pb2.CancelTicketResponse:
        reply: matchmaking_pb2.CancelTicketResponse = await self._unary(
            self.stub.CancelTicket, request, context)
        return reply

    async def CreateFriendlyTable(self, request: matchmaking_pb2.CreateFriendlyTableRequest,
                                  context: Any) -> matchmaking_pb2.CreateFriendlyTableResponse:
        reply: matchmaking_pb2.CreateFriendlyTableResponse = await self._unary(
            self.stub.CreateFriendlyTable, request, context)
        return reply

    async def close(self) -> None:
        await self.channel.close()
