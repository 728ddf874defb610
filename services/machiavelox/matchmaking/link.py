"""The gateways' link (issue 13): many apps' Enqueue streams on one `AgoraLinkService.Relay`
stream per gateway, in batches both ways.

Why: gRPC's own work per call (a call opened, its messages, its status) is most of what a
replica spends on a player (tests/bench/stream_cost_bench.py: 330-450 µs of CPU for a call,
a few µs for an item in a batch on a stream that is already open). Over the link a player's
Enqueue is an `open` item and its updates are items of the frames going back.

Each stream of the link is what a direct Enqueue is: the app's authorization is checked here
again (`MatchmakingService.enqueue`: the gateway's word for who the player is is not taken),
the request is checked the same way, the agorà's updates go back as EnqueueResponses and its
refusals as the stream's end, with the status code and reason a call would end with. A
`cancel` from the gateway (its app went away) ends the stream like a cancelled call: the
ticket is detached, to be re-attached by its id. When the link itself ends (the gateway went
away, or this replica stops) every stream on it ends so.

Each stream is counted as the call it stands for (`grpc_server_started_total`,
`_handled_total` and `_handling_seconds` of `MatchmakingService/Enqueue`, with the status it
ended with; the link itself is counted too, as `AgoraLinkService/Relay`) and, with tracing on,
gets its own server span (`machiavelox.v1.MatchmakingService/Enqueue`, `via=link`), child of
the gateway's span that the open carries, so placements still link to the tickets' spans.
What a stream has not: the interceptors' per-caller limit sees the link as one caller (the
agorà's own per-player limits apply to every open).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import grpc
from opentelemetry.trace import SpanKind

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.identity.tokens import bearer
from machiavelox.platform.errors import ServiceError
from machiavelox.platform.instrument import RpcMethod
from machiavelox.platform.metrics import GrpcServerMetrics
from machiavelox.platform.telemetry import Telemetry

from .service import MatchmakingService

log = logging.getLogger(__name__)

LINK_SERVICE_NAME = "machiavelox.v1.AgoraLinkService"
SPAN_NAME = "machiavelox.v1.MatchmakingService/Enqueue"
MAX_STREAMS = 100_000  # open streams on one link (a gateway's waiting players)
MAX_REPLIES = 512  # replies in one frame going back (each well under 1 KiB)
ENQUEUE = RpcMethod.parse("/machiavelox.v1.MatchmakingService/Enqueue", "server_stream")

Prepare = Callable[[str], Awaitable[None]]
"""Fetches what checking a token will need (the provider's new signing key), as the
verifier's interceptor does before a call's handler (identity/verifier.py `KeysFirst`)."""


def _end(stream_id: int, code: grpc.StatusCode, reason: str = "", message: str = ""
         ) -> matchmaking_pb2.AgoraLinkReply:
    return matchmaking_pb2.AgoraLinkReply(stream_id=stream_id, end=matchmaking_pb2.AgoraLinkEnd(
        code=code.value[0], reason=reason, message=message))


class _Link:
    """One gateway's link: its streams (a task each) and the replies waiting to go back."""

    def __init__(self, service: MatchmakingService, telemetry: Telemetry | None,
                 metrics: GrpcServerMetrics | None, prepare: Prepare | None,
                 max_streams: int) -> None:
        self.service = service
        self.telemetry = telemetry
        self.metrics = metrics
        self.prepare = prepare
        self.max_streams = max_streams
        self.streams: dict[int, asyncio.Task[None]] = {}
        self.pending: list[matchmaking_pb2.AgoraLinkReply] = []
        self.wake = asyncio.Event()
        self.done = False  # the gateway's side ended

    def push(self, reply: matchmaking_pb2.AgoraLinkReply) -> None:
        self.pending.append(reply)
        self.wake.set()

    async def read(self, requests: AsyncIterator[matchmaking_pb2.RelayRequest]) -> None:
        try:
            async for up in requests:
                for call in up.calls:
                    self.call(call)
        finally:
            self.done = True
            self.wake.set()

    def call(self, call: matchmaking_pb2.AgoraLinkCall) -> None:
        kind = call.WhichOneof("kind")
        sid = call.stream_id
        if kind == "cancel":
            task = self.streams.pop(sid, None)
            if task is not None:
                task.cancel()
        elif kind == "open":
            if sid in self.streams:
                self.push(_end(sid, grpc.StatusCode.INVALID_ARGUMENT, "link/stream-open",
                               f"stream {sid} is open on this link"))
            elif len(self.streams) >= self.max_streams:
                self.push(_end(sid, grpc.StatusCode.RESOURCE_EXHAUSTED, "link/full",
                               f"{self.max_streams} streams are open on this link"))
            else:
                self.streams[sid] = asyncio.create_task(self.follow(sid, call.open),
                                                        name=f"link-stream-{sid}")
        # (no kind: a newer gateway's call this replica does not know; nothing to answer)

    @contextlib.contextmanager
    def _span(self, open_: matchmaking_pb2.AgoraLinkOpen) -> Iterator[None]:
        if self.telemetry is None or not self.telemetry.enabled:  # (no span to parent)
            yield
            return
        with self.telemetry.span(SPAN_NAME, traceparent=open_.traceparent, kind=SpanKind.SERVER,
                                 attributes={"via": "link"}):
            yield

    async def follow(self, sid: int, open_: matchmaking_pb2.AgoraLinkOpen) -> None:
        """One stream: the agorà's updates, then its end (none if the gateway cancelled it,
        or the link ended: this task is cancelled then)."""
        metadata = (("authorization", open_.authorization),)
        counted = None if self.metrics is None else self.metrics.begin(ENQUEUE, None)
        end = _end(sid, grpc.StatusCode.OK)
        code = grpc.StatusCode.CANCELLED  # (unless it ends otherwise below)
        try:
            await self._prepared(metadata)
            with self._span(open_):
                async for response in self.service.enqueue(metadata, open_.request):
                    self.push(matchmaking_pb2.AgoraLinkReply(stream_id=sid, response=response))
            code = grpc.StatusCode.OK
        except ServiceError as err:
            code = err.status
            end = _end(sid, err.status, err.reason, err.message)
        except Exception:  # one stream's failure must not take the link
            log.exception("a stream of the gateways' link failed")
            code = grpc.StatusCode.INTERNAL
            end = _end(sid, code, "internal", "the stream failed")
        finally:
            if counted is not None:
                counted(code, None)
        self.streams.pop(sid, None)
        self.push(end)

    async def _prepared(self, metadata: tuple[tuple[str, str | bytes], ...]) -> None:
        """The token's signing key fetched if it is new (a failure: `enqueue` refuses it)."""
        if self.prepare is None:
            return
        try:
            await self.prepare(bearer(metadata))
        except ServiceError:
            pass  # no token: enqueue refuses the stream
        except Exception:  # the check that follows decides
            log.debug("preparing a token failed", exc_info=True)

    def frame(self) -> matchmaking_pb2.RelayResponse | None:
        """The next frame to send, or None when there is nothing."""
        if not self.pending:
            return None
        batch, self.pending = self.pending[:MAX_REPLIES], self.pending[MAX_REPLIES:]
        return matchmaking_pb2.RelayResponse(replies=batch)

    async def close(self) -> None:
        """The link ended: every stream still open on it ends (its ticket detached)."""
        tasks = list(self.streams.values())
        self.streams.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class AgoraLink(matchmaking_pb2_grpc.AgoraLinkServiceServicer):
    def __init__(self, service: MatchmakingService, telemetry: Telemetry | None = None,
                 metrics: GrpcServerMetrics | None = None, prepare: Prepare | None = None,
                 max_streams: int = MAX_STREAMS) -> None:
        self.service = service
        self.telemetry = telemetry
        self.metrics = metrics
        self.prepare = prepare
        self.max_streams = max_streams

    async def Relay(self, request_iterator: AsyncIterator[matchmaking_pb2.RelayRequest],
                    context: Any) -> AsyncIterator[matchmaking_pb2.RelayResponse]:
        link = _Link(self.service, self.telemetry, self.metrics, self.prepare,
                     self.max_streams)
        reader = asyncio.create_task(link.read(request_iterator), name="link-reader")
        try:
            while True:
                frame = link.frame()
                if frame is not None:
                    yield frame  # (replies made meanwhile go in the next frame)
                    continue
                if link.done:
                    break
                link.wake.clear()  # (nothing pending: the next push or the reader's end)
                await link.wake.wait()
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.RpcError):
                await reader
            await link.close()
