"""The gateway's side of the multiplexed gateway-shard streams.

One `ShardLink` per shard carries every session's items on one bidirectional stream, batched
into frames (no frame larger than the outbox's bound), and reconnects when the stream breaks:
each session then subscribes again from the last sequence number it delivered, so nothing is
lost or repeated.

The link is shared by every session of every table on the shard, so no session can break it
(docs/security.md):
- a session never awaits a write on the stream: its items go out from a write the link starts
  eagerly and nobody awaits (`_flush`), so a session that ends, is cancelled or fails in the
  middle cannot cancel the call (grpc-aio cancels the whole call when a task awaiting one of
  its writes is cancelled);
- any failure of the stream, a locally cancelled call included, means: reconnect with backoff
  (jittered, doubling to `MAX_RETRY_S`) and resubscribe every session;
- while it is down the gauge says so, the gateway logs it at WARNING, actions are refused
  in-band with `table/unavailable` at once (never queued to vanish), and after `NOTICE_S` every
  session of its tables is told in-band (`table/unavailable`, no action id; a session that had
  not joined yet ends with UNAVAILABLE).

`ShardLinks` routes only to the shards it is configured with (every shard that can exist: the
chart lists the StatefulSet's ordinals up to its maximum); any other table id is NOT_FOUND
without opening anything, and a link with no session for `idle_s` is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import grpc

from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.platform.eager import start_eagerly
from machiavelox.platform.errors import failed_precondition, invalid_argument, not_found
from machiavelox.platform.outbox import DEFAULT_WINDOW_S, Outbox, Write

from .session import Session

log = logging.getLogger(__name__)

Connect = Callable[[str], grpc.aio.Channel]
"""Opens a channel to a shard's address with the internal credentials (platform/tls.py: no
default, so that no forgotten wiring opens a plaintext channel)."""
OnState = Callable[[str, str], None]
"""Told (shard id, "up" | "down" | "closed") when a link's state changes (metrics)."""

NOTICE_S = 1.0  # down this long: its sessions are told (the bound: within 2 s)
VOUCH_S = 4.0  # a session's heartbeats are vouched for to the shard at most this often (its
# first-hand lease lasts 12 s: table/liveness.py)
MAX_RETRY_S = 5.0
MAX_TABLE_ID = 128
UNAVAILABLE = "table/unavailable"
_DOWN_MESSAGE = "the table's shard is unreachable; the gateway is reconnecting"


