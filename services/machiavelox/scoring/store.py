"""The results store: an append-only log of smazzata results (and of classic Machiavelli
reports: `store_classic.py`) and the aggregates read from it.

The same semantics on both backends (SQLite for one process, `store_sqlite.py`; PostgreSQL for
replicas, `store_pg.py`); this module holds the interface and what they share:

- `append` gives a new result the next offset (1, 2, 3, ... without holes) and, in the same
  transaction, adds its points to the leaderboard (competitive results only, M13.1) and to the
  standings of its table (long matches only, M13.2); a ranked classic session's end rates its
  players in the classic leaderboard (`classic_ratings.py`).
- It is idempotent on (table_id, smazzata), a classic report on (table_id, report): a report
  for a stored key returns the original offset and changes nothing. The first report wins; if
  a later one differs (compared as the bytes the codec produced, deterministically),
  `Appended.differs` says so, for the caller to log. Refusing it instead would make a shard
  that retries every failure retry forever.
- Offsets become visible in order: once a reader has seen offset n, no record below n can appear
  later. That is what lets a subscriber resume from "last processed + 1" and lose nothing. SQLite
  gets it from its single writer; PostgreSQL from every append first locking the one row of
  `results_head` (the append head), so appends commit one at a time, in offset order. (A
  sequence would hand out offsets at insert time and let offset 7 commit, and be streamed,
  before offset 6.)
- `follow` tails the log: it reads batches from an offset, then sleeps until the log may have
  grown (a local append or, on PostgreSQL, a NOTIFY from any replica) or `poll_s` passes.

The store knows nothing of protobuf: a result's `payload` is the report as the codec encoded it,
stored as-is and streamed back as-is, so fields added to the contract later survive the trip.
"""

from __future__ import annotations

import abc
import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg

from machiavelox.platform.dburl import SQLITE_PREFIX, sqlite_path

from .store_classic import (
    READ_LOG,
    SELECT_CLASSIC_KEY,
    ClassicReport,
    ClassicStandings,
    classic_statements,
)

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
    rating: float = 0.0  # the classic leaderboard's (its ordinal; `points` 0 there)


@dataclass(frozen=True)
class Standings:
    player_ids: tuple[str, str, str]
    totals: tuple[int, int, int]
    smazzate: int


class StoreUnavailableError(Exception):
    """The database cannot be reached or used right now; the caller may retry."""


Report = Result | ClassicReport  # what `append` stores


class ResultStore(Protocol):
    async def append(self, result: Report) -> Appended: ...

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]: ...

    def follow(self, from_offset: int, until: asyncio.Event) -> AsyncIterator[StoredResult]:
        """Every record from `from_offset` on, then new ones as they are stored, until `until`."""
        ...

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]: ...

    async def classic_leaderboard(self, limit: int) -> list[LeaderboardRow]:
        """The ranked classic leaderboard, best rating first (`classic_ratings.py`)."""
        ...

    async def standings(self, table_id: str) -> Standings | None:
        """The totals of the long match at `table_id`; None when there is none."""
        ...

    async def classic_standings(self, table_id: str) -> ClassicStandings | None:
        """The classic session at `table_id`, best first (C11); None when there is none."""
        ...

    async def close(self) -> None: ...


async def open_store(url: str, poll_s: float) -> ResultStore:
    """The store a (checked) database URL names, schema created if missing."""
    # (imported here: the backends import this module)
    from .store_pg import PostgresStore
    from .store_sqlite import SqliteStore

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


