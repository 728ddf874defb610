"""A TCP relay on loopback that a test owns, in front of a server of the machine (PostgreSQL,
Redis) or an internal link: the fault is injected here, never by stopping the server."""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit


class TcpProxy:
    """Relays loopback TCP connections to `target`. `stall()` stops forwarding (bytes are read
    and held, connections stay open, a new one is accepted and goes nowhere), `replies_only`
    in one direction; `blackhole()` is a stall that holds ends of stream too (a partition
    delivers no FIN: each side can learn of the other's loss only by itself); `resume()`
    forwards again, held bytes first. `close()` closes the port
    and every connection (`cut()` the connections only); `start()` opens the same port
    again."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._requests = asyncio.Event()
        self._replies = asyncio.Event()
        self._hold_eof = False
        self.resume()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def stall(self, replies_only: bool = False) -> None:
        self._replies.clear()
        if not replies_only:
            self._requests.clear()

    def blackhole(self) -> None:
        self._hold_eof = True
        self.stall()

    def resume(self) -> None:
        self._hold_eof = False
        self._requests.set()
        self._replies.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        await self.cut()

    async def cut(self) -> None:
        """Close every connection (the port stays open)."""
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        server_w: asyncio.StreamWriter | None = None
        try:
            await self._requests.wait()
            server_r, server_w = await asyncio.open_connection(*self._target)
            pumps = {asyncio.ensure_future(self._pump(client_r, server_w, self._requests)),
                     asyncio.ensure_future(self._pump(server_r, client_w, self._replies))}
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (OSError, asyncio.CancelledError):  # cancelled by `close` only: ends quietly
            pass  # (a cancelled handler task makes Python 3.11's streams log an error)
        finally:
            for writer in (client_w, server_w):
                if writer is not None:
                    writer.close()
            self._handlers.discard(task)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    flowing: asyncio.Event) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                await flowing.wait()
                writer.write(data)
                await writer.drain()
            if self._hold_eof:  # (a blackhole: the end of stream waits like the bytes)
                await flowing.wait()


def via_proxy(url: str, port: int) -> str:
    """`url` (a database URL), through 127.0.0.1:`port`."""
    parts = urlsplit(url)
    user, _, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}@127.0.0.1:{port}" if user
                                     else f"127.0.0.1:{port}"))
