"""The shard's journal: every table's new records written to the store before any answer they
produced leaves the shard ("acknowledged" means "durable"; docs/architecture.md).

Group commit. Tables add records as they apply inputs (`records.Recorder`); the journal writes
the records of every changed table in one frame (`JournalFrame`, one store row), one write at a
time: what comes while a write is in flight goes in the next one, so under load a write
carries the records of many steps of many tables. On a quiet shard the gateway's stream handler
writes its frame's records itself, from its own task (no hand-over to another task on the path
of an action), then sends the answers; records made elsewhere (timers, presence, results) are
written by a background task started on their first record.

Gating. Whatever a step put in a gateway's outbox, and the shard's ledger of answers that a
failed write would undo (`Watcher`s), is staged at the start of the write that covers the step
and released when it is stored. A failed write (the store down or timed out) releases nothing:
the watchers drop what it covered, the shard rebuilds the tables it touched from what is stored
and refuses the actions `table/journal`; the journal is then unhealthy (the shard refuses
actions at once, timers wait) until the write it gave up on is voided in the store (`void`:
it may have landed after all) and so the store answers again.

Checkpoints. A store keeps what the tables need and no more: every `checkpoint_s` (when the
journal has grown since the last), between two writes, the journal writes a checkpoint frame
holding the whole journal of every open table (a few KiB each) and the store deletes the older
frames: a closed table leaves the store, and a restarted shard reads at most one checkpoint
and what followed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol

from machiavelox._gen.v1 import journal_pb2
from machiavelox.platform.eager import start_eagerly

from .journal_store import JournalStore, JournalUnavailableError
from .records import Recorder
from .rulesets import Host

log = logging.getLogger(__name__)

CHECKPOINT_S = 60.0
RETRY_S = 0.5  # while unhealthy: how often the store is tried again


def _ignore(seconds: float) -> None:
    return


def _nothing() -> None:
    return


class Watcher(Protocol):
    """What waits for journal writes: a gated outbox (`GatewayLink`), the shard's ledger."""

    def stage(self, write: int) -> None: ...

    def committed(self, write: int) -> None: ...

    def drop_uncommitted(self) -> None: ...


Failed = Callable[[set[str]], None]
"""Told the tables a failed write touched (after the watchers dropped what it covered)."""


