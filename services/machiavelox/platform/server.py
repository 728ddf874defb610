"""The server lifecycle every service shares.

`run_server` builds a grpc.aio server with the error interceptor, the standard health service
and reflection (so `grpcurl` works), starts it, and on SIGTERM or SIGINT sets every health
status to NOT_SERVING, stops accepting, lets in-flight calls finish for the grace period, then
runs the service's own shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .errors import ErrorInterceptor

log = logging.getLogger(__name__)

Register = Callable[[grpc.aio.Server], None]


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    grace_s: float

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class Service:
    """A running gRPC server; `bound_port` is the real port (useful with port 0)."""

    def __init__(self, endpoint: Endpoint, service_names: Sequence[str], register: Register,
                 interceptors: Sequence[grpc.aio.ServerInterceptor] = ()) -> None:
        self.endpoint = endpoint
        self.service_names = list(service_names)
        self.server = grpc.aio.server(interceptors=[ErrorInterceptor(), *interceptors],
                                      options=[("grpc.so_reuseport", 0)])
        register(self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            [*self.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME], self.server)
        self.bound_port = self.server.add_insecure_port(endpoint.address)
        if self.bound_port == 0:
            raise OSError(f"cannot listen on {endpoint.address}")

    async def _set_all(self, status: int) -> None:
        for name in ["", *self.service_names]:
            result = self.health.set(name, status)
            if asyncio.iscoroutine(result):
                await result

    async def start(self) -> None:
        await self.server.start()
        await self._set_all(health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        if on_stop is not None:
            await on_stop()
        await self.server.stop(self.endpoint.grace_s)


async def run_until_signalled(service: Service, name: str,
                              before_stop: Callable[[], Awaitable[None]] | None = None,
                              after_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    """Start `service`, serve until SIGTERM/SIGINT, then shut down gracefully."""
    await service.start()
    log.info("%s listening on port %d", name, service.bound_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("%s stopping (grace %.1f s)", name, service.endpoint.grace_s)
    await service.stop(before_stop)
    if after_stop is not None:
        await after_stop()
    log.info("%s stopped", name)
