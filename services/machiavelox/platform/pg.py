"""A pool of PostgreSQL connections (psycopg 3 async, on psycopg_pool), shared by the services'
stores (scoring's results, a shard's journal).

psycopg_pool keeps the autocommit connections: one opened when the pool is first used and
kept, more up to `size` while work overlaps (closed again after 10 idle minutes), every one
found dead replaced. Reconnecting follows demand (`reconnect_timeout=0`): a pool that lost its
server tries twice at once, then again as soon as an operation waits for a connection, never on
psycopg_pool's backoff (1 s, doubling), which would keep it from a server back up for seconds.
While it has no connection an operation waits for one until its deadline, so an unreachable
server fails it then ("no connection within t s"), not at the first refusal; psycopg.pool's
warnings say why (`error connecting in ...`).

Every connection has the server-side timeouts and TCP keepalives of pg_conninfo.py: the server
ends a session that its client left idle in a transaction, so a partitioned client releases its
locks within seconds (issue 13, item 6).

What this module adds to psycopg_pool: the store's own "unavailable" error for every failure,
another try on another connection when one turns out lost, and, with `timeout_s`,
every operation bounded in time from checkout to end.

Why operations are bounded by cutting the socket, not by cancelling the task: psycopg answers a
cancelled query by sending the server a cancel request and waiting for the query to end, up to
5 s each; behind a network path that stopped forwarding, that is 10 s more. At its deadline an
operation's TCP stream is shut down under libpq instead (`_Watchdog`): the pending read or write
fails at once with an OperationalError, the operation unwinds on its own, and the connection,
whose state is unknown, is closed rather than returned to the pool for use.

The fast path: the journal writes a frame at a time, and psycopg_pool's getconn and putconn
cost about 10 us of CPU per operation (measured: issue 13, item 6). So the connection of the
last operation stays with the pool as its `spare` for up to SPARE_HOLD_S: the next operation
takes it without calling psycopg_pool (nor a task, nor a turn of the event loop); past that
time it goes back to psycopg_pool, which sees every connection at least that often (its expiry,
its rotation). Operations that overlap take their connections from psycopg_pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout

from .pg_conninfo import connect_timeout, pool_conninfo

T = TypeVar("T")
PgConnection = psycopg.AsyncConnection[tuple[Any, ...]]

NO_DEADLINE_WAIT_S = 30.0  # without timeout_s: the longest a checkout waits (psycopg_pool's)
SPARE_HOLD_S = 1.0  # the longest a connection skips psycopg_pool between operations


class PgUnavailableError(Exception):
    """The database cannot be reached or used right now; the caller may retry."""


def _sever(conn: PgConnection) -> None:
    """Shut the connection's TCP stream down (both ways), leaving its descriptor to libpq."""
    try:
        fd = conn.pgconn.socket
    except psycopg.Error:  # no socket any more: nothing is waiting on it
        return
    with contextlib.suppress(OSError), socket.socket(fileno=os.dup(fd)) as dup:
        dup.shutdown(socket.SHUT_RDWR)  # on the socket, seen through libpq's descriptor too


