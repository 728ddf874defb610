"""One player's Play stream at the gateway: delivery in sequence order, and its bounds.

A `Session` delivers a table's events to its app strictly in sequence order (a classic
table's too: its snapshots are `classic_snapshot`, its events the same `Event`s), drops duplicates
and asks its shard link again (`resubscribe`) when it sees a gap; a resume answered in pages
(`EventList.more`) asks for the next page once the page is written to the app, so a session far
behind catches up at the pace its app reads.

Bounds (docs/security.md): the responses waiting for the app (written one at a time) are at
most `SessionLimits.messages` and `.bytes`; past either, the session ends at once with
RESOURCE_EXHAUSTED `session/slow` and what was waiting is dropped (the app resumes from its
last sequence number). So a client that never reads costs the gateway a bounded amount of
memory, whatever the table does.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc

from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2
from machiavelox.platform.eager import start_eagerly
from machiavelox.platform.errors import ServiceError, resource_exhausted

from .observe import GatewayObserver, Pending

log = logging.getLogger(__name__)

After = Callable[[], None]
"""What to do once a response is written to the app (observer calls: metrics, spans)."""

_REFUSAL_STATUS = {
    "table/not-seated": grpc.StatusCode.PERMISSION_DENIED,
    "table/unknown": grpc.StatusCode.NOT_FOUND,
    "table/unavailable": grpc.StatusCode.UNAVAILABLE,
    "rate/limited": grpc.StatusCode.RESOURCE_EXHAUSTED,
}


@dataclass(frozen=True)
class SessionLimits:
    """What may wait for one app to read (MACHIAVELOX_GATEWAY_SESSION_QUEUE_*)."""

    messages: int = 1_000
    bytes: int = 1024 * 1024


class Subscriber(Protocol):
    """What a session needs of its shard link (`links.ShardLink`)."""

    @property
    def shard_id(self) -> str: ...

    def subscribe(self, session: Session) -> None: ...


class Session:
    """One player's Play stream. `batched` sessions get one `Batch` per step of the table (an
    action's outcome with the events it produced); the others one message per ack, refusal and
    event."""

    def __init__(self, player_id: str, table_id: str, last_seq: int,
                 batched: bool = False, observer: GatewayObserver | None = None,
                 limits: SessionLimits | None = None) -> None:
        self.player_id = player_id
        self.table_id = table_id
        self.last_seq = last_seq
        self.batched = batched
        self.observer = observer or GatewayObserver()
        self.limits = limits or SessionLimits()
        self.pending: dict[str, Pending] = {}  # actions sent, by the app's id, until answered
        self.joined = False
        self.failure: ServiceError | None = None
        self.link: Subscriber | None = None
        self.asked = False  # a subscription is on its way: no other until it is answered
        self.vouched_at = 0.0  # monotonic s: when the shard was last told it shows life
        # responses for the app, each with what to do once it is written (None: the end) and
        # its size when it had to wait (0: written at once)
        self._out: deque[tuple[gateway_pb2.PlayResponse | None, After | None, int]] = deque()
        self._queued_bytes = 0
        self._write: Callable[[gateway_pb2.PlayResponse], Awaitable[None]] | None = None
        self._writing = False
        self._ended: asyncio.Future[None] | None = None
        self._over = False  # ended for being too slow: nothing more is queued
        self._idle: asyncio.Future[None] | None = None  # see `written`

    # -------------------------------------------------------------- from the shard
    @property
    def shard_id(self) -> str:
        return self.link.shard_id if self.link is not None else ""

    def deliver(self, item: table_pb2.ShardItem, arrived_ns: int = 0,
                arrived_perf_ns: int = 0) -> None:
        """An item of a shard frame that arrived at `arrived_ns` (wall; perf counter)."""
        kind = item.WhichOneof("kind")
        if kind == "batch":
            self._batch(item.batch, arrived_ns, arrived_perf_ns, item.traceparent)
        elif kind == "snapshot":
            self.asked = False
            self.last_seq = item.snapshot.seq
            self.joined = True
            self._put(gateway_pb2.PlayResponse(snapshot=item.snapshot))
        elif kind == "classic_snapshot":  # a classic table's (issue 16): read alike
            self.asked = False
            self.last_seq = item.classic_snapshot.seq
            self.joined = True
            self._put(gateway_pb2.PlayResponse(classic_snapshot=item.classic_snapshot))
        elif kind == "events":
            self.asked = False
            self._batch(common_pb2.Batch(events=item.events.events))
            if item.events.more:  # a page of a resume: the next once this one is written
                self._put_after(self.resubscribe)
        elif kind == "ack":
            self._batch(common_pb2.Batch(ack=item.ack))
        elif kind == "refused":
            self._refused(item.refused)

    def _refused(self, refused: common_pb2.ActionRefused) -> None:
        if not refused.client_action_id and refused.refusal.code != "table/unavailable":
            self.asked = False  # the subscription itself was refused
        if not self.joined and not refused.client_action_id:
            code = refused.refusal.code
            status = _REFUSAL_STATUS.get(code, grpc.StatusCode.FAILED_PRECONDITION)
            self.fail(ServiceError(status, code, refused.refusal.message))
        else:
            self._batch(common_pb2.Batch(refused=refused))

    def refuse(self, client_action_id: str, code: str, message: str) -> None:
        """An in-band refusal made by the gateway itself (the shard never saw the action, or
        the table is unreachable: `table/unavailable` with no action id)."""
        self._refused(common_pb2.ActionRefused(
            client_action_id=client_action_id,
            refusal=common_pb2.Refusal(code=code, message=message)))

    def _fresh(self, events: Sequence[common_pb2.Event]) -> tuple[int, int]:
        """The slice [start, end) of `events` to deliver: after the ones already delivered (a
        resubscription overlapped), up to a gap, if any (then it asks again from what it has)."""
        n = len(events)
        if not n:
            return 0, 0
        first = events[0].seq
        if first == self.last_seq + 1 and events[n - 1].seq == first + n - 1:
            return 0, n  # the usual case: the next events, in order
        start = 0
        while start < len(events) and events[start].seq <= self.last_seq:
            start += 1
        end, expected = start, self.last_seq + 1
        while end < len(events) and events[end].seq == expected:
            end, expected = end + 1, expected + 1
        if end < len(events) and not self.asked:
            self.resubscribe()
        return start, end

    def _observe(self, batch: common_pb2.Batch, delivered: int, arrived_ns: int,
                 arrived_perf_ns: int, traceparent: str) -> After | None:
        """What to tell the observer once the step is written (off the action's path)."""
        answered = batch.HasField("ack") or batch.HasField("refused")
        if not answered and not (delivered and arrived_perf_ns):
            return None
        observer, shard = self.observer, self.shard_id

        def after() -> None:
            if answered:
                observer.outcome(self, shard, batch)
            if delivered:
                observer.delivered(self, shard, delivered, arrived_ns, arrived_perf_ns,
                                   traceparent)
        return after

    def _batch(self, batch: common_pb2.Batch, arrived_ns: int = 0, arrived_perf_ns: int = 0,
               traceparent: str = "") -> None:
        """Put a step on the app's stream."""
        start, end = self._fresh(batch.events)
        after = self._observe(batch, end - start, arrived_ns, arrived_perf_ns, traceparent)
        if batch.events:
            self.joined = True
        if self.batched:
            if start == 0 and end == len(batch.events):
                out = batch
            else:
                out = common_pb2.Batch(events=batch.events[start:end])
                if batch.HasField("ack"):
                    out.ack.CopyFrom(batch.ack)
                if batch.HasField("refused"):
                    out.refused.CopyFrom(batch.refused)
            if end > start:
                self.last_seq = batch.events[end - 1].seq
            if end > start or out.HasField("ack") or out.HasField("refused"):
                self._put(gateway_pb2.PlayResponse(batch=out), after)
            elif after is not None:
                after()
            return
        if batch.HasField("ack"):
            self._put(gateway_pb2.PlayResponse(ack=batch.ack))
        elif batch.HasField("refused"):
            self._put(gateway_pb2.PlayResponse(refused=batch.refused))
        for ev in batch.events[start:end]:
            self.last_seq = ev.seq
            self._put(gateway_pb2.PlayResponse(event=ev))
        if after is not None:
            self._put_after(after)

    def resubscribe(self) -> None:
        if self.link is not None and not self._over:
            self.link.subscribe(self)

    # -------------------------------------------------------------- to the app
    async def serve(self, write: Callable[[gateway_pb2.PlayResponse], Awaitable[None]]) -> None:
        """Write the responses with `write` (the Play stream's) until the session ends.

        A response goes out from the task that delivers it (the shard link's reader), started
        eagerly: no hand-over to the session's own task on an event's path. One write at a
        time: what comes meanwhile is queued (within the bounds) and written, in order, when
        it completes."""
        self._ended = asyncio.get_running_loop().create_future()
        self._write = write
        if self._out:
            self._start_writing()
        try:
            await self._ended
        finally:
            self._write = None

    def _put(self, response: gateway_pb2.PlayResponse | None, after: After | None = None) -> None:
        if self._over:
            return
        size = 0
        if self._writing and response is not None:  # it waits: count it against the bounds
            size = response.ByteSize()
            self._queued_bytes += size
            if (len(self._out) >= self.limits.messages
                    or self._queued_bytes > self.limits.bytes):
                self._too_slow()
                return
        self._out.append((response, after, size))
        if not self._writing and self._write is not None:
            self._start_writing()

    def _too_slow(self) -> None:
        """The app reads too slowly for its table: end the session now, drop what waits."""
        log.info("session too slow: %d responses waiting", len(self._out),
                 extra={"player_id": self.player_id, "table_id": self.table_id})
        self._over = True
        self._out.clear()
        self._queued_bytes = 0
        self.failure = resource_exhausted("session/slow",
                                    "the app reads too slowly; resume from the last event")
        self._end()

    async def written(self) -> None:
        """Once no write to the app is in flight (the app took it, or its stream is gone)."""
        while self._writing:
            done = self._idle = asyncio.get_running_loop().create_future()
            await done

    def _start_writing(self) -> None:
        self._writing = True
        start_eagerly(self._drain(), self._write_failed)

    async def _drain(self) -> None:
        try:
            while self._out and self._write is not None:
                response, after, size = self._out.popleft()
                self._queued_bytes -= size
                if response is None:
                    self._end()
                    return
                await self._write(response)
                if after is not None:
                    after()
        finally:
            self._writing = False
            if self._idle is not None and not self._idle.done():
                self._idle.set_result(None)

    def _write_failed(self, exc: BaseException) -> None:
        log.debug("a write to the app failed: %r", exc, extra={"player_id": self.player_id})
        self._end()  # the stream is gone (the app left): the session ends

    def _end(self) -> None:
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)

    def _put_after(self, after: After) -> None:
        """Run `after` once the responses put so far are written."""
        if self._out and self._out[-1][1] is None:
            response, _, size = self._out[-1]
            self._out[-1] = (response, after, size)
        else:
            after()

    def fail(self, err: ServiceError) -> None:
        self.failure = err
        self._put(None)

    def close(self) -> None:
        self._put(None)

    @property
    def ended(self) -> bool:
        return self._over or (self._ended is not None and self._ended.done())
