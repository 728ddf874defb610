"""The durable journal store of a table-authority shard: numbered frames of opaque bytes.

A shard writes its journal as frames (group commits, numbered by the shard) and now and then a
checkpoint frame, which holds everything needed from the frames before it: once a checkpoint is
stored, the older rows of that shard go (in the same transaction). A restarted shard `load`s
from its latest checkpoint on. What a frame holds is the shard's business (journal.proto); the
store keeps bytes, one row per frame in `table_journal`, keyed by (shard_id, frame_no).

Fencing: frame numbers are the shard's, never reused, so a number already taken means that
another process writes this shard's journal (a shard thought dead, still running): the write is
refused with `JournalFencedError`: the process that gets it is not the journal's writer.

A write that ends without an answer (timed out, connection lost) may or may not be stored, and
may still land later (bytes held in the network). The store remembers the frames whose outcome
it does not know (`_FrameWriter`), and the shard has two ways out: retry the same frame, same
bytes (finding the number taken by exactly those bytes is that earlier write's success, not a
second writer; other bytes are refused as fenced), or give the number up with `void`, which
stores the frame empty (no records) whether or not the write landed, so that a late copy of it
is refused and the numbers after it follow on.

Two backends behind one protocol:
- SQLite (embedded, the default): WAL, synchronous=NORMAL, every statement on one worker thread.
  A stored frame survives a crash of the shard process, not an OS crash or a power loss.
- PostgreSQL (deployed): a pool of two autocommit connections (appends are sequential; one more
  for a checkpoint or a load running alongside), synchronous_commit left as configured (on by
  default: a stored frame survives the loss of the shard and a power cut of the database host).
  An append is one prepared INSERT, one round trip; a checkpoint one statement (INSERT and
  DELETE in a CTE), so it is atomic without a transaction block.
Every operation gives up after about `timeout_s` with `JournalUnavailableError`; the next call
reconnects (PostgreSQL: a dropped or timed-out connection is closed and a new one opened).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import psycopg
from psycopg import errors as pg_errors

from machiavelox.platform.dburl import POSTGRES_PREFIX, SQLITE_PREFIX, sqlite_path
from machiavelox.platform.pg import PgConnection, PgPool

log = logging.getLogger(__name__)

T = TypeVar("T")
Outcome = Literal["written", "same", "other"]  # stored; taken by these bytes; by other bytes

UNSETTLED_MAX = 64  # frames of unknown outcome remembered (a shard retries the latest ones)
PG_POOL_SIZE = 2
APPLICATION_NAME = "machiavelox-table"  # in pg_stat_activity, unless the URL names one
MIGRATION_LOCK = 0x4D58544A  # "MXTJ": shards starting together create the table one at a time
FIRST = -(2**63)  # below every frame number: "from the start" when there is no checkpoint


class JournalUnavailableError(Exception):
    """The journal store cannot be written or read now (down, unreachable, timed out)."""


class JournalFencedError(JournalUnavailableError):
    """The frame number is already taken: another process writes this shard's journal."""


@dataclass(frozen=True)
class StoredFrame:
    frame_no: int
    checkpoint: bool
    payload: bytes


class JournalStore(Protocol):
    async def append(self, frame_no: int, payload: bytes) -> None:
        """Store one frame of this shard durably (as `durability` says) before returning.
        A frame_no already stored raises JournalFencedError."""
        ...

    async def checkpoint(self, frame_no: int, payload: bytes) -> None:
        """Store a checkpoint frame and, in the same transaction, delete this shard's rows
        numbered below it. May run alongside appends of higher frame numbers."""
        ...

    async def void(self, frame_no: int) -> None:
        """Frame `frame_no`, an append whose write ended without an answer, is made empty (a
        frame of no records): stored so if missing, so that a late copy of the lost write is
        refused, emptied if the write landed. JournalFencedError if the number holds bytes this
        store did not try to write there (another process's frame)."""
        ...

    async def load(self) -> list[StoredFrame]:
        """This shard's frames from its latest checkpoint on (all when there is none), in
        frame_no order."""
        ...

    @property
    def durability(self) -> str:
        """One line for logs and docs: the backend and what a stored frame survives."""
        ...

    async def close(self) -> None: ...


