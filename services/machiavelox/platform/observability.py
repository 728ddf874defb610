"""A service's observability in one object: its tracer, its metrics registry, the gRPC
interceptors that trace and count every call, and the `/metrics` endpoint.

    obs = Observability.from_env("gateway")          # OTEL_*, MACHIAVELOX_METRICS_*
    metrics = GatewayMetrics(obs.registry)           # the service's own metrics
    service = Service(endpoint, names, register, observability=obs)
    await run_until_signalled(service, "gateway")    # starts /metrics; flushes spans at the end

`Service` makes one itself when given none, so every service has `/metrics`, gRPC server
metrics and server spans without asking. `trust_incoming=False` (the public gateway): calls do
not continue a caller's trace (see `TracingObserver`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector

from .instrument import ObservingInterceptor
from .metrics import GrpcServerMetrics, MetricsServer, MetricsSettings
from .telemetry import (
    UNTRACED_PREFIXES,
    ClientTracingInterceptor,
    Telemetry,
    TracingObserver,
    TracingSettings,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ObservabilitySettings:
    tracing: TracingSettings
    metrics: MetricsSettings

    @classmethod
    def from_env(cls, service: str,
                 env: Mapping[str, str] | None = None) -> ObservabilitySettings:
        """Raises SettingsError on a malformed OTEL_* or MACHIAVELOX_METRICS_* variable."""
        return cls(TracingSettings.from_env(service, env), MetricsSettings.from_env(env))


class Observability:
    def __init__(self, service: str, settings: ObservabilitySettings, *,
                 telemetry: Telemetry | None = None,
                 resource_attributes: Mapping[str, str] | None = None,
                 untraced: Sequence[str] = UNTRACED_PREFIXES,
                 trust_incoming: bool = True) -> None:
        self.service = service
        self.settings = settings
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.telemetry = telemetry if telemetry is not None else Telemetry(
            settings.tracing, resource_attributes=resource_attributes)
        self.grpc_metrics = GrpcServerMetrics(self.registry)
        self.metrics_server = MetricsServer(self.registry, settings.metrics)
        self._untraced = tuple(untraced)
        self._trust_incoming = trust_incoming
        self._started = False

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None,
                 resource_attributes: Mapping[str, str] | None = None) -> Observability:
        return cls(service, ObservabilitySettings.from_env(service, env),
                   resource_attributes=resource_attributes)

    @property
    def tracer(self) -> Any:
        return self.telemetry.tracer

    @property
    def metrics_port(self) -> int:
        """The port `/metrics` listens on (0 before `start`)."""
        return self.metrics_server.port

    def server_interceptor(self) -> ObservingInterceptor:
        """Traces and counts every call in one wrapper (put it first: it sees the status the
        error interceptor gives)."""
        return ObservingInterceptor([
            TracingObserver(self.telemetry, self._untraced, self._trust_incoming),
            self.grpc_metrics])

    def client_interceptors(self) -> list[Any]:
        """For `grpc.aio.insecure_channel(address, interceptors=...)`: outgoing calls carry
        the current trace context (and unary ones get a client span)."""
        return [ClientTracingInterceptor(self.telemetry)]

    def start(self, default_host: str) -> int:
        """Serve `/metrics` (on `default_host` unless MACHIAVELOX_METRICS_HOST says otherwise)
        and log where, with the tracing set-up. Returns the port."""
        if self._started:
            return self.metrics_port
        port = self.metrics_server.start(default_host)
        self._started = True
        log.info("metrics on %s; %s", self.metrics_server.url, self.telemetry.describe(),
                 extra={"metrics_port": port})
        return port

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop serving `/metrics`; export the spans still pending (at most `timeout_s`)."""
        self.metrics_server.stop()
        self.telemetry.shutdown(timeout_s)
