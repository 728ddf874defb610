"""Tracing with the OpenTelemetry SDK: set-up from the standard `OTEL_*` variables, W3C trace
context in gRPC metadata and in plain strings, and our own server and client interceptors.

Configuration (read once at start-up; a bad value refuses to start, like every setting):

    OTEL_SDK_DISABLED              true: no tracing at all
    OTEL_SERVICE_NAME              machiavelox-<service> (machiavelox-gateway, -table, ...)
    OTEL_RESOURCE_ATTRIBUTES       extra resource attributes (k=v,k=v), read by the SDK
    OTEL_TRACES_EXPORTER           otlp | console | none; several separated by commas. Unset:
                                   otlp when an OTLP endpoint is set (below), else none, so a
                                   service without a collector neither spends time on spans
                                   nor logs export failures
    OTEL_EXPORTER_OTLP_ENDPOINT    the collector, e.g. http://otel-collector:4317 (OTLP over
                                   gRPC; http:// means no TLS); also _TRACES_ENDPOINT,
                                   _HEADERS, _TIMEOUT, _COMPRESSION, _CERTIFICATE, read by
                                   the exporter itself
    OTEL_EXPORTER_OTLP_PROTOCOL    grpc (the only one shipped; anything else is refused)
    OTEL_TRACES_SAMPLER            parentbased_traceidratio (default), parentbased_always_on,
                                   parentbased_always_off, traceidratio, always_on, always_off
    OTEL_TRACES_SAMPLER_ARG        the ratio for the *traceidratio samplers: DEFAULT_RATIO
                                   (0.01, one action in a hundred) unless set
    OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE, ...   the batch span processor's knobs

Who decides a trace: internal services continue their caller's (`TracingObserver` with
`trust_incoming`, the default); the public gateway starts a fresh trace for every call, sampled
by its own sampler, and ignores an app's `traceparent`/`tracestate` unless the setting
`MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT` says to trust them (so no app can force sampling or
join our traces). Values a client chose become span attributes only through `errors.shown`
(cut to 64 characters).

One action is one trace: the gateway starts its root span, and the trace context travels with
the action inside the multiplexed gateway-shard stream as a `traceparent` string (one stream
carries many actions, so per-call gRPC metadata cannot carry it). Ordinary calls carry it in
gRPC metadata (`traceparent`, `tracestate`): `TracingObserver` (server side, see
`instrument.py`) makes the incoming context the parent of its server span and the current
context of the servicer; `ClientTracingInterceptor` adds the current context to outgoing calls.

Nothing here is global: a `Telemetry` owns its tracer provider and is passed to whoever needs
its tracer. Only the current span lives in OpenTelemetry's context (a contextvar), as it must.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import Attributes

from .errors import REASON_KEY
from .instrument import End, ObservingInterceptor, RpcMethod
from .settings import SettingsError

log = logging.getLogger(__name__)

DEFAULT_RATIO = 0.01
DEFAULT_SAMPLER = "parentbased_traceidratio"
SAMPLERS = ("always_on", "always_off", "traceidratio", "parentbased_always_on",
            "parentbased_always_off", "parentbased_traceidratio")
EXPORTERS = ("otlp", "console", "none")
INSTRUMENTATION = "machiavelox"

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

# Calls not traced by default: probes and tooling, not the game.
UNTRACED_PREFIXES = ("/grpc.health.v1.Health/", "/grpc.reflection.")

# gRPC codes that mark a server span as failed (OpenTelemetry's semantic conventions): the
# others (NOT_FOUND, FAILED_PRECONDITION, ...) are refusals the service meant to give.
SERVER_ERROR_CODES = frozenset({
    grpc.StatusCode.UNKNOWN, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.INTERNAL, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS})


class Attr:
    """Span attribute names (docs/operations.md lists what each span carries)."""

    # standard (OpenTelemetry semantic conventions for RPC)
    RPC_SYSTEM = "rpc.system"
    RPC_SERVICE = "rpc.service"
    RPC_METHOD = "rpc.method"
    RPC_GRPC_STATUS_CODE = "rpc.grpc.status_code"
    # ours
    REASON = "machiavelox.reason"  # the stable refusal reason of a failed call
    PLAYER = "machiavelox.player"
    TABLE = "machiavelox.table_id"
    SHARD = "machiavelox.shard_id"
    GATEWAY = "machiavelox.gateway_id"
    ACTION_KIND = "machiavelox.action.kind"  # draw, declare, take, ... (the Action oneof)
    CLIENT_ACTION_ID = "machiavelox.action.client_action_id"
    CLIENT_SENT_MS = "machiavelox.action.client_sent_ms"  # when the app provides it
    ARRIVAL = "machiavelox.action.arrival_index"
    SEQ = "machiavelox.table.seq"  # the table sequence number of the action's first event
    OUTCOME = "machiavelox.action.outcome"  # accepted | refused
    REFUSAL_CODE = "machiavelox.refusal.code"  # card/held, meld/irregular, ...
    WINNER_SEQ = "machiavelox.conflict.winner_seq"  # a lost conflict: the winner's seq
    EVENTS = "machiavelox.events"  # how many events a delivery carried
    TICKET = "machiavelox.ticket_id"


class SpanName:
    """Span names of the per-action trace (the gateway and the shard create these)."""

    GATEWAY_ACTION = "gateway.action"  # root: arrival at the gateway -> ack/refusal sent back
    SHARD_QUEUE = "shard.queue"  # the action waiting in its table's queue
    SHARD_APPLY = "shard.apply"  # the rules engine applying it
    GATEWAY_DELIVER = "gateway.deliver"  # its events written to one player's Play stream
    MATCHMAKING_PLACE = "matchmaking.place"  # one round of table creation on the shards


# ---------------------------------------------------------------------------------- settings
@dataclass(frozen=True)
class TracingSettings:
    service_name: str
    exporters: tuple[str, ...]  # subset of EXPORTERS without "none"; () = tracing off
    sampler: str
    ratio: float

    @property
    def enabled(self) -> bool:
        return bool(self.exporters)

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None) -> TracingSettings:
        source = os.environ if env is None else env

        def get(name: str) -> str:
            return source.get(name, "").strip()

        name = get("OTEL_SERVICE_NAME") or f"machiavelox-{service}"
        if get("OTEL_SDK_DISABLED").lower() == "true":
            return cls(name, (), DEFAULT_SAMPLER, DEFAULT_RATIO)
        raw = get("OTEL_TRACES_EXPORTER").lower()
        if not raw:
            endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or get(
                "OTEL_EXPORTER_OTLP_ENDPOINT")
            raw = "otlp" if endpoint else "none"
        exporters = tuple(dict.fromkeys(e.strip() for e in raw.split(",") if e.strip()))
        for exporter in exporters:
            if exporter not in EXPORTERS:
                raise SettingsError(f"OTEL_TRACES_EXPORTER must be {', '.join(EXPORTERS)} "
                                    f"(or several, comma-separated), not {exporter!r}")
        exporters = tuple(e for e in exporters if e != "none")
        if "otlp" in exporters:
            for var in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
                protocol = get(var)
                if protocol and protocol != "grpc":
                    raise SettingsError(f"{var} must be grpc (OTLP over gRPC is the exporter "
                                        f"shipped), not {protocol!r}")
                if protocol:
                    break
        sampler = get("OTEL_TRACES_SAMPLER").lower() or DEFAULT_SAMPLER
        if sampler not in SAMPLERS:
            raise SettingsError(f"OTEL_TRACES_SAMPLER must be one of {', '.join(SAMPLERS)}, "
                                f"not {sampler!r}")
        ratio = DEFAULT_RATIO
        arg = get("OTEL_TRACES_SAMPLER_ARG")
        if arg and sampler.endswith("traceidratio"):
            try:
                ratio = float(arg)
            except ValueError:
                raise SettingsError(f"OTEL_TRACES_SAMPLER_ARG must be a number between 0 and 1, "
                                    f"not {arg!r}") from None
            if not 0.0 <= ratio <= 1.0:
                raise SettingsError(f"OTEL_TRACES_SAMPLER_ARG must be between 0 and 1, "
                                    f"not {ratio}")
        return cls(name, exporters, sampler, ratio)

    def make_sampler(self) -> Sampler:
        root: Sampler
        base = self.sampler.removeprefix("parentbased_")
        if base == "always_on":
            root = ALWAYS_ON
        elif base == "always_off":
            root = ALWAYS_OFF
        else:
            root = TraceIdRatioBased(self.ratio)
        return ParentBased(root) if self.sampler.startswith("parentbased_") else root


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, TLS, headers, timeout: the OTEL_EXPORTER_OTLP_* vars


# ---------------------------------------------------------------------------------- telemetry
class Telemetry:
    """A service's tracer provider and tracer.

    `exporters` replaces the ones the settings name (tests, benchmarks). With tracing off the
    tracer is a no-op: spans cost next to nothing and carry no context.
    """

    def __init__(self, settings: TracingSettings, exporters: Sequence[SpanExporter] | None = None,
                 resource_attributes: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        chosen = list(exporters) if exporters is not None else [
            _exporter(name) for name in settings.exporters]
        self.enabled = bool(chosen)
        self.provider: TracerProvider | None = None
        self.tracer: trace.Tracer
        if not self.enabled:
            self.tracer = trace.NoOpTracer()
            return
        attributes: dict[str, str] = {"service.name": settings.service_name,
                                      "service.namespace": "machiavelox"}
        attributes.update(resource_attributes or {})
        self.provider = TracerProvider(sampler=settings.make_sampler(),
                                       resource=Resource.create(attributes))
        for exporter in chosen:
            self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer(INSTRUMENTATION)

    @classmethod
    def from_env(cls, service: str, env: Mapping[str, str] | None = None) -> Telemetry:
        return cls(TracingSettings.from_env(service, env))

    def describe(self) -> str:
        s = self.settings
        if not self.enabled:
            return "tracing off"
        sampler = s.sampler + (f"({s.ratio:g})" if s.sampler.endswith("ratio") else "")
        return f"tracing to {', '.join(s.exporters) or 'custom exporters'}, sampler {sampler}"

    # ------------------------------------------------------------------ spans
    def start_span(self, name: str, *, traceparent: str | None = None,
                   context: Context | None = None, kind: SpanKind = SpanKind.INTERNAL,
                   attributes: Attributes = None, links: Sequence[Link] = (),
                   start_ns: int | None = None) -> Span:
        """Start a span (end it with `span.end()`); it does not become the current span.

        The parent: the span that `traceparent` names ("" or malformed: a new trace), else
        `context`, else the current span. In a long-lived stream's task the current span is
        the stream's, so per-action spans should always pass `traceparent`.
        """
        if traceparent is not None:
            context = context_from_traceparent(traceparent)
        return self.tracer.start_span(name, context=context, kind=kind, attributes=attributes,
                                      links=links, start_time=start_ns)

    def record_span(self, name: str, start_ns: int, end_ns: int, *,
                    traceparent: str | None = None, context: Context | None = None,
                    kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes = None,
                    links: Sequence[Link] = ()) -> Span:
        """A span that already happened (a wait measured with `time.time_ns()`): started and
        ended at once; returned so its context can parent the next span."""
        span = self.start_span(name, traceparent=traceparent, context=context, kind=kind,
                               attributes=attributes, links=links, start_ns=start_ns)
        span.end(end_time=end_ns)
        return span

    @contextmanager
    def span(self, name: str, *, traceparent: str | None = None, context: Context | None = None,
             kind: SpanKind = SpanKind.INTERNAL, attributes: Attributes = None,
             links: Sequence[Link] = ()) -> Iterator[Span]:
        """A span that is the current span inside the block (ended, and failed on an
        exception, when the block ends)."""
        span = self.start_span(name, traceparent=traceparent, context=context, kind=kind,
                               attributes=attributes, links=links)
        with trace.use_span(span, end_on_exit=True):
            yield span

    # ------------------------------------------------------------------ lifecycle
    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Export what is pending (at most `timeout_s`), then stop exporting."""
        if self.provider is None:
            return
        if not self.provider.force_flush(int(timeout_s * 1000)):
            log.warning("not every span was exported within %.1f s", timeout_s)
        self.provider.shutdown()
        self.provider = None


