"""The gateway's side of the multiplexed gateway-shard streams, and the player sessions.

One `ShardLink` per shard carries every session's items on one bidirectional stream, batched
into frames, and reconnects when the stream breaks: each session then subscribes again from
the last sequence number it delivered, so nothing is lost or repeated. A `Session` is one
player's Play stream: it delivers events strictly in sequence order, drops duplicates, and
resubscribes when it sees a gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc

from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.platform.eager import start_eagerly
from machiavelox.platform.errors import ServiceError, failed_precondition, not_found
from machiavelox.platform.outbox import DEFAULT_WINDOW_S, Outbox, Write

from .observe import GatewayObserver, Pending

log = logging.getLogger(__name__)

After = Callable[[], None]
"""What to do once a response is written to the app (observer calls: metrics, spans)."""
Connect = Callable[[str], grpc.aio.Channel]
"""Opens a channel to a shard's address (the internal credentials: see platform/tls.py)."""

_REFUSAL_STATUS = {
    "table/not-seated": grpc.StatusCode.PERMISSION_DENIED,
    "table/unknown": grpc.StatusCode.NOT_FOUND,
}


class Session:
    """One player's Play stream. `batched` sessions get one `Batch` per step of the table (an
    action's outcome with the events it produced); the others one message per ack, refusal and
    event."""

    def __init__(self, player_id: str, table_id: str, last_seq: int,
                 batched: bool = False, observer: GatewayObserver | None = None) -> None:
        self.player_id = player_id
        self.table_id = table_id
        self.last_seq = last_seq
        self.batched = batched
        self.observer = observer or GatewayObserver()
        self.pending: dict[str, Pending] = {}  # actions sent, by the app's id, until answered
        self.joined = False
        self.failure: ServiceError | None = None
        self.link: ShardLink | None = None
        # responses for the app, each with what to do once it is written (None: the end)
        self._out: deque[tuple[gateway_pb2.PlayResponse | None, After | None]] = deque()
        self._write: Callable[[gateway_pb2.PlayResponse], Awaitable[None]] | None = None
        self._writing = False
        self._ended: asyncio.Future[None] | None = None

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
            self.last_seq = item.snapshot.seq
            self.joined = True
            self._put(gateway_pb2.PlayResponse(snapshot=item.snapshot))
        elif kind == "events":
            self._batch(common_pb2.Batch(events=item.events.events))
        elif kind == "ack":
            self._batch(common_pb2.Batch(ack=item.ack))
        elif kind == "refused":
            if not self.joined and not item.refused.client_action_id:
                code = item.refused.refusal.code
                status = _REFUSAL_STATUS.get(code, grpc.StatusCode.FAILED_PRECONDITION)
                self.fail(ServiceError(status, code, item.refused.refusal.message))
            else:
                self._batch(common_pb2.Batch(refused=item.refused))

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
        if end < len(events):
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
        if self.link is not None:
            self.link.subscribe(self)

    # -------------------------------------------------------------- to the app
    async def serve(self, write: Callable[[gateway_pb2.PlayResponse], Awaitable[None]]) -> None:
        """Write the responses with `write` (the Play stream's) until the session ends.

        A response goes out from the task that delivers it (the shard link's reader), started
        eagerly: no hand-over to the session's own task on an event's path. One write at a
        time: what comes meanwhile is queued and written, in order, when it completes."""
        self._ended = asyncio.get_running_loop().create_future()
        self._write = write
        if self._out:
            self._start_writing()
        try:
            await self._ended
        finally:
            self._write = None

    def _put(self, response: gateway_pb2.PlayResponse | None, after: After | None = None) -> None:
        self._out.append((response, after))
        if not self._writing and self._write is not None:
            self._start_writing()

    def _start_writing(self) -> None:
        self._writing = True
        start_eagerly(self._drain(), self._write_failed)

    async def _drain(self) -> None:
        try:
            while self._out and self._write is not None:
                response, after = self._out.popleft()
                if response is None:
                    self._end()
                    return
                await self._write(response)
                if after is not None:
                    after()
        finally:
            self._writing = False

    def _write_failed(self, exc: BaseException) -> None:
        log.debug("a write to the app failed: %r", exc, extra={"player_id": self.player_id})
        self._end()  # the stream is gone (the app left): the session ends

    def _end(self) -> None:
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)

    def _put_after(self, after: After) -> None:
        """Run `after` once the responses put so far are written."""
        if self._out and self._out[-1][1] is None:
            self._out[-1] = (self._out[-1][0], after)
        else:
            after()

    def fail(self, err: ServiceError) -> None:
        self.failure = err
        self._put(None)

    def close(self) -> None:
        self._put(None)