class _Watchdog:
    """Severs `conn` at `deadline` (loop time) unless cancelled first; None: no deadline."""

    __slots__ = ("_handle", "fired")

    def __init__(self, conn: PgConnection, deadline: float | None,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.fired = False
        self._handle = None if deadline is None else loop.call_at(deadline, self._fire, conn)

    def _fire(self, conn: PgConnection) -> None:
        self.fired = True
        _sever(conn)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


class PgPool:
    """Up to `size` autocommit connections (psycopg_pool), the first opened when first needed.

    `error` is the exception raised when the database cannot be reached or used (a store's own
    "unavailable" error). With `timeout_s`, every `run` or `connection` block, from waiting for
    a free connection to the end of its work, fails with `error` after about `timeout_s`; the
    server-side bounds of every connection derive from it (pg_conninfo.py).
    """

    def __init__(self, url: str, size: int, application_name: str, *,
                 error: type[Exception] = PgUnavailableError,
                 timeout_s: float | None = None) -> None:
        self._conninfo = pool_conninfo(url, application_name, timeout_s)
        self._size = size
        self._error = error
        self._timeout_s = timeout_s
        self._connect_s = connect_timeout(timeout_s)
        self._state = "new"  # then "open", then "closed"
        self._loop_seen: asyncio.AbstractEventLoop | None = None
        self._spare: PgConnection | None = None  # the last one, idle, not given back yet
        self._spare_until = 0.0  # (loop time) when the one leased last goes back
        logging.getLogger("psycopg.pool").setLevel(logging.WARNING)  # (INFO: 2 lines a checkout)
        self._pool: AsyncConnectionPool[PgConnection] = AsyncConnectionPool(
            self._conninfo, kwargs={"autocommit": True}, min_size=1, max_size=size,
            open=False, name=application_name, reconnect_timeout=0.0,
            timeout=NO_DEADLINE_WAIT_S if timeout_s is None else timeout_s)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        """The pool's event loop, looked up once (a getpid() a lookup on 3.11)."""
        loop = self._loop_seen
        if loop is None:
            loop = self._loop_seen = asyncio.get_running_loop()
        return loop

    def _deadline(self) -> float | None:
        if self._timeout_s is None:
            return None
        return self._loop.time() + self._timeout_s

    def _late(self) -> Exception:
        return self._error(f"PostgreSQL: no answer within {self._timeout_s:g} s")

    async def connect(self, deadline: float | None = None) -> PgConnection:
        """A new connection of the pool's settings, outside the pool (the caller closes it)."""
        deadline = self._deadline() if deadline is None else deadline
        step = psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        try:
            if deadline is None:
                return await step
            return await asyncio.wait_for(step, max(deadline - self._loop.time(), 0.0))
        except TimeoutError:
            raise self._late() from None
        except psycopg.OperationalError as exc:
            raise self._error(f"PostgreSQL: {exc}") from exc

    async def _checkout(self, deadline: float | None) -> PgConnection:
        spare = self._spare
        if spare is not None:  # the fast path
            self._spare = None
            return spare
        if self._state != "open":
            if self._state == "closed":
                raise self._error("PostgreSQL: the pool is closed")
            self._state = "open"
            await self._pool.open()  # (starts its workers; the first connection comes from one)
        now = self._loop.time()
        wait_s = NO_DEADLINE_WAIT_S if deadline is None else deadline - now
        try:
            conn = await self._pool.getconn(wait_s)
        except PoolTimeout:
            raise self._error(f"PostgreSQL: no connection within {max(wait_s, 0):g} s") from None
        except PoolClosed as exc:
            raise self._error(f"PostgreSQL: {exc}") from None
        self._spare_until = now + SPARE_HOLD_S
        return conn

    async def _checkin(self, conn: PgConnection, watchdog: _Watchdog) -> None:
        watchdog.cancel()
        if (watchdog.fired or conn.closed
                or conn.pgconn.transaction_status != TransactionStatus.IDLE):
            with contextlib.suppress(Exception):
                await conn.close()  # (psycopg_pool replaces a closed connection)
        elif (self._spare is None and self._state == "open"
              and self._loop.time() < self._spare_until):
            self._spare = conn
            return
        await self._pool.putconn(conn)

    def _failure(self, exc: psycopg.Error, conn: PgConnection, watchdog: _Watchdog,
                 retry: bool) -> Exception | None:
        """What to raise for `exc` (`exc` itself: as it is); None: try another connection."""
        if watchdog.fired:
            return self._late()
        if conn.closed:  # the connection is lost: a server restart, a cut, a session ended
            return None if retry else self._error(f"PostgreSQL: {exc}")
        if isinstance(exc, psycopg.OperationalError):  # e.g. a statement or lock timeout
            return self._error(f"PostgreSQL: {exc}")
        return exc

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[PgConnection]:
        """A connection for the block (no retry: for set-up work, e.g. creating a schema)."""
        deadline = self._deadline()
        conn = await self._checkout(deadline)
        watchdog = _Watchdog(conn, deadline, self._loop)
        try:
            yield conn
        except psycopg.Error as exc:
            failure = self._failure(exc, conn, watchdog, retry=False)
            if failure is exc or failure is None:
                raise
            raise failure from exc
        finally:
            await self._checkin(conn, watchdog)

    async def run(self, work: Callable[[PgConnection], Awaitable[T]]) -> T:
        """`work` on a connection, again on another if that one was lost (after a server
        restart every pooled one is; each dead one is dropped), up to `size` + 1 tries within
        one deadline. `work` must be safe to repeat: it may have reached the server before its
        connection died."""
        deadline = self._deadline()
        for attempt in range(self._size + 1):
            conn = await self._checkout(deadline)
            watchdog = _Watchdog(conn, deadline, self._loop)
            try:
                return await work(conn)
            except psycopg.Error as exc:
                failure = self._failure(exc, conn, watchdog, attempt < self._size)
                if failure is exc:
                    raise
                if failure is not None:
                    raise failure from exc
            finally:
                await self._checkin(conn, watchdog)
        raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover

    async def close(self) -> None:
        """Close the idle connections; one in use is closed when its block ends. Waits for a
        connection attempt under way (at most libpq's connect_timeout)."""
        opened, self._state = self._state == "open", "closed"
        spare, self._spare = self._spare, None
        if spare is not None:
            await self._pool.putconn(spare)  # (closed with the idle ones)
        if opened:
            await self._pool.close(timeout=self._connect_s + 1.0)
