"""A small pool of PostgreSQL connections (psycopg 3, async), shared by the services' stores.

psycopg_pool is not a dependency: a store needs a few autocommit connections, (re)opened on
demand, a dead one dropped and replaced, and (optionally) every operation bounded in time.

Why operations are bounded by cutting the socket, not by cancelling the task: psycopg answers a
cancelled query by sending the server a cancel request and waiting for the query to end, up to
5 s each; behind a network path that stopped forwarding, that is 10 s more. At its deadline an
operation's TCP stream is shut down under libpq instead (`_Watchdog`): the pending read or write
fails at once with an OperationalError, the operation unwinds on its own, and the connection,
whose state is unknown, is closed rather than returned to the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.pq import TransactionStatus

T = TypeVar("T")
PgConnection = psycopg.AsyncConnection[tuple[Any, ...]]

CONNECT_TIMEOUT_S = 5  # without an operation timeout: libpq would wait forever for a dead host
MIN_CONNECT_TIMEOUT_S = 2  # libpq's (and psycopg's) floor for connect_timeout


class PgUnavailableError(Exception):
    """The database cannot be reached or used right now; the caller may retry."""


class _StaleConnectionError(Exception):
    """A pooled connection turned out dead (server restart, idle cut): worth one more try."""


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
    """Up to `size` autocommit connections, each opened when first needed.

    `error` is the exception raised when the database cannot be reached or used (a store's own
    "unavailable" error). With `timeout_s`, every `run` or `connection` block, from waiting for
    a free connection to the end of its work, fails with `error` after about `timeout_s`.
    """

    def __init__(self, url: str, size: int, application_name: str, *,
                 error: type[Exception] = PgUnavailableError,
                 timeout_s: float | None = None) -> None:
        params = conninfo_to_dict(url)
        connect_timeout = CONNECT_TIMEOUT_S if timeout_s is None else max(
            MIN_CONNECT_TIMEOUT_S, math.ceil(timeout_s))
        params.setdefault("connect_timeout", connect_timeout)
        params.setdefault("application_name", application_name)  # in pg_stat_activity
        self._conninfo = make_conninfo("", **params)
        self._size = size
        self._error = error
        self._timeout_s = timeout_s
        self._closed = False
        self._loop_seen: asyncio.AbstractEventLoop | None = None
        # Last in, first out: sequential work keeps reusing one warm connection (its prepared
        # statements); a second one is opened only when two blocks overlap.
        self._idle: asyncio.LifoQueue[PgConnection | None] = asyncio.LifoQueue()
        for _ in range(size):
            self._idle.put_nowait(None)

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

    async def _bounded(self, step: Awaitable[T], deadline: float | None) -> T:
        if deadline is None:
            return await step
        remaining = deadline - self._loop.time()
        try:
            return await asyncio.wait_for(step, max(remaining, 0.0))
        except TimeoutError:
            raise self._late() from None

    async def connect(self, deadline: float | None = None) -> PgConnection:
        """A new connection of the pool's settings, outside the pool (the caller closes it)."""
        try:
            return await self._bounded(
                psycopg.AsyncConnection.connect(self._conninfo, autocommit=True),
                self._deadline() if deadline is None else deadline)
        except psycopg.OperationalError as exc:
            raise self._error(f"PostgreSQL: {exc}") from exc

    async def _checkout(self, deadline: float | None) -> tuple[PgConnection, bool]:
        """A connection and whether it was pooled (it may have died since)."""
        if self._idle.empty():
            conn = await self._bounded(self._idle.get(), deadline)
        else:  # (no wait: no task for `wait_for`, no turn of the event loop)
            conn = self._idle.get_nowait()
        if conn is not None and not conn.closed:
            return conn, True
        try:
            return await self.connect(deadline), False
        except BaseException:
            self._idle.put_nowait(None)
            raise

    async def _checkin(self, conn: PgConnection, watchdog: _Watchdog) -> None:
        watchdog.cancel()
        if (self._closed or watchdog.fired or conn.broken
                or conn.info.transaction_status != TransactionStatus.IDLE):
            with contextlib.suppress(Exception):
                await conn.close()
            self._idle.put_nowait(None)
            return
        self._idle.put_nowait(conn)

    def _failure(self, exc: psycopg.OperationalError, watchdog: _Watchdog,
                 reused: bool) -> Exception:
        if watchdog.fired:
            return self._late()
        if reused:
            return _StaleConnectionError(str(exc))
        return self._error(f"PostgreSQL: {exc}")

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[PgConnection]:
        """A connection for the block (no retry: for set-up work, e.g. creating a schema)."""
        deadline = self._deadline()
        conn, _ = await self._checkout(deadline)
        watchdog = _Watchdog(conn, deadline, self._loop)
        try:
            yield conn
        except psycopg.OperationalError as exc:
            raise self._failure(exc, watchdog, reused=False) from exc
        finally:
            await self._checkin(conn, watchdog)

    async def run(self, work: Callable[[PgConnection], Awaitable[T]]) -> T:
        """`work` on a connection, again on another if a pooled one was dead (after a server
        restart they all are; each dead one is dropped), within one deadline. `work` must be
        safe to repeat: it may have reached the server before its connection died."""
        deadline = self._deadline()
        for attempt in range(self._size + 1):
            conn, reused = await self._checkout(deadline)
            watchdog = _Watchdog(conn, deadline, self._loop)
            try:
                return await work(conn)
            except psycopg.OperationalError as exc:
                failure = self._failure(exc, watchdog, reused and attempt < self._size)
                if not isinstance(failure, _StaleConnectionError):
                    raise failure from exc
            finally:
                await self._checkin(conn, watchdog)
        raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover

    async def close(self) -> None:
        """Close the idle connections; one in use is closed when its block ends."""
        self._closed = True
        while not self._idle.empty():
            conn = self._idle.get_nowait()
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