# ---------------------------------------------------------------------------------- context
_PROPAGATOR = TraceContextTextMapPropagator()


def traceparent(span: Span | None = None) -> str:
    """The W3C `traceparent` of `span` (default: the current span); "" if there is none."""
    ctx = (span if span is not None else trace.get_current_span()).get_span_context()
    if not ctx.is_valid:
        return ""
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


def tracestate(span: Span | None = None) -> str:
    ctx = (span if span is not None else trace.get_current_span()).get_span_context()
    return ctx.trace_state.to_header() if ctx.is_valid and ctx.trace_state else ""


def context_from_traceparent(value: str, state: str = "") -> Context:
    """A context whose parent is the span `value` names; an empty context (a new trace) when
    `value` is empty or malformed. Never the current context."""
    if not value:
        return Context()
    carrier = {TRACEPARENT: value}
    if state:
        carrier[TRACESTATE] = state
    return _PROPAGATOR.extract(carrier, context=Context())


def span_context_from_traceparent(value: str) -> SpanContext | None:
    """The span `value` names (for a link), or None."""
    ctx = trace.get_current_span(context_from_traceparent(value)).get_span_context()
    return ctx if ctx.is_valid else None


def link_to(target: Span | SpanContext | str, attributes: Attributes = None) -> Link | None:
    """A link to a span, its context, or its traceparent; None if there is nothing to link."""
    if isinstance(target, str):
        ctx = span_context_from_traceparent(target)
    elif isinstance(target, SpanContext):
        ctx = target
    else:
        ctx = target.get_span_context()
    if ctx is None or not ctx.is_valid:
        return None
    return Link(ctx, attributes)


