"""Liveness from the presence service into the tables (M11: the engine applies the rules).

One WatchLiveness stream per shard covers every player seated at a table in play here; when
the set of players changes the stream is reopened (the service sends the current state first,
so nothing falls between two streams). Each change goes to the shard's evidence (liveness.py),
which tells the tables: alive, silent for a duration (dated on this shard's own clock: never
presence's wall clock compared with ours), or unknown. While the stream is down (presence
unreachable) every player is unknown: nobody's absence counts for what we cannot see.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import grpc

from machiavelox._gen.v1 import presence_pb2, presence_pb2_grpc
from machiavelox.platform.tls import Connect

from .liveness import ALIVE, UNKNOWN, Heard
from .shard import Shard

log = logging.getLogger(__name__)


class PresenceWatcher:
    def __init__(self, address: str, shard: Shard, connect: Connect,
                 retry_s: float = 1.0) -> None:
        """`connect`: opens the channel to presence, as this shard (`InternalTls.connector`)."""
        self.address = address
        self.shard = shard
        self.connect = connect
        self.retry_s = retry_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.address and self._task is None:
            self._task = asyncio.create_task(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def _players(self) -> set[str]:
        return {p for host in self.shard.tables.values() if not host.finished
                for p in host.players}

    async def _run(self) -> None:
        async with self.connect(self.address) as channel:
            stub = presence_pb2_grpc.PresenceServiceStub(channel)
            while True:
                players = self._players()
                if not players:
                    await self.shard.players_changed.wait()
                    self.shard.players_changed.clear()
                    continue
                self.shard.players_changed.clear()
                call = stub.WatchLiveness(presence_pb2.WatchLivenessRequest(
                    player_ids=sorted(players)))
                watching = asyncio.create_task(self._consume(call))
                changed = asyncio.create_task(self.shard.players_changed.wait())
                await asyncio.wait({watching, changed}, return_when=asyncio.FIRST_COMPLETED)
                broke = watching.done() and not changed.done()  # (before both are ended)
                call.cancel()
                for task in (watching, changed):
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                        await task
                if broke:  # the stream ended by itself: presence is down or went away
                    self.shard.presence_unknown()
                    await asyncio.sleep(self.retry_s)

    async def _consume(self, call: grpc.aio.UnaryStreamCall) -> None:
        try:
            async for item in call:
                change = item.change
                self.shard.presence(change.player_id, self._heard(change))
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                log.warning("presence stream broken: %s", err.code().name)

    def _heard(self, change: presence_pb2.LivenessChange) -> Heard:
        if change.unknown:
            return UNKNOWN
        if change.alive:
            return ALIVE
        return Heard("silent", self.shard.clock() - max(0, change.silent_for_ms))
