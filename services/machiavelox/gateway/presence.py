"""Signs of life from the gateway to the presence service (M11.1).

A session reports its connection, and every heartbeat and action of the player counts as a sign
of life (at most one call per second per player). Presence failures never break a session:
they are logged and the game goes on (the shard keeps its last known liveness).
"""

from __future__ import annotations

import asyncio
import logging
import time

import grpc

from machiavelox._gen.v1 import presence_pb2, presence_pb2_grpc
from machiavelox.platform.tls import Connect

log = logging.getLogger(__name__)


class PresenceReporter:
    def __init__(self, address: str, gateway_id: str, min_interval_s: float = 1.0,
                 connect: Connect | None = None) -> None:
        """`connect`: opens the channel to presence (`InternalTls.connector`; needed with an
        `address`)."""
        self.gateway_id = gateway_id
        self.min_interval_s = min_interval_s
        if address and connect is None:
            raise ValueError("PresenceReporter needs `connect` to reach presence")
        self._channel = connect(address) if address and connect is not None else None
        self._stub = (presence_pb2_grpc.PresenceServiceStub(self._channel)
                      if self._channel is not None else None)
        self._last: dict[str, float] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, call: object) -> None:
        async def run() -> None:
            try:
                await call  # type: ignore[misc]
            except grpc.aio.AioRpcError as err:
                log.warning("presence call failed: %s", err.code().name)

        task = asyncio.create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def sign_of_life(self, player: str, force: bool = False) -> None:
        if self._stub is None:
            return
        now = time.monotonic()
        if not force and now - self._last.get(player, 0.0) < self.min_interval_s:
            return
        self._last[player] = now
        self._spawn(self._stub.Heartbeat(presence_pb2.HeartbeatRequest(player_id=player),
                                         timeout=5))

    def connected(self, player: str, connected: bool) -> None:
        if self._stub is None:
            return
        self._spawn(self._stub.SetConnected(presence_pb2.SetConnectedRequest(
            player_id=player, gateway_id=self.gateway_id if connected else "",
            connected=connected), timeout=5))
        if connected:
            self.sign_of_life(player, force=True)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=2)
        if self._channel is not None:
            await self._channel.close()
