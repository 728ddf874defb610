"""The gateway's side of the agorà link (issue 13; matchmaking/link.py): every app's Enqueue a
numbered stream on one `AgoraLinkService.Relay` call to matchmaking, calls and replies in
batches, instead of a call per app (MACHIAVELOX_GATEWAY_AGORA_LINK; off: a call per app).

One link at a time per gateway, opened by the first Enqueue after the last one ended. Its
writer sends what the apps' streams asked meanwhile in one frame; its reader hands each reply
to its stream. A stream ends as a direct call would: an `end` other than OK is raised as
`Ended` with its status code and reason. A link that breaks (the replica died or stops, the
connection was lost: keepalive sees a silent one within seconds) ends every stream on it
UNAVAILABLE with no reason, which the relay (agora.py) takes as "the replica went away" and
follows each ticket again by its id, on the next link. An app that goes away cancels its
stream: a `cancel` goes up, and the replica detaches its ticket. A replica that serves no link
(older than it: UNIMPLEMENTED) ends the streams `link/unsupported`: the relay then makes a
call per app, and tries the link again 30 s later (a rolling upgrade in either order); any
stream whose link fails before its first reply is made a call too (agora.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass

import grpc

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc

log = logging.getLogger(__name__)

MAX_CALLS = 512  # calls in one frame going up (each well under 1 KiB)
UNSUPPORTED = "link/unsupported"  # the replica serves no link (older than it, or switched off)
RETRY_LINK_S = 30.0  # after an unsupported answer, calls until the link is tried again
_CODES = {code.value[0]: code for code in grpc.StatusCode}


@dataclass
class Ended(Exception):
    """A stream upstream ended other than OK: its status code, reason and message."""

    code: grpc.StatusCode
    reason: str
    details: str

    def __str__(self) -> str:
        return f"{self.code.name} {self.reason}: {self.details}"


def _broke(why: str) -> Ended:
    return Ended(grpc.StatusCode.UNAVAILABLE, "", why)


Reply = matchmaking_pb2.AgoraLinkReply | Ended


class _Link:
    """One Relay call: its streams' reply queues, the calls waiting to go up."""

    def __init__(self, stub: matchmaking_pb2_grpc.AgoraLinkServiceStub) -> None:
        self.call = stub.Relay()
        self.queues: dict[int, asyncio.Queue[Reply]] = {}
        self.calls: list[matchmaking_pb2.AgoraLinkCall] = []
        self.wake = asyncio.Event()
        self.broken = False
        self.unsupported = False  # the replica answered the link UNIMPLEMENTED
        self.next_id = 1
        self.reader = asyncio.create_task(self._read(), name="agora-link-reader")
        self.writer = asyncio.create_task(self._write(), name="agora-link-writer")

    def _send(self, call: matchmaking_pb2.AgoraLinkCall) -> None:
        self.calls.append(call)
        self.wake.set()

    async def _write(self) -> None:
        try:
            while True:
                if not self.calls:
                    self.wake.clear()
                    await self.wake.wait()
                    continue
                batch, self.calls = self.calls[:MAX_CALLS], self.calls[MAX_CALLS:]
                await self.call.write(matchmaking_pb2.RelayRequest(calls=batch))
        except Exception as err:  # (AioRpcError, UsageError, InvalidStateError: the call is over)
            # The reader sees the call's status and says why it ended (a replica without the
            # link: UNIMPLEMENTED); only if it does not within a second is the link broken here.
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self.reader), 1.0)
            self._break(_broke(f"the agorà link broke ({err.__class__.__name__})"))

    async def _read(self) -> None:
        ended = _broke("the agorà link ended")
        try:
            async for down in self.call:
                for reply in down.replies:
                    queue = self.queues.get(reply.stream_id)
                    if queue is not None:
                        queue.put_nowait(reply)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                self.unsupported = True
                ended = Ended(err.code(), UNSUPPORTED, "the replica serves no agorà link")
            else:
                ended = _broke(f"the agorà link broke ({err.code().name})")
        except Exception as err:  # never leave the streams waiting on a dead reader
            log.exception("the agorà link's reader failed")
            ended = _broke(f"the agorà link broke ({err.__class__.__name__})")
        self._break(ended)

    def _break(self, ended: Ended) -> None:
        if self.broken:
            return
        self.broken = True
        log.info("%s: its %d streams follow their tickets again", ended.details,
                 len(self.queues))
        for queue in self.queues.values():
            queue.put_nowait(ended)
        self.call.cancel()
        self.writer.cancel()

    async def stream(self, request: matchmaking_pb2.EnqueueRequest, authorization: str,
                     traceparent: str) -> AsyncGenerator[matchmaking_pb2.EnqueueResponse, None]:
        if self.broken:
            raise _broke("the agorà link broke")
        sid = self.next_id
        self.next_id += 1
        queue: asyncio.Queue[Reply] = asyncio.Queue()
        self.queues[sid] = queue
        self._send(matchmaking_pb2.AgoraLinkCall(stream_id=sid, open=matchmaking_pb2.AgoraLinkOpen(
            authorization=authorization, request=request, traceparent=traceparent)))
        over = False
        try:
            while True:
                item = await queue.get()
                if isinstance(item, Ended):
                    over = True
                    raise item
                if item.WhichOneof("kind") == "response":
                    yield item.response
                elif item.WhichOneof("kind") == "end":
                    over = True
                    if item.end.code == 0:
                        return
                    raise Ended(_CODES.get(item.end.code, grpc.StatusCode.UNKNOWN),
                                item.end.reason, item.end.message)
        finally:
            self.queues.pop(sid, None)
            if not over and not self.broken:  # the app went away: so does its stream
                self._send(matchmaking_pb2.AgoraLinkCall(stream_id=sid, cancel=True))

    async def close(self) -> None:
        self._break(_broke("the gateway stops"))
        for task in (self.reader, self.writer):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.RpcError):
                await task


class AgoraLinkClient:
    """The gateway's link to matchmaking (a new one after the last one broke)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stub = matchmaking_pb2_grpc.AgoraLinkServiceStub(channel)
        self.link: _Link | None = None
        self.not_before = 0.0  # (monotonic) no link tried before then: the replica had none

    def usable(self) -> bool:
        """Whether to try the link (not within RETRY_LINK_S of a replica that had none)."""
        if self.link is not None and self.link.unsupported:
            self.not_before = time.monotonic() + RETRY_LINK_S
            self.link = None
            log.warning("matchmaking serves no agorà link: a call per app for %.0f s",
                        RETRY_LINK_S)
        return time.monotonic() >= self.not_before

    def enqueue(self, request: matchmaking_pb2.EnqueueRequest, authorization: str,
                traceparent: str) -> AsyncGenerator[matchmaking_pb2.EnqueueResponse, None]:
        """An app's Enqueue on the link: its replies; `Ended` at an end other than OK."""
        if self.link is None or self.link.broken:
            self.link = _Link(self.stub)
        return self.link.stream(request, authorization, traceparent)

    async def close(self) -> None:
        if self.link is not None:
            await self.link.close()