class ShardLink:
    def __init__(self, shard_id: str, address: str, connect: Connect, retry_s: float = 0.2,
                 window_s: float = DEFAULT_WINDOW_S,
                 on_state: OnState | None = None) -> None:
        self.shard_id = shard_id
        self.address = address
        self.connect = connect
        self.retry_s = retry_s
        self.on_state = on_state
        self.sessions: dict[tuple[str, str], Session] = {}
        self._outbox: Outbox[table_pb2.ConnectRequest] = Outbox(table_pb2.ConnectRequest,
                                                                window_s)
        self._write: Write[table_pb2.ConnectRequest] | None = None  # the stream's, when open
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self.down_since: float | None = None  # monotonic; None: up, or the first connection
        self._notice: asyncio.TimerHandle | None = None
        self.noticed = False  # this outage's sessions were told
        self.idle_since = time.monotonic()  # when its last session left

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        self._closing = True
        if self._notice is not None:
            self._notice.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.on_state is not None:
            self.on_state(self.shard_id, "closed")

    # -------------------------------------------------------------- sending
    def send_action(self, session: Session, request: gateway_pb2.ActionRequest,
                    traceparent: str) -> bool:
        """Forward an action of `session` (False: refused in-band, the link is down)."""
        if self._write is None:
            session.refuse(request.client_action_id, UNAVAILABLE, _DOWN_MESSAGE)
            return False
        self._outbox.hold()
        item = self._outbox.frame().items.add(table_id=session.table_id,
                                              player_id=session.player_id)
        if traceparent:
            item.traceparent = traceparent
        action = item.action
        action.client_action_id = request.client_action_id
        if request.HasField("classic_action"):  # (a classic table's: the shard checks which)
            action.classic_action.CopyFrom(request.classic_action)
        else:
            action.action.CopyFrom(request.action)
        self._outbox.account(item.ByteSize())
        self._flush()
        return True

    def vouch(self, session: Session) -> None:
        """The app's stream shows signs of life (a heartbeat): tell the shard first-hand, at
        most every VOUCH_S (issue 13: this outranks what the presence service says)."""
        now = time.monotonic()
        if self._write is None or not session.joined or now - session.vouched_at < VOUCH_S:
            return
        session.vouched_at = now
        self._item(session, liveness=table_pb2.LivenessItem(alive=True))
        self._flush()

    def resync(self, session: Session) -> None:
        """A fresh snapshot for `session` (then events continue after it)."""
        if self._write is None:
            session.refuse("", UNAVAILABLE, _DOWN_MESSAGE)
            return
        session.asked = True
        self._item(session, subscribe=table_pb2.Subscribe(from_seq=0))

    def _item(self, session: Session, **fields: Any) -> None:
        item = self._outbox.frame().items.add(table_id=session.table_id,
                                              player_id=session.player_id, **fields)
        self._outbox.account(item.ByteSize())

    def _flush(self) -> None:
        """Send what is pending now if the stream is quiet (else the pump sends it paced).
        The write is started eagerly and awaited by nobody: no session's task can cancel it."""
        write = self._write
        if write is None:
            self._outbox.release()
            return
        start_eagerly(self._outbox.flush(write), self._write_failed)

    def _write_failed(self, exc: BaseException) -> None:
        # the stream broke under the write: `_run` sees it too and reconnects
        log.debug("a write to the shard failed: %r", exc, extra={"shard_id": self.shard_id})

    def subscribe(self, session: Session, flush: bool = True) -> None:
        key = (session.table_id, session.player_id)
        old = self.sessions.get(key)
        if old is not None and old is not session:
            old.fail(failed_precondition("session/replaced", "a newer session took over"))
        self.sessions[key] = session
        session.link = self
        if self.noticed and not session.joined:  # down for a while: say so at once
            session.refuse("", UNAVAILABLE, _DOWN_MESSAGE)
            return
        session.asked = True
        self._item(session, subscribe=table_pb2.Subscribe(from_seq=session.last_seq))
        if flush and self._write is not None:
            self._flush()

    def unsubscribe(self, session: Session) -> None:
        key = (session.table_id, session.player_id)
        if self.sessions.get(key) is session:
            del self.sessions[key]
            if not self.sessions:
                self.idle_since = time.monotonic()
            if self._write is not None:
                self._item(session, unsubscribe=common_pb2.Empty())
                self._flush()

    # -------------------------------------------------------------- state
    def _state(self, up: bool, reason: str = "") -> None:
        loop = asyncio.get_running_loop()
        if up:
            was_down = self.down_since is not None
            self.down_since = None
            self.noticed = False
            if self._notice is not None:
                self._notice.cancel()
                self._notice = None
            if was_down:
                log.warning("shard link up again", extra={"shard_id": self.shard_id})
            if self.on_state is not None:
                self.on_state(self.shard_id, "up")
            return
        if self.down_since is None:
            self.down_since = time.monotonic()
            log.warning("shard link down (%s): reconnecting", reason,
                        extra={"shard_id": self.shard_id, "address": self.address})
            self._notice = loop.call_later(NOTICE_S, self._tell_sessions)
            if self.on_state is not None:
                self.on_state(self.shard_id, "down")

    def _tell_sessions(self) -> None:
        """Down for NOTICE_S: every session of the link's tables is told in-band."""
        self._notice = None
        self.noticed = True
        log.warning("shard link down for %.0f s: telling %d sessions", NOTICE_S,
                    len(self.sessions), extra={"shard_id": self.shard_id})
        for session in list(self.sessions.values()):
            session.refuse("", UNAVAILABLE, _DOWN_MESSAGE)

    # -------------------------------------------------------------- the stream
    async def _pump(self, write: Write[table_pb2.ConnectRequest]) -> None:
        with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
            await self._outbox.pump(write)

    async def _connection(self) -> None:
        """One connection, until its stream ends or breaks (which raises)."""
        pump: asyncio.Task[None] | None = None
        try:
            async with self.connect(self.address) as channel:
                call = table_pb2_grpc.TableAuthorityServiceStub(channel).Connect()
                await call.wait_for_connection()
                self._outbox.discard()  # what was pending is made again below
                self._write = write = call.write
                pump = asyncio.create_task(self._pump(write))
                self._state(True)
                for existing in list(self.sessions.values()):  # from what each delivered
                    self.subscribe(existing, flush=False)
                self._flush()
                async for frame in call:
                    arrived_ns, arrived_perf_ns = time.time_ns(), time.perf_counter_ns()
                    for item in frame.items:
                        target = self.sessions.get((item.table_id, item.player_id))
                        if target is not None:
                            target.deliver(item, arrived_ns, arrived_perf_ns)
        finally:
            self._write = None
            if pump is not None:
                pump.cancel()

    async def _run(self) -> None:
        delay = self.retry_s
        while not self._closing:
            started = time.monotonic()
            try:
                await self._connection()
                reason = "the shard ended the stream"
            except asyncio.CancelledError:
                if self._closing:
                    raise
                reason = "the call was cancelled"  # (not by us: reconnect all the same)
            except grpc.aio.AioRpcError as err:
                reason = err.code().name
            except Exception as err:  # a bug: never leave the shard unreachable for it
                log.exception("shard link failed", extra={"shard_id": self.shard_id})
                reason = type(err).__name__
            self._state(False, reason)
            if time.monotonic() - started > MAX_RETRY_S:
                delay = self.retry_s  # it had been up a while: retry soon
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))
            delay = min(delay * 2, MAX_RETRY_S)