class ShardLink:
    def __init__(self, shard_id: str, address: str, retry_s: float = 0.5,
                 window_s: float = DEFAULT_WINDOW_S,
                 connect: Connect = grpc.aio.insecure_channel) -> None:
        self.shard_id = shard_id
        self.address = address
        self.connect = connect
        self.retry_s = retry_s
        self.sessions: dict[tuple[str, str], Session] = {}
        self._outbox: Outbox[table_pb2.ConnectRequest] = Outbox(table_pb2.ConnectRequest,
                                                                window_s)
        self._write: Write[table_pb2.ConnectRequest] | None = None  # the stream's, when open
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        self._connections = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    # -------------------------------------------------------------- sending
    def action_item(self, session: Session, traceparent: str) -> table_pb2.ActionRequestItem:
        """The action part of a new item of `session` (the hot path: no keyword packing)."""
        item = self._outbox.frame().items.add(table_id=session.table_id,
                                              player_id=session.player_id)
        if traceparent:
            item.traceparent = traceparent
        return item.action

    def item(self, session: Session, **fields: Any) -> table_pb2.GatewayItem:
        """A new item of `session` in the frame being filled, for the caller to complete now."""
        return self._outbox.frame().items.add(table_id=session.table_id,
                                              player_id=session.player_id, **fields)

    def hold(self) -> None:
        """A session is about to add an item and `flush` (see `Outbox.hold`)."""
        self._outbox.hold()

    async def flush(self) -> None:
        """After a session put its action in: it goes out now, from the session's own task,
        when the stream is quiet (see `Outbox`); else the stream's pump sends it paced."""
        write = self._write
        if write is None:
            self._outbox.release()  # not connected: the pump of the next connection sends it
            return
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self._outbox.flush(write)  # (a broken stream: `_run` reconnects)

    def subscribe(self, session: Session) -> None:
        key = (session.table_id, session.player_id)
        old = self.sessions.get(key)
        if old is not None and old is not session:
            old.fail(failed_precondition("session/replaced", "a newer session took over"))
        self.sessions[key] = session
        session.link = self
        self.item(session, subscribe=table_pb2.Subscribe(from_seq=session.last_seq))

    def unsubscribe(self, session: Session) -> None:
        key = (session.table_id, session.player_id)
        if self.sessions.get(key) is session:
            del self.sessions[key]
            self.item(session, unsubscribe=common_pb2.Empty())

    # -------------------------------------------------------------- the stream
    async def _pump(self, write: Write[table_pb2.ConnectRequest]) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self._outbox.pump(write)

    async def _run(self) -> None:
        while True:
            pump: asyncio.Task[None] | None = None
            try:
                async with self.connect(self.address) as channel:
                    stub = table_pb2_grpc.TableAuthorityServiceStub(channel)
                    call = stub.Connect()
                    self._write = write = call.write
                    pump = asyncio.create_task(self._pump(write))
                    self.connected.set()
                    self._connections += 1
                    if self._connections > 1:  # a reconnection: subscribe again, from what
                        for existing in list(self.sessions.values()):  # each has delivered
                            self.subscribe(existing)
                    async for frame in call:
                        arrived_ns, arrived_perf_ns = time.time_ns(), time.perf_counter_ns()
                        for item in frame.items:
                            target = self.sessions.get((item.table_id, item.player_id))
                            if target is not None:
                                target.deliver(item, arrived_ns, arrived_perf_ns)
            except asyncio.CancelledError:
                raise
            except grpc.aio.AioRpcError as err:
                log.warning("shard stream broken: %s", err.code().name,
                            extra={"shard_id": self.shard_id})
            finally:
                self._write = None
                if pump is not None:
                    pump.cancel()
            self.connected.clear()
            await asyncio.sleep(self.retry_s)


class ShardLinks:
    """The links of a gateway, one per shard, opened on first use."""

    def __init__(self, resolve: dict[str, str], template: str,
                 window_s: float = DEFAULT_WINDOW_S,
                 on_open: Callable[[str], None] | None = None,
                 connect: Connect = grpc.aio.insecure_channel) -> None:
        self.connect = connect
        self.resolve = resolve
        self.template = template
        self.window_s = window_s
        self.on_open = on_open  # told each shard id when its link opens (metrics)
        self.links: dict[str, ShardLink] = {}

    def for_table(self, table_id: str) -> ShardLink:
        shard_id = table_id.split(".", 1)[0]
        link = self.links.get(shard_id)
        if link is None:
            address = self.resolve.get(shard_id) or (
                self.template.format(shard=shard_id) if self.template else None)
            if address is None or "." not in table_id:
                raise not_found("table/unknown", f"no shard owns table {table_id}")
            link = self.links[shard_id] = ShardLink(shard_id, address, window_s=self.window_s,
                                                    connect=self.connect)
            if self.on_open is not None:
                self.on_open(shard_id)
            link.start()
        return link

    async def close(self) -> None:
        for link in self.links.values():
            await link.close()