class LogStore(abc.ABC):
    """The shared half of a backend: a local append rings the bell its followers sleep on."""

    def __init__(self, poll_s: float) -> None:
        self._poll_s = poll_s
        self._bell = Bell()

    async def append(self, result: Report) -> Appended:
        appended = await self._append(result)
        if appended.created:
            self._bell.ring()  # local followers need not wait for another replica's wake-up
        return appended

    def follow(self, from_offset: int, until: asyncio.Event) -> AsyncIterator[StoredResult]:
        return tail(self.read, self._bell, from_offset, until, self._poll_s)

    @abc.abstractmethod
    async def _append(self, result: Report) -> Appended: ...

    @abc.abstractmethod
    async def read(self, from_offset: int, limit: int) -> list[StoredResult]: ...

    @abc.abstractmethod
    async def leaderboard(self, limit: int) -> list[LeaderboardRow]: ...

    @abc.abstractmethod
    async def classic_leaderboard(self, limit: int) -> list[LeaderboardRow]: ...

    @abc.abstractmethod
    async def standings(self, table_id: str) -> Standings | None: ...

    @abc.abstractmethod
    async def classic_standings(self, table_id: str) -> ClassicStandings | None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...


# --- SQL: written once with `?` placeholders (`%s` for PostgreSQL: store_pg.pg) -------------

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
READ_FROM = READ_LOG  # (params: from_offset twice, then the limit: `read_params`)
TOP = ("SELECT player_id, points, played FROM leaderboard "
       "ORDER BY points DESC, played ASC, player_id ASC LIMIT ?")
STANDINGS = ("SELECT player1, player2, player3, total1, total2, total3, smazzate "
             "FROM standings WHERE table_id = ?")


def existing(row: Sequence[Any], payload: bytes) -> Appended:
    """The answer to a report whose key is stored: `row` is SELECT_KEY's."""
    return Appended(int(row[0]), created=False, differs=bytes(row[1]) != payload)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def key_of(result: Report) -> tuple[str, tuple[Any, ...]]:
    """The statement finding `result`'s key in the log (a row: SELECT_KEY's), with its params."""
    if isinstance(result, ClassicReport):
        return SELECT_CLASSIC_KEY, (result.table_id, result.report)
    return SELECT_KEY, (result.table_id, result.smazzata)


def writes_of(result: Report, offset: int, stored_at_ms: int
              ) -> list[tuple[str, tuple[Any, ...]]]:
    """What appending `result` at `offset` writes, in the transaction holding the head."""
    if isinstance(result, ClassicReport):
        return classic_statements(result, offset, stored_at_ms)
    return [(INSERT_RESULT, insert_params(offset, result, stored_at_ms)),
            *aggregate_statements(result)]


def read_params(from_offset: int, limit: int) -> tuple[int, int, int]:
    return (from_offset, from_offset, limit)


def insert_params(offset: int, result: Result, stored_at_ms: int) -> tuple[Any, ...]:
    return (offset, result.table_id, result.smazzata, result.long_match, result.competitive,
            *result.player_ids, *result.scores, stored_at_ms, result.payload)


def aggregate_statements(result: Result) -> list[tuple[str, tuple[Any, ...]]]:
    """What an appended result adds to the leaderboard and the standings, in the same
    transaction."""
    out: list[tuple[str, tuple[Any, ...]]] = []
    if result.competitive:
        out += [(ADD_POINTS, (player, score))
                for player, score in zip(result.player_ids, result.scores, strict=True)]
    if result.long_match:
        out.append((ADD_STANDINGS, (result.table_id, *result.player_ids, *result.scores)))
    return out


def leaderboard_rows(rows: Sequence[Sequence[Any]]) -> list[LeaderboardRow]:
    return [LeaderboardRow(str(r[0]), int(r[1]), int(r[2])) for r in rows]


def classic_board_rows(rows: Sequence[Sequence[Any]]) -> list[LeaderboardRow]:
    """CLASSIC_TOP's rows (player, ordinal, played)."""
    return [LeaderboardRow(str(r[0]), 0, int(r[2]), float(r[1])) for r in rows]


def standings_of(row: Sequence[Any] | None) -> Standings | None:
    if row is None:
        return None
    return Standings(player_ids=(str(row[0]), str(row[1]), str(row[2])),
                     totals=(int(row[3]), int(row[4]), int(row[5])), smazzate=int(row[6]))


def stored(rows: Sequence[Sequence[Any]]) -> list[StoredResult]:
    return [StoredResult(int(r[0]), int(r[1]), bytes(r[2])) for r in rows]