class ShardLinks:
    """The links of a gateway, one per configured shard, opened on first use and closed when
    idle."""

    def __init__(self, resolve: dict[str, str], connect: Connect,
                 window_s: float = DEFAULT_WINDOW_S, on_state: OnState | None = None,
                 idle_s: float = 300.0) -> None:
        self.resolve = resolve
        self.window_s = window_s
        self.on_state = on_state
        self.connect = connect
        self.idle_s = idle_s
        self.links: dict[str, ShardLink] = {}
        self._janitor: asyncio.Task[None] | None = None

    def for_table(self, table_id: str) -> ShardLink:
        """The link of the shard that owns `table_id` (`<shard id>.<table>`), opened now if
        needed; NOT_FOUND for a shard that is not configured (nothing is opened)."""
        if len(table_id) > MAX_TABLE_ID:
            raise invalid_argument("table/bad-id", f"a table id has at most {MAX_TABLE_ID} "
                                   "characters")
        shard_id, dot, rest = table_id.partition(".")
        address = self.resolve.get(shard_id)
        if address is None or not dot or not rest:
            raise not_found("table/unknown", "no shard owns that table")
        link = self.links.get(shard_id)
        if link is None:
            link = self.links[shard_id] = ShardLink(shard_id, address, self.connect,
                                                    window_s=self.window_s,
                                                    on_state=self.on_state)
            link.start()
            if self._janitor is None:
                self._janitor = asyncio.create_task(self._close_idle())
        return link

    async def _close_idle(self) -> None:
        while True:
            await asyncio.sleep(max(0.05, min(self.idle_s / 4, 30.0)))
            now = time.monotonic()
            for shard_id, link in list(self.links.items()):
                if not link.sessions and now - link.idle_since >= self.idle_s:
                    del self.links[shard_id]
                    log.info("idle shard link closed", extra={"shard_id": shard_id})
                    await link.close()

    async def close(self) -> None:
        if self._janitor is not None:
            self._janitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._janitor
        for link in self.links.values():
            await link.close()