def mark_lost_to(span: Span, winner_seq: int, winner: Span | SpanContext | str | None) -> None:
    """A refused action lost a conflict: record the winner's sequence number and link to the
    winning action's span (when it is known)."""
    span.set_attribute(Attr.WINNER_SEQ, winner_seq)
    if winner is None:
        return
    link = link_to(winner, {Attr.SEQ: winner_seq})
    if link is not None:
        span.add_link(link.context, link.attributes)


def inject_carrier(carrier: dict[str, str], span: Span | None = None) -> dict[str, str]:
    """Put the trace context of `span` (default: the current span) into a dict."""
    value = traceparent(span)
    if value:
        carrier[TRACEPARENT] = value
        state = tracestate(span)
        if state:
            carrier[TRACESTATE] = state
    return carrier


def extract_carrier(carrier: Mapping[str, str]) -> Context:
    return context_from_traceparent(carrier.get(TRACEPARENT, ""), carrier.get(TRACESTATE, ""))


Metadata = Sequence[tuple[str, str | bytes]]


def inject_metadata(metadata: Metadata | None = None,
                    span: Span | None = None) -> tuple[tuple[str, str | bytes], ...]:
    """`metadata` plus the trace context of `span` (default: the current span), replacing any
    trace context already there: pass the result as a call's `metadata=`."""
    out = tuple((k, v) for k, v in (metadata or ()) if k not in (TRACEPARENT, TRACESTATE))
    return out + tuple(inject_carrier({}, span).items())