async def open_journal(url: str, shard_id: str, timeout_s: float = 2.0) -> JournalStore:
    """`sqlite:///path/file.sqlite3` or `postgresql://...`; the table is created if missing.
    Raises JournalUnavailableError if the store cannot be opened, ValueError for another URL."""
    if url.startswith(SQLITE_PREFIX) and len(url) > len(SQLITE_PREFIX):
        return await SqliteJournal.open(sqlite_path(url), shard_id, timeout_s)
    if url.startswith(POSTGRES_PREFIX):
        return await PostgresJournal.open(url, shard_id, timeout_s)
    raise ValueError(f"a journal URL is sqlite:///<path> or postgresql://..., not a "
                     f"{url.partition(':')[0]!r} URL")


# --- SQL: `?` placeholders, `%s` for PostgreSQL ------------------------------------------------

INSERT = ("INSERT INTO table_journal (shard_id, frame_no, checkpoint, payload) "
          "VALUES (?, ?, ?, ?)")
VOID = (f"{INSERT} ON CONFLICT (shard_id, frame_no) DO UPDATE SET payload = excluded.payload "
        "WHERE NOT table_journal.checkpoint AND table_journal.payload IN (excluded.payload, ?)")
DELETE_BELOW = "DELETE FROM table_journal WHERE shard_id = ? AND frame_no < ?"
PAYLOAD_OF = "SELECT payload FROM table_journal WHERE shard_id = ? AND frame_no = ?"
LOAD = ("SELECT frame_no, checkpoint, payload FROM table_journal WHERE shard_id = ? "
        "AND frame_no >= coalesce((SELECT max(frame_no) FROM table_journal "
        "WHERE shard_id = ? AND checkpoint), ?) ORDER BY frame_no")


def _pg(statement: str) -> str:
    return statement.replace("?", "%s")


PG_INSERT = _pg(INSERT)
PG_CHECKPOINT = _pg(f"WITH stored AS ({INSERT}) {DELETE_BELOW}")  # one statement: atomic
PG_VOID = _pg(VOID)
PG_PAYLOAD_OF = _pg(PAYLOAD_OF)
PG_LOAD = _pg(LOAD)


def _outcome(row: Sequence[Any] | None, payload: bytes) -> Outcome:
    """After a unique violation: what holds the frame number now, from its row (`PAYLOAD_OF`;
    None: the row is gone, a checkpoint above it was stored since)."""
    return "same" if row is not None and bytes(row[0]) == payload else "other"


class _FrameWriter(abc.ABC):
    """The frames of this store whose writes ended without an answer, and the shared half of
    `append`, `checkpoint` and `void`: what a taken frame number means."""

    def __init__(self, shard_id: str) -> None:
        self.shard_id = shard_id
        self._unsettled: dict[int, bytes] = {}

    def _begin(self, frame_no: int, payload: bytes) -> bool:
        """Note a write attempt; True when an earlier one of the same bytes ended unanswered."""
        earlier = self._unsettled.pop(frame_no, None) == payload
        self._unsettled[frame_no] = payload  # unsettled until `_end` (kept if this one fails)
        if len(self._unsettled) > UNSETTLED_MAX:
            del self._unsettled[next(iter(self._unsettled))]
        return earlier

    def _end(self, frame_no: int, earlier: bool, outcome: Outcome) -> None:
        self._unsettled.pop(frame_no, None)
        if outcome == "written":
            return
        if outcome == "same" and earlier:
            log.info("journal frame %d of shard %s was stored by an attempt whose answer was "
                     "lost", frame_no, self.shard_id)
            return
        raise JournalFencedError(f"frame {frame_no} of shard {self.shard_id} is already "
                                 "stored: another process writes this shard's journal")

    async def append(self, frame_no: int, payload: bytes) -> None:
        await self._put(frame_no, False, payload)

    async def checkpoint(self, frame_no: int, payload: bytes) -> None:
        await self._put(frame_no, True, payload)

    async def void(self, frame_no: int) -> None:
        attempted = self._unsettled.get(frame_no, b"")
        self._end(frame_no, True, await self._void(frame_no, attempted))

    @abc.abstractmethod
    async def _put(self, frame_no: int, checkpoint: bool, payload: bytes) -> None:
        """Write the frame, between `_begin` and `_end` (the backend's part)."""

    @abc.abstractmethod
    async def _void(self, frame_no: int, attempted: bytes) -> Outcome:
        """Store frame_no empty unless it holds other bytes than `attempted` or a checkpoint:
        "written" when it is empty now, else what holds it (a checkpoint of `attempted`
        landed: "same", left as it is)."""


