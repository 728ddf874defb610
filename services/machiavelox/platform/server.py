"""The server lifecycle every service shares.

`Service` builds a grpc.aio server with the observability interceptor (a server span and the
`grpc_server_*` metrics for every call, see `observability.py`), the error interceptor, the
standard health service and reflection (so `grpcurl` works). `run_until_signalled` starts it
and its `/metrics` endpoint, and on SIGTERM or SIGINT sets every health status to NOT_SERVING,
stops accepting, lets in-flight calls finish for the grace period, runs the service's own
shutdown, then stops `/metrics` and exports the spans still pending.
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
from .observability import Observability

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


# The command that runs each service: OTEL_SERVICE_NAME defaults to machiavelox-<command>.
COMMANDS = {
    "machiavelox.v1.GatewayService": "gateway",
    "machiavelox.v1.TableAuthorityService": "table",
    "machiavelox.v1.MatchmakingService": "matchmaking",
    "machiavelox.v1.ScoringService": "scoring",
    "machiavelox.v1.PresenceService": "presence",
}


def command_of(service_names: Sequence[str]) -> str:
    """The short name of the service serving `service_names` (gateway, table, ...)."""
    for name in service_names:
        if name in COMMANDS:
            return COMMANDS[name]
    if not service_names:
        return "service"
    return service_names[0].rsplit(".", 1)[-1].removesuffix("Service").lower() or "service"


class Service:
    """A running gRPC server; `bound_port` is the real port (useful with port 0).

    `observability`: the service's tracer, metrics registry and `/metrics` endpoint; made from
    the environment (OTEL_*, MACHIAVELOX_METRICS_*) when not given. `name` (default: from the
    service names) is the short name used in OTEL_SERVICE_NAME's default.
    """

    def __init__(self, endpoint: Endpoint, service_names: Sequence[str], register: Register,
                 interceptors: Sequence[grpc.aio.ServerInterceptor] = (), *,
                 name: str | None = None, observability: Observability | None = None) -> None:
        self.endpoint = endpoint
        self.service_names = list(service_names)
        self.name = name or command_of(self.service_names)
        self.observability = (observability if observability is not None
                              else Observability.from_env(self.name))
        self.server = grpc.aio.server(
            interceptors=[self.observability.server_interceptor(), ErrorInterceptor(),
                          *interceptors],
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

    @property
    def metrics_port(self) -> int:
        """The port `/metrics` listens on (0 before `start`)."""
        return self.observability.metrics_port

    async def start(self) -> None:
        self.observability.start(self.endpoint.host)
        await self.server.start()
        await self._set_all(health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        if on_stop is not None:
            await on_stop()
        await self.server.stop(self.endpoint.grace_s)

    async def close(self) -> None:
        """After `stop`: stop `/metrics` and export the spans still pending."""
        await asyncio.to_thread(self.observability.close)


async def run_until_signalled(service: Service, name: str,
                              before_stop: Callable[[], Awaitable[None]] | None = None,
                              after_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    """Start `service`, serve until SIGTERM/SIGINT, then shut down gracefully."""
    await service.start()
    try:
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
    finally:
        await service.close()
    log.info("%s stopped", name)
