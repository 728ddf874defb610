"""Prometheus metrics: the `/metrics` endpoint, gRPC server metrics, shared bucket layouts.

Every service has its own `CollectorRegistry` (made by `Observability`, passed to whoever
defines metrics: `GatewayMetrics(registry)`, `ShardMetrics(registry, shard_id)`, ...), served
over HTTP on its own port by `MetricsServer`:

    MACHIAVELOX_METRICS_PORT   9464 (OpenTelemetry's Prometheus port). 0: any free port. When
                               the port is left unset and 9464 is taken (several services on
                               one machine), a free port is used instead, with a warning; a
                               port that was set and is taken refuses to start.
    MACHIAVELOX_METRICS_HOST   where to listen; default: the service's gRPC host

The port actually bound is logged once as JSON (`"metrics_port": 9464`) and is
`Observability.metrics_port` / `Service.metrics_port`.

Names follow Prometheus' conventions: base units (`_seconds`), `_total` for counters, a
`machiavelox_<service>_` prefix for the game's own metrics and the `grpc_server_` names of
go-grpc-prometheus for the RPCs, so dashboards written for those work here.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

import grpc
from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server

from machiavelox._gen.v1 import classic_pb2, common_pb2

from .instrument import End, ObservingInterceptor, RpcMethod
from .settings import env_port, env_str

# The outcome labels of an action's metrics (the gateway's and the shard's), and every kind
# of action an app can send: the `kind` oneof of `Action`.
ACCEPTED = "accepted"
REFUSED = "refused"
OUTCOMES = (ACCEPTED, REFUSED)
ACTION_KINDS: tuple[str, ...] = tuple(
    f.name for f in common_pb2.Action.DESCRIPTOR.oneofs_by_name["kind"].fields)
# ... and of a classic table (issue 16): `classic-` and the verb of `ClassicAction` (the
# shard's label for them too, table/classic_table.py), so no kind names two actions.
CLASSIC_PREFIX = "classic-"
CLASSIC_ACTION_KINDS: tuple[str, ...] = tuple(
    CLASSIC_PREFIX + f.name
    for f in classic_pb2.ClassicAction.DESCRIPTOR.oneofs_by_name["kind"].fields)

log = logging.getLogger(__name__)

DEFAULT_PORT = 9464

# Bucket layouts (upper bounds, seconds), shared so that dashboards compare like with like.
RPC_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
               10.0)
"""A request answered over the network: half a millisecond to ten seconds."""
ACTION_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.075,
                  0.1, 0.25, 0.5, 1.0)
"""A player's action, arrival to acknowledgement (and event delivery): fine where it matters
for fastest-wins (1-25 ms)."""
LOOP_BUCKETS = (0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                0.025, 0.05, 0.1, 0.25)
"""Work inside one process's event loop (a table's queue wait, applying an action): ten
microseconds to a quarter of a second."""
WAIT_BUCKETS = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
"""People waiting (matchmaking): half a second to half an hour."""


def read_safely(read: Callable[[], float], tries: int = 3) -> Callable[[], float]:
    """A gauge callback for `set_function`: it runs in the scrape's thread while the event
    loop may be changing what it reads (a dict resized mid-iteration raises RuntimeError):
    try again a few times, then report NaN rather than fail the whole scrape."""

    def safe() -> float:
        for _ in range(tries):
            try:
                return float(read())
            except RuntimeError:
                continue
        return float("nan")

    return safe


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class MetricsSettings:
    host: str  # "" = the service's gRPC host
    port: int  # 0 = any free port
    port_set: bool  # MACHIAVELOX_METRICS_PORT was given: a taken port is an error

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MetricsSettings:
        source = os.environ if env is None else env
        port = env_port("METRICS_PORT", DEFAULT_PORT, env)
        return cls(host=env_str("METRICS_HOST", "", env), port=port,
                   port_set=bool(source.get("MACHIAVELOX_METRICS_PORT", "")))


# ---------------------------------------------------------------------------------- gRPC
class GrpcServerMetrics:
    """Per method and status code, like go-grpc-prometheus:

    - grpc_server_started_total{grpc_service, grpc_method, grpc_type}
    - grpc_server_handled_total{grpc_service, grpc_method, grpc_type, grpc_code}
    - grpc_server_handling_seconds{grpc_service, grpc_method, grpc_type} (histogram; for
      streams, the life of the stream)

    grpc_code is the status name (OK, NOT_FOUND, FAILED_PRECONDITION, ...), grpc_type one of
    unary, client_stream, server_stream, bidi_stream. An `RpcObserver` (see instrument.py).
    """

    LABELS = ("grpc_service", "grpc_method", "grpc_type")

    def __init__(self, registry: CollectorRegistry) -> None:
        self.started = Counter("grpc_server_started_total", "RPCs started on the server.",
                               self.LABELS, registry=registry)
        self.handled = Counter("grpc_server_handled_total",
                               "RPCs completed on the server, whatever their status.",
                               (*self.LABELS, "grpc_code"), registry=registry)
        self.handling = Histogram("grpc_server_handling_seconds",
                                  "Time from the start of an RPC to its status being sent.",
                                  self.LABELS, buckets=RPC_BUCKETS, registry=registry)
        self._children: dict[RpcMethod, tuple[Any, Any]] = {}
        self._handled: dict[tuple[RpcMethod, grpc.StatusCode], Any] = {}

    def begin(self, method: RpcMethod, context: Any) -> End:
        children = self._children.get(method)
        if children is None:
            labels = (method.service, method.name, method.type)
            children = self._children[method] = (self.started.labels(*labels),
                                                 self.handling.labels(*labels))
        started, handling = children
        started.inc()
        t0 = time.perf_counter()

        def end(code: grpc.StatusCode, exc: BaseException | None) -> None:
            handling.observe(time.perf_counter() - t0)
            key = (method, code)
            child = self._handled.get(key)
            if child is None:
                child = self._handled[key] = self.handled.labels(
                    method.service, method.name, method.type, code.name)
            child.inc()

        return end


class MetricsInterceptor(ObservingInterceptor):
    """The server interceptor for gRPC metrics alone (`Observability` combines it with
    tracing in one wrapper)."""

    def __init__(self, metrics: GrpcServerMetrics) -> None:
        super().__init__([metrics])


# ---------------------------------------------------------------------------------- /metrics
class MetricsServer:
    """`/metrics` over HTTP for one registry, served by a thread (as prometheus-client does):
    a scrape never waits for the event loop, and the event loop never waits for a scrape."""

    def __init__(self, registry: CollectorRegistry, settings: MetricsSettings) -> None:
        self.registry = registry
        self.settings = settings
        self.port = 0
        self.host = ""
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self, default_host: str) -> int:
        """Listen and return the port bound (see the module docstring for a taken port)."""
        host = self.settings.host or default_host
        port = self.settings.port
        try:
            server, thread = start_http_server(port, addr=host, registry=self.registry)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or self.settings.port_set or port == 0:
                raise OSError(f"cannot serve /metrics on {host}:{port}: {exc}") from exc
            log.warning("metrics port %d is taken (MACHIAVELOX_METRICS_PORT is not set): "
                        "serving /metrics on a free port instead", port)
            server, thread = start_http_server(0, addr=host, registry=self.registry)
        self._server, self._thread = server, thread
        self.host, self.port = host, int(server.server_port)
        return self.port

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