class Journal:
    def __init__(self, store: JournalStore, tables: Mapping[str, Host],
                 watchers: Callable[[], Iterable[Watcher]], on_failure: Failed,
                 on_stored: Callable[[set[str]], None], first_frame: int = 1,
                 checkpoint_s: float = CHECKPOINT_S,
                 retry_s: float = RETRY_S) -> None:
        self.store = store
        self._tables = tables
        self._watchers = watchers
        self._on_failure = on_failure
        self.checkpoint_s = checkpoint_s
        self.retry_s = retry_s
        self._next = first_frame  # the number of the next frame
        self._written = first_frame - 1  # every frame up to this one is stored
        self._dirty: dict[str, None] = {}  # tables with records not yet in a write
        self._writing = False
        self._kicked = False
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self.healthy = True
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_checkpoint = time.monotonic()
        self._since_checkpoint = 0  # frames written since the last checkpoint
        self.writes = 0
        self.failures = 0
        self.on_write: Callable[[float], None] = _ignore  # the seconds of each stored write
        self.on_failure: Callable[[], None] = _nothing  # each failed write
        self.on_stored = on_stored  # the tables of each stored write
        # (asyncio.get_running_loop() costs a getpid() syscall a call on 3.11: once, here)
        self._loop = asyncio.get_running_loop()

    # ------------------------------------------------------------------ recording
    def recorder(self, table_id: str) -> Recorder:
        """The recorder of a new (or restored) table: its records are written by this journal."""
        return Recorder(lambda: self._touched(table_id))

    def _touched(self, table_id: str) -> None:
        self._dirty[table_id] = None
        if not self._writing and not self._kicked:
            self._kicked = True
            self._loop.call_soon(self._kick)

    def _kick(self) -> None:
        self._kicked = False
        if self._dirty and not self._writing:
            self._spawn(self._write_all())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ writing
    async def durable(self) -> None:
        """Returns once what the tables have recorded so far is stored, and what waits for it
        released; or its write failed, and the shard has undone it (`on_failure`)."""
        target = self.write_now()
        if target is None or self._written >= target or not self.healthy:
            return
        waiter = self._loop.create_future()
        self._waiters.append((target, waiter))
        await waiter

    def write_now(self) -> int | None:
        """Start writing what the tables have recorded, now, if no write is in flight (else it
        goes in the next); the number of the write that covers it (None: nothing to write,
        or undone at once: the store is unavailable). What waits for it goes once it is
        stored: the caller need not wait (a gateway's stream handler goes on with the next
        frame, whose records join the next write)."""
        if not self.healthy:
            if self._dirty:  # (nothing can be stored now: undone at once)
                self._undo(set())
            else:
                self._settle()  # the refusals go
            return None
        if self._writing:
            return self._next if self._dirty else self._next - 1
        if not self._dirty:
            self._settle()
            return None
        # written from this turn (no hand-over), but not by the caller's task: if that is
        # cancelled (its gateway's stream ends), the write and what follows it still happen
        target = self._next
        self._writing = True
        start_eagerly(self._write_inline(), self._crashed)
        return target

    async def _write_inline(self) -> None:
        try:
            self._maybe_checkpoint()  # (between writes: none in flight)
            await self._write_one()
        finally:
            self._writing = False
        if self._dirty and self.healthy:
            self._spawn(self._write_all())
        else:
            self._settle()

    @staticmethod
    def _crashed(exc: BaseException) -> None:
        if not isinstance(exc, asyncio.CancelledError):
            log.error("journal write crashed", exc_info=exc)

    async def _write_all(self) -> None:
        if self._writing:
            return
        self._writing = True
        try:
            while self._dirty and self.healthy:
                self._maybe_checkpoint()
                await self._write_one()
        finally:
            self._writing = False
        self._settle()

    async def _write_one(self) -> None:
        number = self._next
        self._next += 1
        frame = journal_pb2.JournalFrame()
        ends: list[tuple[Recorder, int]] = []
        touched = set(self._dirty)
        for table_id in self._dirty:
            host = self._tables.get(table_id)
            if host is None:
                continue
            rec = host.journal
            end = len(rec.data)
            if end > rec.durable:
                frame.chunks.add(table_id=table_id, records=bytes(rec.data[rec.durable:end]))
                ends.append((rec, end))
        self._dirty.clear()
        for watcher in self._watchers():
            watcher.stage(number)
        started = time.perf_counter()
        try:
            await self.store.append(number, frame.SerializeToString())
        except Exception as err:  # (JournalUnavailableError; anything else is as bad)
            self.failures += 1
            self.on_failure()
            self.healthy = False
            log.error("journal write %d failed (%s): the tables it touched are rebuilt from "
                      "the store, actions are refused until it answers again", number, err)
            self._undo(touched)
            self._spawn(self._recover(number))
            return
        for rec, end in ends:
            rec.durable = max(rec.durable, end)
        self._written = number
        self.writes += 1
        self.on_write(time.perf_counter() - started)
        self.on_stored(touched)
        self._since_checkpoint += 1
        self._committed(number)

    def _committed(self, number: int) -> None:
        """Writes up to `number` are stored: what they cover may go."""
        for watcher in self._watchers():
            watcher.committed(number)
        if self._waiters:
            ready = [w for w in self._waiters if w[0] <= number]
            self._waiters = [w for w in self._waiters if w[0] > number]
            for _, waiter in ready:
                if not waiter.done():
                    waiter.set_result(None)

    def _settle(self) -> None:
        """Nothing is in flight: what no record waits for (refusals, snapshots of stored
        state) may go."""
        if not self._dirty and not self._writing:
            for watcher in self._watchers():
                watcher.stage(self._written)
            self._committed(self._written)

    def _undo(self, touched: set[str]) -> None:
        """What was not stored is undone: the watchers drop what it covered, the shard
        rebuilds the tables from what is stored (and refuses what they were told)."""
        for watcher in self._watchers():
            watcher.drop_uncommitted()
        touched |= set(self._dirty)
        self._dirty.clear()
        self._on_failure(touched)
        waiters, self._waiters = self._waiters, []
        for _, waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._settle()

    async def _recover(self, number: int) -> None:
        """Until the store answers: void the write given up on (it may have been stored
        after all), then take writes again."""
        while True:
            await asyncio.sleep(self.retry_s)
            try:
                await self.store.void(number)
            except JournalUnavailableError as err:
                log.warning("journal store still unavailable: %s", err)
                continue
            self.healthy = True
            log.warning("journal store answers again: actions are taken again")
            if self._dirty:
                self._spawn(self._write_all())
            return

    # ------------------------------------------------------------------ checkpoints
    def _maybe_checkpoint(self) -> None:
        if (self._since_checkpoint
                and time.monotonic() - self._last_checkpoint >= self.checkpoint_s):
            self.checkpoint()

    def checkpoint(self) -> None:
        """Start writing the whole stored journal of every open table as one frame; the store
        then drops the frames before it. Called between writes (none in flight: every frame
        numbered below it is stored, and its content is); the writes after it go on meanwhile."""
        number = self._next
        self._next += 1
        frame = journal_pb2.JournalFrame()
        for table_id, host in self._tables.items():
            rec = host.journal
            if not host.closed and rec.durable:
                frame.chunks.add(table_id=table_id, records=bytes(rec.data[:rec.durable]),
                                 full=True)
        self._last_checkpoint = time.monotonic()
        self._since_checkpoint = 0
        self._spawn(self._store_checkpoint(number, frame.SerializeToString(), len(frame.chunks)))

    async def _store_checkpoint(self, number: int, payload: bytes, tables: int) -> None:
        try:
            await self.store.checkpoint(number, payload)
        except JournalUnavailableError as err:  # (the frames it replaces are still there)
            log.warning("journal checkpoint %d failed (%s): tried again later", number, err)
            return
        log.info("journal checkpoint %d: %d tables, %d bytes", number, tables, len(payload))

    async def close(self) -> None:
        """Write what is recorded (bounded by the store's own timeouts), then stop."""
        if self.healthy and (self._dirty or self._writing):
            with contextlib.suppress(JournalUnavailableError):
                await self.durable()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.store.close()
