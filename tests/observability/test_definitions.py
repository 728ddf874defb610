"""Settings from the standard variables, trace context in strings and metadata, and the metric
classes the services feed (with the rules engine's real events)."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from prometheus_client import CollectorRegistry

from machiavelox import rules
from machiavelox.gateway.metrics import GatewayMetrics, action_kind
from machiavelox.matchmaking.metrics import MatchmakingMetrics
from machiavelox.platform.metrics import ACTION_KINDS, MetricsSettings, read_safely
from machiavelox.platform.settings import SettingsError
from machiavelox.platform.telemetry import (
    DEFAULT_RATIO,
    Attr,
    RecentSpans,
    Telemetry,
    TracingSettings,
    context_from_traceparent,
    extract_carrier,
    extract_metadata,
    inject_carrier,
    inject_metadata,
    link_to,
    mark_lost_to,
    span_context_from_traceparent,
    traceparent,
)
from machiavelox.table.metrics import ShardMetrics

K = rules.EventKind

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


# ---------------------------------------------------------------------------------- settings
def test_tracing_is_off_unless_an_exporter_or_an_endpoint_is_set() -> None:
    off = TracingSettings.from_env("gateway", {})
    assert not off.enabled and off.service_name == "machiavelox-gateway"
    assert off.sampler == "parentbased_traceidratio" and off.ratio == DEFAULT_RATIO == 0.01
    on = TracingSettings.from_env("table", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"})
    assert on.exporters == ("otlp",)
    both = TracingSettings.from_env("table", {"OTEL_TRACES_EXPORTER": "console, otlp",
                                              "OTEL_SERVICE_NAME": "shard-a"})
    assert both.exporters == ("console", "otlp") and both.service_name == "shard-a"
    assert TracingSettings.from_env("x", {"OTEL_TRACES_EXPORTER": "none"}).exporters == ()
    assert not TracingSettings.from_env("x", {"OTEL_SDK_DISABLED": "true",
                                              "OTEL_TRACES_EXPORTER": "otlp"}).enabled


def test_the_sampler_is_parent_based_ratio_by_default() -> None:
    settings = TracingSettings.from_env("x", {"OTEL_TRACES_SAMPLER_ARG": "0.25"})
    sampler = settings.make_sampler()
    assert isinstance(sampler, ParentBased) and settings.ratio == 0.25
    plain = TracingSettings.from_env("x", {"OTEL_TRACES_SAMPLER": "traceidratio"}).make_sampler()
    assert isinstance(plain, TraceIdRatioBased) and plain.rate == DEFAULT_RATIO


@pytest.mark.parametrize("env, message", [
    ({"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER must be"),
    ({"OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER must be one of"),
    ({"OTEL_TRACES_SAMPLER_ARG": "half"}, "must be a number"),
    ({"OTEL_TRACES_SAMPLER_ARG": "2"}, "between 0 and 1"),
    ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
     "must be grpc"),
])
def test_malformed_tracing_variables_are_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        TracingSettings.from_env("x", env)


def test_the_metrics_port() -> None:
    assert MetricsSettings.from_env({}) == MetricsSettings("", 9464, False)
    assert MetricsSettings.from_env({"MACHIAVELOX_METRICS_PORT": "0"}) == MetricsSettings(
        "", 0, True)
    assert MetricsSettings.from_env({"MACHIAVELOX_METRICS_HOST": "0.0.0.0"}).host == "0.0.0.0"
    for bad in ("-1", "70000", "x"):
        with pytest.raises(SettingsError):
            MetricsSettings.from_env({"MACHIAVELOX_METRICS_PORT": bad})


# ---------------------------------------------------------------------------------- context
def telemetry() -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    return Telemetry(TracingSettings("machiavelox-test", ("otlp",), "parentbased_always_on", 1.0),
                     exporters=[exporter]), exporter


def test_a_traceparent_string_carries_a_span_to_its_children() -> None:
    tel, exporter = telemetry()
    root = tel.start_span("gateway.action", traceparent="")
    carried = traceparent(root)
    assert carried.startswith(f"00-{root.get_span_context().trace_id:032x}-")
    assert int(carried[-2:], 16) & 1, "sampled"
    child = tel.start_span("shard.apply", traceparent=carried)
    waited = tel.record_span("shard.queue", 1_000, 2_000, traceparent=carried)
    child.end()
    root.end()
    assert tel.provider is not None
    tel.provider.force_flush()
    by_name = {s.name: s for s in exporter.get_finished_spans()}
    for name in ("shard.apply", "shard.queue"):
        parent = by_name[name].parent
        assert parent is not None
        assert parent.span_id == root.get_span_context().span_id
    assert (by_name["shard.queue"].start_time, by_name["shard.queue"].end_time) == (1000, 2000)
    assert waited.get_span_context().trace_id == root.get_span_context().trace_id
    tel.shutdown()


def test_empty_or_malformed_traceparents_start_new_traces() -> None:
    for bad in ("", "junk", "00-00000000000000000000000000000000-b7ad6b7169203331-01"):
        ctx = context_from_traceparent(bad)
        assert not trace.get_current_span(ctx).get_span_context().is_valid
        assert span_context_from_traceparent(bad) is None
        assert link_to(bad) is None
    assert traceparent() == "", "no current span, no traceparent"
    tel, _ = telemetry()
    with tel.span("outer") as outer:
        inner = tel.start_span("inner", traceparent="")  # "" means a new trace, not a child
        assert inner.get_span_context().trace_id != outer.get_span_context().trace_id
        inner.end()
    tel.shutdown()


def test_trace_context_in_metadata_and_dicts() -> None:
    ctx = span_context_from_traceparent(TP)
    assert ctx is not None and f"{ctx.span_id:016x}" == "b7ad6b7169203331"
    span = trace.NonRecordingSpan(ctx)
    metadata = inject_metadata((("authorization", "Bearer x"), ("traceparent", "old")), span)
    assert metadata == (("authorization", "Bearer x"), ("traceparent", TP))
    back = trace.get_current_span(extract_metadata(metadata)).get_span_context()
    assert (back.trace_id, back.span_id) == (ctx.trace_id, ctx.span_id)
    carrier = inject_carrier({}, span)
    assert carrier == {"traceparent": TP}
    assert trace.get_current_span(extract_carrier(carrier)).get_span_context() == back
    assert extract_metadata((("traceparent", TP.encode()),)) is not None


def test_a_lost_conflict_links_to_the_winner() -> None:
    tel, exporter = telemetry()
    winners = RecentSpans(capacity=2)
    won = tel.start_span("shard.apply", traceparent="")
    winners.remember(("shard-0.t", "8♦"), 7, won)
    won.end()
    lost = tel.start_span("shard.apply", traceparent="")
    found = winners.recall(("shard-0.t", "8♦"))
    assert found is not None
    mark_lost_to(lost, *found)
    lost.end()
    assert tel.provider is not None
    tel.provider.force_flush()
    done = exporter.get_finished_spans()[-1]
    assert done.attributes is not None
    assert done.attributes[Attr.WINNER_SEQ] == 7
    [link] = done.links
    assert link.context.span_id == won.get_span_context().span_id
    assert link.attributes == {Attr.SEQ: 7}
    winners.remember("b", 8, won)
    winners.remember("c", 9, won)
    assert len(winners) == 2 and winners.recall(("shard-0.t", "8♦")) is None
    tel.shutdown()


# ---------------------------------------------------------------------------------- metrics
def samples(registry: CollectorRegistry) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in registry.collect() for s in family.samples}


def get(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return samples(registry).get((name, frozenset(labels.items())), 0.0)


def test_shard_metrics_count_actions_refusals_and_game_events() -> None:
    registry = CollectorRegistry()
    metrics = ShardMetrics(registry, "shard-0")
    assert get(registry, "machiavelox_shard_actions_total", shard="shard-0", kind="take",
               outcome="accepted") == 0, "every series exists from the start"
    metrics.observe_queue_wait(0.0002)
    metrics.observe_action("take", "", 0.0001)
    metrics.observe_action("take", "card/held", 0.0001)
    metrics.observe_action("draw", "draw/pozzetto", 0.0001)
    seat = rules.Seat.P1
    events = [rules.Event(K.CHAIN, 1, seat, by=rules.Seat.P2), rules.Event(K.CHAIN, 1, seat),
              rules.Event(K.FORCED_DRAW, 2), rules.Event(K.STOP, 3, seat),
              rules.Event(K.ABANDONED, 4, seat), rules.Event(K.DREW, 5, seat),
              rules.Event(K.ENDED, 6, seat, detail="closing: winner p1; p1 +30, p2 -5, p3 -9"),
              rules.Event(K.ENDED, 7, None, detail="mystery: no winner")]
    metrics.observe_events(list(enumerate(events, 1)))
    s = {"shard": "shard-0"}
    assert get(registry, "machiavelox_shard_actions_total", **s, kind="take",
               outcome="accepted") == 1
    assert get(registry, "machiavelox_shard_actions_total", **s, kind="take",
               outcome="refused") == 1
    assert get(registry, "machiavelox_shard_refusals_total", **s, code="card/held") == 1
    assert get(registry, "machiavelox_shard_refusals_total", **s, code="draw/pozzetto") == 1
    assert get(registry, "machiavelox_shard_holds_lost_total", **s) == 1
    assert get(registry, "machiavelox_shard_apply_seconds_count", **s, kind="take") == 2
    assert get(registry, "machiavelox_shard_queue_wait_seconds_count", **s) == 1
    assert get(registry, "machiavelox_shard_chain_cancellations_total", **s) == 2
    assert get(registry, "machiavelox_shard_forced_draws_total", **s) == 1
    assert get(registry, "machiavelox_shard_stops_total", **s) == 1
    assert get(registry, "machiavelox_shard_abandonments_total", **s) == 1
    assert get(registry, "machiavelox_shard_smazzate_ended_total", **s, ending="closing") == 1
    assert get(registry, "machiavelox_shard_smazzate_ended_total", **s, ending="other") == 1
    metrics.observe_event_kinds([("stop", ""), ("ended", "survivor: winner p2")])
    assert get(registry, "machiavelox_shard_stops_total", **s) == 2
    assert get(registry, "machiavelox_shard_smazzate_ended_total", **s, ending="survivor") == 1
    tables: dict[str, int] = {"a": 1, "b": 2}
    metrics.track_load(lambda: len(tables), lambda: 3 * len(tables), 2000)
    assert get(registry, "machiavelox_shard_tables", **s) == 2
    assert get(registry, "machiavelox_shard_players", **s) == 6
    assert get(registry, "machiavelox_shard_capacity", **s) == 2000


def test_gateway_metrics() -> None:
    registry = CollectorRegistry()
    metrics = GatewayMetrics(registry)
    metrics.add_shard("shard-1")
    assert get(registry, "machiavelox_gateway_actions_total", shard="shard-1", kind="draw",
               outcome="refused") == 0
    metrics.observe_action("shard-1", "draw", "accepted", 0.004)
    metrics.observe_delivery("shard-1", 0.001, events=3)
    metrics.stream_opened()
    metrics.stream_opened()
    metrics.stream_closed()
    assert get(registry, "machiavelox_gateway_actions_total", shard="shard-1", kind="draw",
               outcome="accepted") == 1
    assert get(registry, "machiavelox_gateway_action_latency_seconds_count", shard="shard-1",
               outcome="accepted") == 1
    assert get(registry, "machiavelox_gateway_action_latency_seconds_bucket", shard="shard-1",
               outcome="accepted", le="0.005") == 1
    assert get(registry, "machiavelox_gateway_events_delivered_total", shard="shard-1") == 3
    assert get(registry, "machiavelox_gateway_open_streams") == 1
    assert len(ACTION_KINDS) == 17 and "take" in ACTION_KINDS and "give_up" in ACTION_KINDS
    from machiavelox import codec

    assert action_kind(codec.action_to_pb(rules.Draw(rules.Seat.P1))) == "draw"


def test_matchmaking_metrics_and_safe_gauges() -> None:
    registry = CollectorRegistry()
    metrics = MatchmakingMetrics(registry)
    metrics.ticket_ended("competitive", "assigned", 12.0)
    metrics.ticket_ended("friendly", "left", 3.0)
    metrics.placement_failed("competitive")
    metrics.track_waiting(lambda: 4, lambda: 2)
    assert get(registry, "machiavelox_matchmaking_wait_seconds_count", queue="competitive") == 1
    assert get(registry, "machiavelox_matchmaking_wait_seconds_count", queue="friendly") == 0
    assert get(registry, "machiavelox_matchmaking_tickets_total", queue="friendly",
               outcome="left") == 1
    assert get(registry, "machiavelox_matchmaking_tickets_waiting", queue="competitive") == 4
    assert get(registry, "machiavelox_matchmaking_placement_failures_total",
               queue="competitive") == 1

    def resized() -> float:
        raise RuntimeError("dictionary changed size during iteration")

    assert read_safely(lambda: 3)() == 3.0
    assert read_safely(resized)() != read_safely(resized)()  # NaN, not an exception
