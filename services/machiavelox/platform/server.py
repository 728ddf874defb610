"""The server lifecycle every service shares.

`Service` builds a grpc.aio server with the observability interceptor (a server span and the
`grpc_server_*` metrics for every call, see `observability.py`), the error interceptor, the
standard health service and reflection (so `grpcurl` works). `run_until_signalled` starts it
and its `/metrics` endpoint, and on SIGTERM or SIGINT sets every health status to NOT_SERVING,
stops accepting, lets in-flight calls finish for the grace period, runs the service's own
shutdown, then stops `/metrics` and exports the spans still pending.

Settings every service reads here:

    MACHIAVELOX_REFLECTION     true (default) | false: serve gRPC server reflection (the Helm
                               chart turns it off on the public gateway: docs/security.md)
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection as grpc_reflection

from . import keepalive
from .authz import AuthorizationInterceptor
from .errors import ErrorInterceptor
from .observability import Observability
from .settings import env_bool, env_port, env_str
from .tls import ROLES, InternalTls

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
    "machiavelox.v1.BotHostService": "bot-host",
}


def health_port_from_env() -> int | None:
    """MACHIAVELOX_HEALTH_PORT: a second, plaintext port serving only grpc.health.v1, for
    probes that cannot present a client certificate (Kubernetes' gRPC probes); unset: none."""
    if not env_str("HEALTH_PORT", ""):
        return None
    return env_port("HEALTH_PORT", 0)


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
    service names) is the short name used in OTEL_SERVICE_NAME's default. `reflection`: serve
    gRPC server reflection; MACHIAVELOX_REFLECTION (default true) when not given.

    An internal server listens with mutual TLS and authorizes every call by the caller's role
    (`platform/tls.py`, `platform/authz.py`): `tls` is this process's credentials, read from
    MACHIAVELOX_INTERNAL_TLS and MACHIAVELOX_TLS_* when not given (SettingsError when they are
    missing or wrong). `plaintext` servers are not internal: the gateway's public endpoint
    (its callers are apps, authenticated by their token) and the controller's health
    endpoint. MACHIAVELOX_HEALTH_PORT adds a plaintext port serving only health. `options`:
    more gRPC server options (the gateway's smaller message limit).
    """

    def __init__(self, endpoint: Endpoint, service_names: Sequence[str], register: Register,
                 interceptors: Sequence[grpc.aio.ServerInterceptor] = (), *,
                 name: str | None = None, observability: Observability | None = None,
                 reflection: bool | None = None, tls: InternalTls | None = None,
                 plaintext: bool = False,
                 options: Sequence[tuple[str, int | str]] = ()) -> None:
        self.endpoint = endpoint
        self.service_names = list(service_names)
        self.name = name or command_of(self.service_names)
        if plaintext:
            self.tls = InternalTls.off()
        else:
            self.tls = tls if tls is not None else InternalTls.from_env(
                self.name if self.name in ROLES else None)
            if not self.tls.enabled:
                log.warning("internal mTLS is off (MACHIAVELOX_INTERNAL_TLS=off): callers are "
                            "neither authenticated nor authorized here; the service mesh must")
        authz = [AuthorizationInterceptor()] if self.tls.enabled else []
        self.observability = (observability if observability is not None
                              else Observability.from_env(self.name))
        self.server = grpc.aio.server(
            interceptors=[self.observability.server_interceptor(), ErrorInterceptor(),
                          *authz, *interceptors],
            options=keepalive.with_options([("grpc.so_reuseport", 0), *keepalive.SERVER],
                                           options))
        register(self.server)
        self.health = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self.reflection = env_bool("REFLECTION", True) if reflection is None else reflection
        if self.reflection:
            grpc_reflection.enable_server_reflection(
                [*self.service_names, health.SERVICE_NAME, grpc_reflection.SERVICE_NAME],
                self.server)
        self.bound_port = self.tls.add_port(self.server, endpoint.address)
        if self.bound_port == 0:
            raise OSError(f"cannot listen on {endpoint.address}")
        self.health_server: grpc.aio.Server | None = None
        self.health_port = 0
        health_port = health_port_from_env()
        if health_port is not None:
            self.health_server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
            health_pb2_grpc.add_HealthServicer_to_server(self.health, self.health_server)
            address = f"{endpoint.host}:{health_port}"
            self.health_port = self.health_server.add_insecure_port(address)
            if self.health_port == 0:
                raise OSError(f"cannot listen on {address} (MACHIAVELOX_HEALTH_PORT)")

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
        if self.health_server is not None:
            await self.health_server.start()
            log.info("health (plaintext, grpc.health.v1 only) on port %d", self.health_port,
                     extra={"health_port": self.health_port})
        await self._set_all(health_pb2.HealthCheckResponse.SERVING)

    async def stop(self, on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
        await self._set_all(health_pb2.HealthCheckResponse.NOT_SERVING)
        if on_stop is not None:
            await on_stop()
        await self.server.stop(self.endpoint.grace_s)
        if self.health_server is not None:
            await self.health_server.stop(0)

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