def _frames(rows: list[tuple[int, int | bool, bytes]]) -> list[StoredFrame]:
    return [StoredFrame(int(no), bool(cp), bytes(payload)) for no, cp, payload in rows]


# --- SQLite ------------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS table_journal (
    shard_id TEXT NOT NULL,
    frame_no INTEGER NOT NULL,
    checkpoint BOOLEAN NOT NULL,
    payload BLOB NOT NULL,
    PRIMARY KEY (shard_id, frame_no)
);
"""


def _sqlite_connect(path: Path, timeout_s: float) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    # timeout: how long a statement waits for another connection's lock on the file
    conn = sqlite3.connect(path, isolation_level=None, timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        while True:  # switching to WAL takes the file's lock without waiting for it: retry
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.02)
        conn.execute("PRAGMA synchronous = NORMAL")  # a commit is in the WAL, not yet fsynced
        conn.executescript(SQLITE_SCHEMA)
    except BaseException:
        conn.close()
        raise
    return conn


def _sqlite_insert(conn: sqlite3.Connection, shard_id: str, frame_no: int, checkpoint: bool,
                   payload: bytes) -> Outcome:
    try:
        if not checkpoint:
            conn.execute(INSERT, (shard_id, frame_no, False, payload))
            return "written"
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(INSERT, (shard_id, frame_no, True, payload))
            conn.execute(DELETE_BELOW, (shard_id, frame_no))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return "written"
    except sqlite3.IntegrityError:
        row = conn.execute(PAYLOAD_OF, (shard_id, frame_no)).fetchone()
        return _outcome(row, payload)


def _sqlite_void(conn: sqlite3.Connection, shard_id: str, frame_no: int,
                 attempted: bytes) -> Outcome:
    if conn.execute(VOID, (shard_id, frame_no, False, b"", attempted)).rowcount == 1:
        return "written"
    row = conn.execute(PAYLOAD_OF, (shard_id, frame_no)).fetchone()
    return _outcome(row, attempted)


class SqliteJournal(_FrameWriter):
    """stdlib sqlite3 on one worker thread: every statement runs there, one at a time."""

    durability = ("SQLite WAL, synchronous=NORMAL: a stored frame survives a crash of the "
                  "shard process, not an OS crash or a power loss")

    def __init__(self, shard_id: str, conn: sqlite3.Connection, worker: ThreadPoolExecutor,
                 timeout_s: float) -> None:
        super().__init__(shard_id)
        self._conn = conn
        self._worker = worker
        self._timeout_s = timeout_s
        self._closed = False
        self._loop = asyncio.get_running_loop()  # (a getpid() a call on 3.11: once, here)

    @classmethod
    async def open(cls, path: Path, shard_id: str, timeout_s: float) -> SqliteJournal:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="journal-sqlite")
        try:
            conn = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(
                worker, _sqlite_connect, path, timeout_s), timeout_s)
        except (sqlite3.Error, OSError, TimeoutError) as exc:
            worker.shutdown(wait=False)
            raise JournalUnavailableError(f"SQLite: cannot open {path}: {exc!r}") from exc
        return cls(shard_id, conn, worker, timeout_s)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await asyncio.wait_for(self._loop.run_in_executor(
                self._worker, work, self._conn), self._timeout_s)
        except TimeoutError:
            self._conn.interrupt()  # thread-safe; the worker's statement fails if still running
            raise JournalUnavailableError(
                f"SQLite: no answer within {self._timeout_s:g} s") from None
        except sqlite3.Error as exc:
            raise JournalUnavailableError(f"SQLite: {exc}") from exc

    async def _put(self, frame_no: int, checkpoint: bool, payload: bytes) -> None:
        earlier = self._begin(frame_no, payload)
        outcome = await self._run(
            lambda conn: _sqlite_insert(conn, self.shard_id, frame_no, checkpoint, payload))
        self._end(frame_no, earlier, outcome)

    async def _void(self, frame_no: int, attempted: bytes) -> Outcome:
        return await self._run(
            lambda conn: _sqlite_void(conn, self.shard_id, frame_no, attempted))

    async def load(self) -> list[StoredFrame]:
        params = (self.shard_id, self.shard_id, FIRST)
        return await self._run(lambda conn: _frames(conn.execute(LOAD, params).fetchall()))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(JournalUnavailableError):
            await self._run(lambda conn: conn.close())
        self._worker.shutdown(wait=False)  # a worker stuck in a statement is not waited for


# --- PostgreSQL --------------------------------------------------------------------------------

PG_SCHEMA = """CREATE TABLE IF NOT EXISTS table_journal (
    shard_id TEXT COLLATE "C" NOT NULL,
    frame_no BIGINT NOT NULL,
    checkpoint BOOLEAN NOT NULL,
    payload BYTEA NOT NULL,
    PRIMARY KEY (shard_id, frame_no))"""


def _pg_durability(synchronous_commit: str) -> str:
    """off: a commit returns before its WAL is flushed; every other value flushes it first."""
    if synchronous_commit == "off":
        survives = "a crash of the shard, not one of the database server"
    else:
        survives = "a crash of the shard and a power cut of the database host"
    return f"PostgreSQL, synchronous_commit={synchronous_commit}: a frame survives {survives}"


class PostgresJournal(_FrameWriter):
    """psycopg 3 async on the shared pool (platform/pg.py), every operation bounded in time."""

    def __init__(self, shard_id: str, pool: PgPool, durability: str) -> None:
        super().__init__(shard_id)
        self._pool = pool
        self._durability = durability

    @property
    def durability(self) -> str:
        return self._durability

    @classmethod
    async def open(cls, url: str, shard_id: str, timeout_s: float) -> PostgresJournal:
        try:
            pool = PgPool(url, PG_POOL_SIZE, APPLICATION_NAME, error=JournalUnavailableError,
                          timeout_s=timeout_s)
        except psycopg.Error:  # its message may quote the URL, password and all
            raise JournalUnavailableError("PostgreSQL: the journal URL does not parse") from None
        try:
            synchronous_commit = await cls._prepare(pool)
        except BaseException as exc:
            await pool.close()
            if isinstance(exc, psycopg.Error):
                raise JournalUnavailableError(f"PostgreSQL: {exc}") from exc
            raise
        return cls(shard_id, pool, _pg_durability(synchronous_commit))

    @staticmethod
    async def _prepare(pool: PgPool) -> str:
        """Create the table if missing; the server's synchronous_commit."""
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT to_regclass('table_journal') IS NOT NULL, "
                                     "current_setting('synchronous_commit')")
            row = await cur.fetchone()
            assert row is not None
            if not row[0]:  # the lock only then: a shard restarting need not wait on others
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                    await conn.execute(PG_SCHEMA)
        return str(row[1])

    async def _run(self, work: Callable[[PgConnection], Awaitable[T]]) -> T:
        try:
            return await self._pool.run(work)
        except psycopg.Error as exc:  # not a connection failure (the pool maps those)
            raise JournalUnavailableError(f"PostgreSQL: {exc}") from exc

    async def _put(self, frame_no: int, checkpoint: bool, payload: bytes) -> None:
        await self._run(lambda conn: self._write(conn, frame_no, checkpoint, payload))

    async def _write(self, conn: PgConnection, frame_no: int, checkpoint: bool,
                     payload: bytes) -> None:
        """One attempt (the pool repeats it on another connection if this one was dead)."""
        earlier = self._begin(frame_no, payload)
        outcome: Outcome = "written"
        try:
            if checkpoint:
                await conn.execute(PG_CHECKPOINT, (self.shard_id, frame_no, True, payload,
                                                   self.shard_id, frame_no), prepare=True)
            else:
                await conn.execute(PG_INSERT, (self.shard_id, frame_no, False, payload),
                                   prepare=True)
        except pg_errors.UniqueViolation:
            cur = await conn.execute(PG_PAYLOAD_OF, (self.shard_id, frame_no))
            row = await cur.fetchone()
            outcome = _outcome(row, payload)
        self._end(frame_no, earlier, outcome)

    async def _void(self, frame_no: int, attempted: bytes) -> Outcome:
        async def work(conn: PgConnection) -> Outcome:
            cur = await conn.execute(PG_VOID, (self.shard_id, frame_no, False, b"", attempted))
            if cur.rowcount == 1:
                return "written"
            cur = await conn.execute(PG_PAYLOAD_OF, (self.shard_id, frame_no))
            row = await cur.fetchone()
            return _outcome(row, attempted)
        return await self._run(work)

    async def load(self) -> list[StoredFrame]:
        async def work(conn: PgConnection) -> list[StoredFrame]:
            cur = conn.cursor(binary=True)  # bytea as is, not hex
            await cur.execute(PG_LOAD, (self.shard_id, self.shard_id, FIRST))
            return _frames(await cur.fetchall())
        return await self._run(work)

    async def close(self) -> None:
        await self._pool.close()
