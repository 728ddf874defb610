"""The results store on SQLite (one process): stdlib sqlite3 on one worker thread (store.py has
the semantics and what both backends share)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from .classic_ratings import (
    CLASSIC_TOP,
    ENDED_BEFORE,
    rating_writes,
    ratings_query,
    ratings_schema,
    to_rate,
)
from .store import (
    LOCK_HEAD,
    READ_FROM,
    SET_HEAD,
    STANDINGS,
    TOP,
    Appended,
    LeaderboardRow,
    LogStore,
    Report,
    Standings,
    StoredResult,
    StoreUnavailableError,
    classic_board_rows,
    existing,
    key_of,
    leaderboard_rows,
    now_ms,
    read_params,
    standings_of,
    stored,
    writes_of,
)
from .store_classic import (
    CLASSIC_STANDINGS,
    ClassicReport,
    ClassicStandings,
    classic_schema,
    classic_standings_of,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

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


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, timeout=5.0)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # an acknowledged report survives a power cut
    conn.executescript(SQLITE_SCHEMA)
    for statement in [*classic_schema(blob="BLOB", text="TEXT"), *ratings_schema("TEXT")]:
        conn.execute(statement)
    return conn


def _append(conn: sqlite3.Connection, result: Report) -> Appended:
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute(*key_of(result)).fetchone()
        if row is not None:
            conn.execute("ROLLBACK")
            return existing(row, result.payload)
        offset = int(conn.execute(LOCK_HEAD).fetchone()[0]) + 1
        writes = writes_of(result, offset, now_ms())
        if isinstance(result, ClassicReport) and to_rate(result):  # (read before the writes)
            writes += rating_writes(result,
                                    conn.execute(ENDED_BEFORE, (result.table_id,)).fetchone(),
                                    conn.execute(*ratings_query(result)).fetchall())
        for statement, params in writes:
            conn.execute(statement, params)
        conn.execute(SET_HEAD, (offset,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return Appended(offset, created=True)


class SqliteStore(LogStore):
    """stdlib sqlite3 on one worker thread: every statement runs there, one at a time.

    One process only: a second process on the same file would be consistent (SQLite locks) but
    its followers would learn of new records only by polling.
    """

    def __init__(self, conn: sqlite3.Connection, worker: ThreadPoolExecutor,
                 poll_s: float) -> None:
        super().__init__(poll_s)
        self._conn = conn
        self._worker = worker

    @classmethod
    async def open(cls, path: Path, poll_s: float) -> SqliteStore:
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scoring-sqlite")
        try:
            conn = await asyncio.get_running_loop().run_in_executor(worker, _connect, path)
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

    async def _append(self, result: Report) -> Appended:
        return await self._run(lambda conn: _append(conn, result))

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]:
        return await self._run(lambda conn: stored(
            conn.execute(READ_FROM, read_params(from_offset, limit)).fetchall()))

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]:
        return await self._run(
            lambda conn: leaderboard_rows(conn.execute(TOP, (limit,)).fetchall()))

    async def classic_leaderboard(self, limit: int) -> list[LeaderboardRow]:
        return await self._run(
            lambda conn: classic_board_rows(conn.execute(CLASSIC_TOP, (limit,)).fetchall()))

    async def standings(self, table_id: str) -> Standings | None:
        return await self._run(
            lambda conn: standings_of(conn.execute(STANDINGS, (table_id,)).fetchone()))

    async def classic_standings(self, table_id: str) -> ClassicStandings | None:
        return await self._run(lambda conn: classic_standings_of(
            conn.execute(CLASSIC_STANDINGS, (table_id,)).fetchall()))

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._worker, self._conn.close)
        self._worker.shutdown()
