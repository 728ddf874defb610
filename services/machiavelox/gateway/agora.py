"""The agorà through the gateway: apps reach one public endpoint only.

The gateway serves `MatchmakingService` itself and relays every call to the matchmaking service
(MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS), so on Kubernetes matchmaking stays inside the
cluster (its NetworkPolicy admits the gateways alone). The gateway checks the bearer token
first (a bad one never leaves it) and passes the call's `authorization` on, with the trace
context of its own server span (an app's `traceparent` only when the gateway trusts it);
matchmaking checks the token again (it trusts no caller). A refusal comes back as it was: the
same status code, message and machine-readable reason.

A stream whose matchmaking replica goes away under it (UNAVAILABLE with no reason, or
`matchmaking/stopping`: it died, or stops) is followed again by the gateway itself, on
whichever replica its channel reaches now, a few times over about 8 s (`REATTACH_WAITS_S`):
an Enqueue re-attaches to its ticket (EnqueueRequest.ticket_id, from the updates relayed so
far), a JoinFriendlyTable joins its code again (a member keeps the seat). The app sees one
stream; only if that fails does it get the refusal (and re-attaches itself, by ticket id).

With the agorà link (MACHIAVELOX_GATEWAY_AGORA_LINK, agora_link.py) the apps' Enqueues travel
as streams of one multiplexed call instead of a call each; everything above holds the same.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import grpc

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.identity.tokens import TokenVerifier, authenticate, bearer
from machiavelox.platform.errors import REASON_KEY, ServiceError, unavailable
from machiavelox.platform.telemetry import inject_metadata, traceparent
from machiavelox.platform.tls import Connect

from .agora_link import UNSUPPORTED, AgoraLinkClient, Ended

log = logging.getLogger(__name__)

_FORWARDED = ("authorization",)  # and the gateway's own trace context (inject_metadata)
REATTACH_WAITS_S = (0.2, 0.5, 1.0, 2.0, 4.0)  # before each re-attach of one broken stream

Again = Callable[[Any, Any], Any]
"""The request that follows a stream again (given its first request and last reply), or
None."""


def _reason(err: grpc.aio.AioRpcError) -> str:
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


def _ended(err: grpc.aio.AioRpcError) -> Ended:
    return Ended(err.code(), _reason(err), err.details() or "")


def _broken(end: Ended) -> bool:
    """The replica under the stream went away (died, or stops): not a refusal."""
    return end.code == grpc.StatusCode.UNAVAILABLE and end.reason in ("", "matchmaking/stopping")


def _ticket_again(request: matchmaking_pb2.EnqueueRequest,
                  last: matchmaking_pb2.EnqueueResponse) -> matchmaking_pb2.EnqueueRequest:
    return matchmaking_pb2.EnqueueRequest(ticket_id=last.update.ticket_id)


def _join_again(request: Any, last: Any) -> Any:
    return request  # (joining again keeps a member's seat)


def _relayed(end: Ended) -> ServiceError:
    reason = end.reason
    if end.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED) \
            and not reason:
        return unavailable("agora/unavailable", "matchmaking is unreachable; try again")
    message = end.details
    if reason:  # matchmaking's details already start with its reason: keep one
        message = message.removeprefix(f"{reason}: ")
    return ServiceError(end.code, reason or "agora/error", message)


async def _called(method: Any, request: Any, metadata: Any) -> AsyncGenerator[Any, None]:
    """A call's replies; `Ended` at an end other than OK."""
    call = method(request, metadata=metadata)
    try:
        async for reply in call:
            yield reply
    except grpc.aio.AioRpcError as err:
        raise _ended(err) from None
    finally:
        call.cancel()  # the app went away: so does its ticket's stream


Open = Callable[[Any], AsyncGenerator[Any, None]]
"""A stream of replies from its request (a call, or a stream of the agorà link)."""


class AgoraRelay(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, verifier: TokenVerifier, address: str, connect: Connect,
                 link: bool = False) -> None:
        self.verifier = verifier
        self.channel = connect(address)  # as the gateway (InternalTls.connector)
        self.stub = matchmaking_pb2_grpc.MatchmakingServiceStub(self.channel)
        self.link = AgoraLinkClient(self.channel) if link else None

    def _metadata(self, context: Any) -> tuple[tuple[str, str | bytes], ...]:
        metadata = context.invocation_metadata()
        authenticate(self.verifier, metadata)
        return inject_metadata(tuple((k, v) for k, v in metadata or () if k in _FORWARDED))

    async def _unary(self, method: Any, request: Any, context: Any) -> Any:
        try:
            return await method(request, metadata=self._metadata(context), timeout=10)
        except grpc.aio.AioRpcError as err:
            raise _relayed(_ended(err)) from None

    def _calls(self, method: Any, context: Any) -> Open:
        metadata = self._metadata(context)
        return lambda request: _called(method, request, metadata)

    async def _stream(self, opened: Open, request: Any, again: Again) -> AsyncIterator[Any]:
        last = None  # the last reply relayed
        tries = 0  # re-attaches since the last reply
        while True:
            replies = opened(request)
            try:
                async for reply in replies:
                    last, tries = reply, 0
                    yield reply
                return
            except Ended as end:
                if last is None or not _broken(end) or tries == len(REATTACH_WAITS_S):
                    raise _relayed(end) from None
                log.info("matchmaking went away under a stream (%s): following it again",
                         end.reason or end.code.name)
                await asyncio.sleep(REATTACH_WAITS_S[tries])
                tries += 1
                request = again(request, last)
            finally:
                await replies.aclose()

    async def Enqueue(self, request: matchmaking_pb2.EnqueueRequest,
                      context: Any) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        forwarded = self._metadata(context)  # (a bad token never leaves the gateway)
        link = self.link
        if link is None:
            async for reply in self._stream(lambda r: _called(self.stub.Enqueue, r, forwarded),
                                            request, _ticket_again):
                yield reply
            return
        authorization = f"Bearer {bearer(context.invocation_metadata())}"  # (checked above)
        span = traceparent()

        async def opened(request: Any) -> AsyncGenerator[Any, None]:
            if link.usable():
                relayed = False
                try:
                    async for reply in link.enqueue(request, authorization, span):
                        relayed = True
                        yield reply
                    return
                except Ended as end:
                    if relayed or end.reason not in ("", UNSUPPORTED):
                        raise  # (a refusal, or a break the re-attach follows by ticket id)
            # The link failed before this stream had any reply: the replica serves no link
            # (UNIMPLEMENTED; at times reported INTERNAL by gRPC when the server ends a stream
            # before reading it), or the link broke at that moment: a call instead, as before.
            async for reply in _called(self.stub.Enqueue, request, forwarded):
                yield reply

        async for reply in self._stream(opened, request, _ticket_again):
            yield reply

    async def JoinFriendlyTable(
            self, request: matchmaking_pb2.JoinFriendlyTableRequest,
            context: Any) -> AsyncIterator[matchmaking_pb2.JoinFriendlyTableResponse]:
        async for reply in self._stream(self._calls(self.stub.JoinFriendlyTable, context),
                                        request, _join_again):
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
        if self.link is not None:
            await self.link.close()
        await self.channel.close()