def extract_metadata(metadata: Metadata | None) -> Context:
    """The parent context that gRPC metadata carries (an empty context if none)."""
    parent = state = ""
    for key, value in metadata or ():
        if key == TRACEPARENT:
            parent = value.decode() if isinstance(value, bytes) else value
        elif key == TRACESTATE:
            state = value.decode() if isinstance(value, bytes) else value
    return context_from_traceparent(parent, state)


# ---------------------------------------------------------------------------------- winners
class RecentSpans:
    """The spans of the last `capacity` winners of something contended (a card at a table):
    when a later action loses the conflict, its span links to the winner's.

        winners.remember((table_id, card), seq, apply_span)
        ...
        found = winners.recall((table_id, card))
        if found: mark_lost_to(span, *found)
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Hashable, tuple[int, SpanContext | None]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def remember(self, key: Hashable, seq: int, span: Span | SpanContext | None) -> None:
        """The winner of `key` at `seq`; its span may be None or unsampled (then a loser gets
        the winner's sequence number without a link)."""
        ctx = span if isinstance(span, SpanContext) or span is None else span.get_span_context()
        self._items[key] = (seq, ctx if ctx is not None and ctx.is_valid else None)
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def recall(self, key: Hashable) -> tuple[int, SpanContext | None] | None:
        return self._items.get(key)

    def forget(self, key: Hashable) -> None:
        self._items.pop(key, None)


# ---------------------------------------------------------------------------------- server
class TracingObserver:
    """A SERVER span per call, child of the trace context in the call's metadata, current
    while the servicer runs. Calls whose method starts with one of `skip` get no span (with
    tracing off, none do) but still pass the incoming context on to the calls they make.

    `trust_incoming` False (the public edge): the metadata's trace context is ignored, every
    call is the root of a new trace, sampled (or not) by this service's own sampler."""

    def __init__(self, telemetry: Telemetry, skip: Sequence[str] = UNTRACED_PREFIXES,
                 trust_incoming: bool = True) -> None:
        self.telemetry = telemetry
        self.skip = tuple(skip)
        self.trust_incoming = trust_incoming

    def begin(self, method: RpcMethod, context: Any) -> End | None:
        if method.full.startswith(self.skip):
            return None
        if self.trust_incoming:
            parent = extract_metadata(context.invocation_metadata())
        elif self.telemetry.enabled:
            parent = Context()  # a new trace, whatever the caller sent
        else:
            return None
        if not self.telemetry.enabled:
            if not trace.get_current_span(parent).get_span_context().is_valid:
                return None
            return _detacher(otel_context.attach(parent))
        span = self.telemetry.tracer.start_span(
            f"{method.service}/{method.name}", context=parent, kind=SpanKind.SERVER,
            attributes={Attr.RPC_SYSTEM: "grpc", Attr.RPC_SERVICE: method.service,
                        Attr.RPC_METHOD: method.name})
        token = otel_context.attach(trace.set_span_in_context(span, parent))

        def end(code: grpc.StatusCode, exc: BaseException | None) -> None:
            if span.is_recording():
                span.set_attribute(Attr.RPC_GRPC_STATUS_CODE, code.value[0])
                if code is not grpc.StatusCode.OK:
                    reason = _reason(context)
                    if reason:
                        span.set_attribute(Attr.REASON, reason)
                if code in SERVER_ERROR_CODES:
                    span.set_status(Status(StatusCode.ERROR, code.name))
                    if exc is not None and code is grpc.StatusCode.UNKNOWN:
                        span.record_exception(exc)
            span.end()
            # A stream finalised outside its task (GeneratorExit) ends in another context:
            # nothing to restore there, and its own task's context died with the task.
            if not isinstance(exc, GeneratorExit):
                otel_context.detach(token)

        return end


def _detacher(token: contextvars.Token[Context]) -> End:
    def end(code: grpc.StatusCode, exc: BaseException | None) -> None:
        if not isinstance(exc, GeneratorExit):
            otel_context.detach(token)

    return end


def _reason(context: Any) -> str:
    for key, value in context.trailing_metadata() or ():
        if key == REASON_KEY:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


class TracingInterceptor(ObservingInterceptor):
    """The server interceptor for tracing alone (`Observability` combines it with metrics)."""

    def __init__(self, telemetry: Telemetry, skip: Sequence[str] = UNTRACED_PREFIXES,
                 trust_incoming: bool = True) -> None:
        super().__init__([TracingObserver(telemetry, skip, trust_incoming)])


# ---------------------------------------------------------------------------------- client
def _with_trace(details: Any, span: Span | None) -> Any:
    pairs = inject_metadata(tuple(details.metadata or ()), span)
    return details._replace(metadata=grpc.aio.Metadata(*pairs))


class ClientTracingInterceptor(
        grpc.aio.UnaryUnaryClientInterceptor,  # type: ignore[misc]
        grpc.aio.UnaryStreamClientInterceptor,  # type: ignore[misc]
        grpc.aio.StreamUnaryClientInterceptor,  # type: ignore[misc]
        grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    """For a channel's `interceptors=`: each unary call gets a CLIENT span (child of the
    current span) whose context goes out in the call's metadata; streaming calls carry the
    current context without a span of their own (the server's span covers the stream)."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry

    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any,
                                    request: Any) -> Any:
        if not self.telemetry.enabled:
            return await continuation(_with_trace(client_call_details, None), request)
        full = client_call_details.method
        full = full.decode() if isinstance(full, bytes) else str(full)
        method = RpcMethod.parse(full, "unary")
        span = self.telemetry.tracer.start_span(
            f"{method.service}/{method.name}", kind=SpanKind.CLIENT,
            attributes={Attr.RPC_SYSTEM: "grpc", Attr.RPC_SERVICE: method.service,
                        Attr.RPC_METHOD: method.name})
        code = grpc.StatusCode.UNKNOWN
        try:
            call = await continuation(_with_trace(client_call_details, span), request)
            try:
                await call
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as err:
                code = err.code()
            return call
        except BaseException as exc:
            if isinstance(exc, grpc.aio.AioRpcError):
                code = exc.code()
            elif isinstance(exc, asyncio.CancelledError):
                code = grpc.StatusCode.CANCELLED
            raise
        finally:
            span.set_attribute(Attr.RPC_GRPC_STATUS_CODE, code.value[0])
            if code is not grpc.StatusCode.OK:
                span.set_status(Status(StatusCode.ERROR, code.name))
            span.end()

    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any,
                                     request: Any) -> Any:
        return await continuation(_with_trace(client_call_details, None), request)

    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any,
                                     request_iterator: Any) -> Any:
        return await continuation(_with_trace(client_call_details, None), request_iterator)

    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any,
                                      request_iterator: Any) -> Any:
        return await continuation(_with_trace(client_call_details, None), request_iterator)


def now_ns() -> int:
    """Wall-clock ns, the time base of span timestamps (for `record_span`)."""
    return time.time_ns()
