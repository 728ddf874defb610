"""The results store: an append-only log of smazzata results and the aggregates read from it.

The same semantics on both backends (SQLite for one process, PostgreSQL for replicas):

- `append` gives a new result the next offset (1, 2, 3, ... without holes) and, in the same
  transaction, adds its points to the leaderboard (competitive results only, M13.1) and to the
  standings of its table (long matches only, M13.2).
- It is idempotent on (table_id, smazzata): a report for a stored key returns the original offset
  and changes nothing. The first report wins; if a later one differs (compared as the bytes the
  codec produced, deterministically), `Appended.differs` says so, for the caller to log. Refusing
  it instead would make a shard that retries every failure retry forever.
- Offsets become visible in order: once a reader has seen offset n, no record below n can appear
  later. That is what lets a subscriber resume from "last processed + 1" and lose nothing. SQLite
  gets it from its single writer; PostgreSQL from every append first locking the one row of
  `results_head`, so appends commit one at a time, in offset order. (A sequence would hand out
  offsets at insert time and let offset 7 commit, and be streamed, before offset 6.)
- `follow` tails the log: it reads batches from an offset, then sleeps until the log may have
  grown (a local append or, on PostgreSQL, a NOTIFY from any replica) or `poll_s` passes.

The store knows nothing of protobuf: a result's `payload` is the report as the codec encoded it,
stored as-is and streamed back as-is, so fields added to the contract later survive the trip.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psycopg
from psycopg import sql

from machiavelox.platform.dburl import SQLITE_PREFIX, sqlite_path
from machiavelox.platform.pg import PgConnection, PgPool

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_BATCH = 256


@dataclass(frozen=True)
class Result:
    """One smazzata's result as the store needs it; `payload` is the whole report, encoded."""

    table_id: str
    smazzata: int
    long_match: bool
    competitive: bool
    player_ids: tuple[str, str, str]
    scores: tuple[int, int, int]
    payload: bytes


@dataclass(frozen=True)
class StoredResult:
    offset: int
    stored_at_ms: int
    payload: bytes


@dataclass(frozen=True)
class Appended:
    offset: int
    created: bool  # False: the key was already stored (a retried report)
    differs: bool = False  # already stored, with a different result: the first one was kept


@dataclass(frozen=True)
class LeaderboardRow:
    player_id: str
    points: int
    played: int


@dataclass(frozen=True)
class Standings:
    player_ids: tuple[str, str, str]
    totals: tuple[int, int, int]
    smazzate: int


class StoreUnavailableError(Exception):
    """The database cannot be reached or used right now; the caller may retry."""


class ResultStore(Protocol):
    async def append(self, result: Result) -> Appended: ...

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]: ...

    def follow(self, from_offset: int, until: asyncio.Event) -> AsyncIterator[StoredResult]:
        """Every record from `from_offset` on, then new ones as they are stored, until `until`."""
        ...

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]: ...

    async def standings(self, table_id: str) -> Standings | None:
        """The totals of the long match at `table_id`; None when there is none."""
        ...

    async def close(self) -> None: ...


async def open_store(url: str, poll_s: float) -> ResultStore:
    """The store a (checked) database URL names, schema created if missing."""
    try:
        if url.startswith(SQLITE_PREFIX):
            return await SqliteStore.open(sqlite_path(url), poll_s)
        return await PostgresStore.open(url, poll_s)
    except (psycopg.Error, sqlite3.Error, OSError) as exc:
        raise StoreUnavailableError(f"cannot open the results store: {exc}") from exc


# --- following the log, shared by both backends --------------------------------------------


class Bell:
    """Rung whenever the log may have grown; followers sleep on it between reads."""

    def __init__(self) -> None:
        self.rings = 0
        self._event = asyncio.Event()

    def ring(self) -> None:
        self.rings += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, seen: int, timeout_s: float, until: asyncio.Event) -> None:
        """Return once rung after `seen`, when `until` is set, or after `timeout_s`."""
        if self.rings != seen or until.is_set():
            return
        waiters = {asyncio.ensure_future(self._event.wait()), asyncio.ensure_future(until.wait())}
        try:
            await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()


async def tail(read: Callable[[int, int], Awaitable[list[StoredResult]]], bell: Bell,
               from_offset: int, until: asyncio.Event,
               poll_s: float) -> AsyncIterator[StoredResult]:
    next_offset = max(from_offset, 1)
    while not until.is_set():
        seen = bell.rings  # before reading: an append after the read makes `wait` return at once
        records = await read(next_offset, READ_BATCH)
        for record in records:
            yield record
            next_offset = record.offset + 1
        if len(records) < READ_BATCH:
            await bell.wait(seen, poll_s, until)


