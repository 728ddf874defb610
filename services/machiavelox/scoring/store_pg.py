"""The results store on PostgreSQL (replicas): psycopg 3 async on the shared pool
(platform/pg.py); store.py has the semantics and what both backends share.

Every append locks the append head, the one row of `results_head`, FOR UPDATE for the length of
its transaction: appends of all replicas commit one at a time, in offset order. A replica that
loses its way to the server while it holds the head (a partition, a frozen pod) would stop the
others for as long as that lasts; the pool's session settings end it (issue 13, item 6): the
server ends a session left idle in a transaction for POOL_TIMEOUT_S, which rolls it back and
releases the head, and another replica's append waiting on it gives up after half of that
("canceling statement due to lock timeout": UNAVAILABLE, which the shard retries). Every
operation of a replica, its wait for a connection included, answers within POOL_TIMEOUT_S, so a
partitioned replica answers UNAVAILABLE (`store/unavailable`) instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from psycopg import sql

from machiavelox.platform.pg import PgConnection, PgPool

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
    # issue 16: classic Machiavelli reports, hands and sessions (store_classic.py)
    *classic_schema(blob="BYTEA", text='TEXT COLLATE "C"'),
    *ratings_schema('TEXT COLLATE "C"'),  # the ranked classic leaderboard (classic_ratings.py)
]
MIGRATION_LOCK = 0x4D585343  # "MXSC": replicas starting together create the schema one at a time
POOL_SIZE = 4
# Below the 5 s a shard gives a ReportResult (table/reporting.py): the store answers first.
POOL_TIMEOUT_S = 4.0
APPLICATION_NAME = "machiavelox-scoring"  # in pg_stat_activity, unless the URL names one


def pg(statement: str) -> str:
    """A statement of store.py with PostgreSQL's placeholders."""
    return statement.replace("?", "%s")


class PostgresStore(LogStore):
    """psycopg 3 async on a small pool; NOTIFY on commit wakes the followers of every replica.

    The channel is per schema (`machiavelox_results:<schema>`), so deployments sharing a
    database do not wake each other; a notification is only a hint to re-read, never trusted
    for content, and `poll_s` bounds the delay if one is lost (e.g. while reconnecting).
    """

    def __init__(self, poll_s: float, pool: PgPool, channel: str, listener: PgConnection) -> None:
        super().__init__(poll_s)
        self._pool = pool
        self._channel = channel
        self._listening = asyncio.create_task(self._listen(listener), name="scoring-listen")

    @classmethod
    async def open(cls, url: str, poll_s: float) -> PostgresStore:
        pool = PgPool(url, POOL_SIZE, APPLICATION_NAME, error=StoreUnavailableError,
                      timeout_s=POOL_TIMEOUT_S)
        try:
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
        except BaseException:
            await pool.close()
            raise
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

    async def _append(self, result: Report) -> Appended:
        return await self._pool.run(lambda conn: self._append_on(conn, result))

    async def _append_on(self, conn: PgConnection, result: Report) -> Appended:
        async with conn.transaction():
            head = await (await conn.execute(LOCK_HEAD + " FOR UPDATE")).fetchone()
            assert head is not None
            key, params = key_of(result)
            row = await (await conn.execute(pg(key), params)).fetchone()
            if row is not None:
                return existing(row, result.payload)
            offset = int(head[0]) + 1
            writes = writes_of(result, offset, now_ms())
            if isinstance(result, ClassicReport) and to_rate(result):  # (read before writes)
                ended = await (await conn.execute(pg(ENDED_BEFORE),
                                                  (result.table_id,))).fetchone()
                query, params = ratings_query(result)
                rated = await (await conn.execute(pg(query), params)).fetchall()
                writes += rating_writes(result, ended, rated)
            for statement, values in writes:
                await conn.execute(pg(statement), values)
            await conn.execute(pg(SET_HEAD), (offset,))
            await conn.execute("SELECT pg_notify(%s, %s)", (self._channel, str(offset)))
        return Appended(offset, created=True)

    async def read(self, from_offset: int, limit: int) -> list[StoredResult]:
        async def work(conn: PgConnection) -> list[StoredResult]:
            cur = await conn.execute(pg(READ_FROM), read_params(from_offset, limit))
            return stored(await cur.fetchall())
        return await self._pool.run(work)

    async def leaderboard(self, limit: int) -> list[LeaderboardRow]:
        async def work(conn: PgConnection) -> list[LeaderboardRow]:
            cur = await conn.execute(pg(TOP), (limit,))
            return leaderboard_rows(await cur.fetchall())
        return await self._pool.run(work)

    async def classic_leaderboard(self, limit: int) -> list[LeaderboardRow]:
        async def work(conn: PgConnection) -> list[LeaderboardRow]:
            cur = await conn.execute(pg(CLASSIC_TOP), (limit,))
            return classic_board_rows(await cur.fetchall())
        return await self._pool.run(work)

    async def standings(self, table_id: str) -> Standings | None:
        async def work(conn: PgConnection) -> Standings | None:
            cur = await conn.execute(pg(STANDINGS), (table_id,))
            return standings_of(await cur.fetchone())
        return await self._pool.run(work)

    async def classic_standings(self, table_id: str) -> ClassicStandings | None:
        async def work(conn: PgConnection) -> ClassicStandings | None:
            cur = await conn.execute(pg(CLASSIC_STANDINGS), (table_id,))
            return classic_standings_of(await cur.fetchall())
        return await self._pool.run(work)

    async def close(self) -> None:
        self._listening.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._listening
        await self._pool.close()
