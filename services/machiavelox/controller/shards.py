"""The controller's gRPC side: each shard's load, health and draining flag.

A shard is reached at its stable StatefulSet name `<statefulset>-<ordinal>` behind the headless
Service (`ControllerSettings.shard_address`). One channel per ordinal, opened on first use and
kept: a pod that is recreated keeps its DNS name, and gRPC reconnects by itself. Channels are
opened by `connect`, as the controller (mutual TLS: `platform/tls.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.platform.tls import Connect

from .decide import ShardLoad

log = logging.getLogger(__name__)


class ShardClients:
    def __init__(self, address: Callable[[int], str | None], shard_id: Callable[[int], str],
                 timeout_s: float, connect: Connect) -> None:
        self.address = address
        self.connect = connect
        self.shard_id = shard_id
        self.timeout_s = timeout_s
        self._channels: dict[int, grpc.aio.Channel] = {}

    def _channel(self, ordinal: int) -> grpc.aio.Channel | None:
        channel = self._channels.get(ordinal)
        if channel is None:
            address = self.address(ordinal)
            if address is None:
                return None
            channel = self._channels[ordinal] = self.connect(address)
        return channel

    async def load(self, ordinal: int) -> ShardLoad | None:
        """GetLoad and the health status, or None when the shard does not answer."""
        channel = self._channel(ordinal)
        if channel is None:
            return None
        try:
            load, health = await asyncio.gather(
                table_pb2_grpc.TableAuthorityServiceStub(channel).GetLoad(
                    table_pb2.GetLoadRequest(), timeout=self.timeout_s),
                health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=self.timeout_s))
        except grpc.aio.AioRpcError as err:
            log.info("shard not answering: %s", err.code().name,
                     extra={"shard_id": self.shard_id(ordinal)})
            return None
        if load.shard_id and load.shard_id != self.shard_id(ordinal):
            log.warning("shard at ordinal %d calls itself %s", ordinal, load.shard_id,
                        extra={"shard_id": self.shard_id(ordinal)})
        return ShardLoad(tables=load.tables, players=load.players, capacity=load.capacity,
                         draining=load.draining,
                         serving=health.status == health_pb2.HealthCheckResponse.SERVING)

    async def loads(self, replicas: int) -> tuple[ShardLoad | None, ...]:
        return tuple(await asyncio.gather(*(self.load(i) for i in range(replicas))))

    async def set_draining(self, ordinal: int, draining: bool) -> None:
        """Raises grpc.aio.AioRpcError when the shard does not take it."""
        channel = self._channel(ordinal)
        if channel is None:
            raise LookupError(f"no address for shard {self.shard_id(ordinal)}")
        await table_pb2_grpc.TableAuthorityServiceStub(channel).SetDraining(
            table_pb2.SetDrainingRequest(draining=draining), timeout=self.timeout_s)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