def _existing(row: Sequence[Any], payload: bytes) -> Appended:
    return Appended(int(row[0]), created=False, differs=bytes(row[1]) != payload)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- SQL: written once with `?` placeholders, `%s` for PostgreSQL ---------------------------

LOCK_HEAD = "SELECT last_offset FROM results_head WHERE id = 1"
SELECT_KEY = "SELECT log_offset, payload FROM results WHERE table_id = ? AND smazzata = ?"
INSERT_RESULT = (
    "INSERT INTO results (log_offset, table_id, smazzata, long_match, competitive, player1, "
    "player2, player3, score1, score2, score3, stored_at_ms, payload) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
SET_HEAD = "UPDATE results_head SET last_offset = ? WHERE id = 1"
ADD_POINTS = (
    "INSERT INTO leaderboard (player_id, points, played) VALUES (?, ?, 1) "
    "ON CONFLICT (player_id) DO UPDATE SET points = leaderboard.points + excluded.points, "
    "played = leaderboard.played + 1")
ADD_STANDINGS = (
    "INSERT INTO standings (table_id, player1, player2, player3, total1, total2, total3, "
    "smazzate) VALUES (?, ?, ?, ?, ?, ?, ?, 1) "
    "ON CONFLICT (table_id) DO UPDATE SET total1 = standings.total1 + excluded.total1, "
    "total2 = standings.total2 + excluded.total2, total3 = standings.total3 + excluded.total3, "
    "smazzate = standings.smazzate + 1")
READ_FROM = ("SELECT log_offset, stored_at_ms, payload FROM results WHERE log_offset >= ? "
             "ORDER BY log_offset LIMIT ?")
TOP = ("SELECT player_id, points, played FROM leaderboard "
       "ORDER BY points DESC, played ASC, player_id ASC LIMIT ?")
STANDINGS = ("SELECT player1, player2, player3, total1, total2, total3, smazzate "
             "FROM standings WHERE table_id = ?")


def _pg(statement: str) -> str:
    return statement.replace("?", "%s")


def _insert_params(offset: int, result: Result, stored_at_ms: int) -> tuple[Any, ...]:
    return (offset, result.table_id, result.smazzata, result.long_match, result.competitive,
            *result.player_ids, *result.scores, stored_at_ms, result.payload)


def _aggregate_statements(result: Result) -> list[tuple[str, tuple[Any, ...]]]:
    out: list[tuple[str, tuple[Any, ...]]] = []
    if result.competitive:
        out += [(ADD_POINTS, (player, score))
                for player, score in zip(result.player_ids, result.scores, strict=True)]
    if result.long_match:
        out.append((ADD_STANDINGS, (result.table_id, *result.player_ids, *result.scores)))
    return out


def _leaderboard_rows(rows: Sequence[Sequence[Any]]) -> list[LeaderboardRow]:
    return [LeaderboardRow(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def _standings(row: Sequence[Any] | None) -> Standings | None:
    if row is None:
        return None
    return Standings(player_ids=(str(row[0]), str(row[1]), str(row[2])),
                     totals=(int(row[3]), int(row[4]), int(row[5])), smazzate=int(row[6]))


def _stored(rows: Sequence[Sequence[Any]]) -> list[StoredResult]:
    return [StoredResult(int(r[0]), int(r[1]), bytes(r[2])) for r in rows]


# --- SQLite -----------------------------------------------------------------------------------

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS results_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_offset INTEGER NOT NULL
);
INSERT INTO results_head (id, last_offset) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS results (
    log_offset INTEGER PRIMARY KEY,
    table_id TEXT NOT NULL,
    smazzata INTEGER NOT NULL,
    long_match INTEGER NOT NULL,
    competitive INTEGER NOT NULL,
    player1 TEXT NOT NULL, player2 TEXT NOT NULL, player3 TEXT NOT NULL,
    score1 INTEGER NOT NULL, score2 INTEGER NOT NULL, score3 INTEGER NOT NULL,
    stored_at_ms INTEGER NOT NULL,
    payload BLOB NOT NULL,
    UNIQUE (table_id, smazzata)
);
CREATE TABLE IF NOT EXISTS leaderboard (
    player_id TEXT PRIMARY KEY,
    points INTEGER NOT NULL,
    played INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS leaderboard_rank ON leaderboard (points DESC, played, player_id);
CREATE TABLE IF NOT EXISTS standings (
    table_id TEXT PRIMARY KEY,
    player1 TEXT NOT NULL, player2 TEXT NOT NULL, player3 TEXT NOT NULL,
    total1 INTEGER NOT NULL, total2 INTEGER NOT NULL, total3 INTEGER NOT NULL,
    smazzate INTEGER NOT NULL
);
"""


def _sqlite_connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # an acknowledged report survives a power cut
    conn.executescript(SQLITE_SCHEMA)
    return conn


def _sqlite_append(conn: sqlite3.Connection, result: Result) -> Appended:
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(SELECT_KEY, (result.table_id, result.smazzata)).fetchone()
        if row is not None:
            conn.execute("ROLLBACK")
            return _existing(row, result.payload)
        offset = int(conn.execute(LOCK_HEAD).fetchone()[0]) + 1
        conn.execute(INSERT_RESULT, _insert_params(offset, result, _now_ms()))
        conn.execute(SET_HEAD, (offset,))
        for statement, params in _aggregate_statements(result):
            conn.execute(statement, params)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return Appended(offset, created=True)


class SqliteStore:
    """stdlib sqlite3 on one worker thread: every statement runs there, one at a time.

    One process only: a second process on the same file would be consistent (SQLite locks) but
    its followers would learn of new records only by polling.
    """

    def __init__(self, conn: sqlite3.Connection, worker: ThreadPoolExecutor,
                 poll_s: float) -> None:
        self._conn = conn
        self._worker = worker
        self._poll_s = poll_s
        self._bell = Bell()

    @classmethod
    async def open(cls, path: Path, poll_s: float) -> SqliteStore:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scoring-sqlite")
        try:
            conn = await asyncio.get_running_loop().run_in_executor(worker, _sqlite_connect, path)
        except BaseException:
            worker.shutdown()
            raise
        log.info("results store open on SQLite")
        return cls(conn, worker, poll_s)

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._worker, work, self._conn)
        except sqlite3.OperationalError as exc:
            raise StoreUnavailableError(f"SQLite: {exc}") from exc

    async def append(self, result: Result) -> Appended:
        appended = await self._run(lambda conn: _sqlite_append(conn, result))
        if appended.created:
            self._bell.ring()
        return appended

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]:
        return await self._run(
            lambda conn: _stored(conn.execute(READ_FROM, (from_offset, limit)).fetchall()))

    def follow(self, from_offset: int, until: asyncio.Event) -> AsyncIterator[StoredResult]:
        return tail(self.read, self._bell, from_offset, until, self._poll_s)

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]:
        return await self._run(
            lambda conn: _leaderboard_rows(conn.execute(TOP, (limit,)).fetchall()))

    async def standings(self, table_id: str) -> Standings | None:
        return await self._run(
            lambda conn: _standings(conn.execute(STANDINGS, (table_id,)).fetchone()))

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._worker, self._conn.close)
        self._worker.shutdown()


# --- PostgreSQL -------------------------------------------------------------------------------

PG_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS results_head (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        last_offset BIGINT NOT NULL)""",
    "INSERT INTO results_head (id, last_offset) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    """CREATE TABLE IF NOT EXISTS results (
        log_offset BIGINT PRIMARY KEY,
        table_id TEXT COLLATE "C" NOT NULL,
        smazzata INTEGER NOT NULL,
        long_match BOOLEAN NOT NULL,
        competitive BOOLEAN NOT NULL,
        player1 TEXT NOT NULL, player2 TEXT NOT NULL, player3 TEXT NOT NULL,
        score1 INTEGER NOT NULL, score2 INTEGER NOT NULL, score3 INTEGER NOT NULL,
        stored_at_ms BIGINT NOT NULL,
        payload BYTEA NOT NULL,
        UNIQUE (table_id, smazzata))""",
    """CREATE TABLE IF NOT EXISTS leaderboard (
        player_id TEXT COLLATE "C" PRIMARY KEY,
        points BIGINT NOT NULL,
        played INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS leaderboard_rank ON leaderboard (points DESC, played, player_id)",
    """CREATE TABLE IF NOT EXISTS standings (
        table_id TEXT COLLATE "C" PRIMARY KEY,
        player1 TEXT NOT NULL, player2 TEXT NOT NULL, player3 TEXT NOT NULL,
        total1 BIGINT NOT NULL, total2 BIGINT NOT NULL, total3 BIGINT NOT NULL,
        smazzate INTEGER NOT NULL)""",
]
MIGRATION_LOCK = 0x4D585343  # "MXSC": replicas starting together create the schema one at a time
POOL_SIZE = 4


class PostgresStore:
    """psycopg 3 async on a small pool; NOTIFY on commit wakes the followers of every replica.

    The channel is per schema (`machiavelox_results:<schema>`), so deployments sharing a
    database do not wake each other; a notification is only a hint to re-read, never trusted
    for content, and `poll_s` bounds the delay if one is lost (e.g. while reconnecting).
    """

    def __init__(self, poll_s: float, pool: PgPool, channel: str, listener: PgConnection) -> None:
        self._poll_s = poll_s
        self._pool = pool
        self._channel = channel
        self._bell = Bell()
        self._listening = asyncio.create_task(self._listen(listener), name="scoring-listen")

    @classmethod
    async def open(cls, url: str, poll_s: float) -> PostgresStore:
        pool = PgPool(url, POOL_SIZE, "machiavelox-scoring", error=StoreUnavailableError)
        async with pool.connection() as conn:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                for statement in PG_SCHEMA:
                    await conn.execute(statement)
            cur = await conn.execute("SELECT current_schema()")
            row = await cur.fetchone()
        if row is None or row[0] is None:
            raise StoreUnavailableError("PostgreSQL: no schema on the search_path")
        channel = f"machiavelox_results:{row[0]}"
        listener = await cls._subscribe(pool, channel)
        log.info("results store open on PostgreSQL (schema %s)", row[0])
        return cls(poll_s, pool, channel, listener)

    @staticmethod
    async def _subscribe(pool: PgPool, channel: str) -> PgConnection:
        conn = await pool.connect()
        try:
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        except BaseException:
            await conn.close()
            raise
        return conn

    async def _listen(self, conn: PgConnection) -> None:
        backoff_s = 0.1
        while True:
            try:
                async for _ in conn.notifies():
                    self._bell.ring()
            except psycopg.Error as exc:
                log.warning("results listener lost PostgreSQL, reconnecting: %s", exc)
            finally:
                with contextlib.suppress(Exception):
                    await conn.close()
            while True:
                await asyncio.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, 5.0)
                try:
                    conn = await self._subscribe(self._pool, self._channel)
                except (psycopg.Error, StoreUnavailableError):
                    continue
                backoff_s = 0.1
                self._bell.ring()  # whatever was stored while nobody listened
                break

    async def append(self, result: Result) -> Appended:
        appended = await self._pool.run(lambda conn: self._append(conn, result))
        if appended.created:
            self._bell.ring()  # local followers need not wait for the notification's round trip
        return appended

    async def _append(self, conn: PgConnection, result: Result) -> Appended:
        async with conn.transaction():
            head = await (await conn.execute(LOCK_HEAD + " FOR UPDATE")).fetchone()
            assert head is not None
            cur = await conn.execute(_pg(SELECT_KEY), (result.table_id, result.smazzata))
            row = await cur.fetchone()
            if row is not None:
                return _existing(row, result.payload)
            offset = int(head[0]) + 1
            await conn.execute(_pg(INSERT_RESULT), _insert_params(offset, result, _now_ms()))
            await conn.execute(_pg(SET_HEAD), (offset,))
            for statement, params in _aggregate_statements(result):
                await conn.execute(_pg(statement), params)
            await conn.execute("SELECT pg_notify(%s, %s)", (self._channel, str(offset)))
        return Appended(offset, created=True)

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]:
        async def work(conn: PgConnection) -> list[StoredResult]:
            cur = await conn.execute(_pg(READ_FROM), (from_offset, limit))
            return _stored(await cur.fetchall())
        return await self._pool.run(work)

    def follow(self, from_offset: int, until: asyncio.Event) -> AsyncIterator[StoredResult]:
        return tail(self.read, self._bell, from_offset, until, self._poll_s)

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]:
        async def work(conn: PgConnection) -> list[LeaderboardRow]:
            cur = await conn.execute(_pg(TOP), (limit,))
            return _leaderboard_rows(await cur.fetchall())
        return await self._pool.run(work)

    async def standings(self, table_id: str) -> Standings | None:
        async def work(conn: PgConnection) -> Standings | None:
            cur = await conn.execute(_pg(STANDINGS), (table_id,))
            return _standings(await cur.fetchone())
        return await self._pool.run(work)

    async def close(self) -> None:
        self._listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._listening
        await self._pool.close()
