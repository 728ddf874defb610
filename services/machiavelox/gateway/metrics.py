"""The gateway's own metrics (docs/operations.md explains each).

    metrics = GatewayMetrics(observability.registry)
    metrics.observe_action("shard-0", "take", "refused", seconds)   # at the ack or refusal
    metrics.observe_delivery("shard-0", seconds, events=3)          # events written to a stream
    metrics.stream_opened() / metrics.stream_closed()               # Play streams

Labelled children are cached, so an observation on the hot path is a dict look-up and an
atomic add.
"""

from __future__ import annotations

import contextlib
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.platform.metrics import (
    ACTION_BUCKETS,
    ACTION_KINDS,
    CLASSIC_ACTION_KINDS,
    CLASSIC_PREFIX,
    OUTCOMES,
)


def action_kind(action: common_pb2.Action) -> str:
    """The `kind` label of an action: draw, declare, take, ... ("unknown" if unset)."""
    return action.WhichOneof("kind") or "unknown"


def request_kind(request: gateway_pb2.ActionRequest) -> str:
    """The `kind` label of an app's action: its Machiavelox verb, or at a classic table
    `classic-` and the classic verb (classic-meld, classic-draw, ...; as the shard labels
    them)."""
    if request.HasField("classic_action"):
        verb = request.classic_action.WhichOneof("kind")
        return CLASSIC_PREFIX + verb if verb else "unknown"
    return action_kind(request.action)


class GatewayMetrics:
    """
    - machiavelox_gateway_action_latency_seconds{shard, outcome}: histogram, from the action's
      arrival at the gateway (read off the app's stream) to its ack or refusal being written
      to the app's stream.
    - machiavelox_gateway_actions_total{shard, kind, outcome}: counter, the same actions.
    - machiavelox_gateway_event_delivery_seconds{shard}: histogram, from a shard frame's
      arrival at the gateway to the events it carried for one session being written to that
      session's stream.
    - machiavelox_gateway_events_delivered_total{shard}: counter, events put on app streams.
    - machiavelox_gateway_open_streams: gauge, Play streams open now.
    - machiavelox_gateway_shard_link_up{shard}: gauge, 1 while the link to the shard is
      connected, 0 while it is down and reconnecting (no series: no link open).
    - machiavelox_gateway_shard_link_failures_total{shard}: counter, times a link went down.
    - machiavelox_gateway_rate_limited_total{what}: counter, requests refused by the pace
      rules (action, resync; flood: streams ended for too many messages).
    - machiavelox_gateway_slow_sessions_total: counter, sessions ended for reading too slowly.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.action_latency = Histogram(
            "machiavelox_gateway_action_latency_seconds",
            "Time from an action's arrival at the gateway to its ack or refusal being sent.",
            ("shard", "outcome"), buckets=ACTION_BUCKETS, registry=registry)
        self.actions = Counter(
            "machiavelox_gateway_actions_total",
            "Actions answered (acknowledged or refused), by kind and outcome.",
            ("shard", "kind", "outcome"), registry=registry)
        self.event_delivery = Histogram(
            "machiavelox_gateway_event_delivery_seconds",
            "Time from a shard frame's arrival to its events being sent to a session.",
            ("shard",), buckets=ACTION_BUCKETS, registry=registry)
        self.events_delivered = Counter(
            "machiavelox_gateway_events_delivered_total",
            "Events sent to players' Play streams.", ("shard",), registry=registry)
        self.open_streams = Gauge(
            "machiavelox_gateway_open_streams", "Play streams open now.", registry=registry)
        self.link_up = Gauge(
            "machiavelox_gateway_shard_link_up",
            "1 while the gateway's link to the shard is connected, 0 while it reconnects.",
            ("shard",), registry=registry)
        self.link_failures = Counter(
            "machiavelox_gateway_shard_link_failures_total",
            "Times the gateway's link to a shard went down.", ("shard",), registry=registry)
        self.limited = Counter(
            "machiavelox_gateway_rate_limited_total",
            "Requests refused by the pace rules, by what was limited.", ("what",),
            registry=registry)
        self.slow_sessions = Counter(
            "machiavelox_gateway_slow_sessions_total",
            "Play streams ended because the app read too slowly.", registry=registry)
        self._latency: dict[tuple[str, str], Any] = {}
        self._actions: dict[tuple[str, str, str], Any] = {}
        self._delivery: dict[str, tuple[Any, Any]] = {}

    def add_shard(self, shard: str) -> None:
        """Create the shard's series at zero (call when a link to it opens), so rates and
        sums see the shard before its first action."""
        for outcome in OUTCOMES:
            self._latency_child(shard, outcome)
            for kind in (*ACTION_KINDS, *CLASSIC_ACTION_KINDS):
                self._actions_child(shard, kind, outcome)
        self._delivery_children(shard)

    def _latency_child(self, shard: str, outcome: str) -> Any:
        key = (shard, outcome)
        child = self._latency.get(key)
        if child is None:
            child = self._latency[key] = self.action_latency.labels(shard, outcome)
        return child

    def _actions_child(self, shard: str, kind: str, outcome: str) -> Any:
        key = (shard, kind, outcome)
        child = self._actions.get(key)
        if child is None:
            child = self._actions[key] = self.actions.labels(shard, kind, outcome)
        return child

    def _delivery_children(self, shard: str) -> tuple[Any, Any]:
        children = self._delivery.get(shard)
        if children is None:
            children = self._delivery[shard] = (self.event_delivery.labels(shard),
                                                self.events_delivered.labels(shard))
        return children

    def observe_action(self, shard: str, kind: str, outcome: str, seconds: float) -> None:
        """One action answered: `outcome` is ACCEPTED or REFUSED."""
        self._latency_child(shard, outcome).observe(seconds)
        self._actions_child(shard, kind, outcome).inc()

    def observe_delivery(self, shard: str, seconds: float, events: int = 1) -> None:
        """Events of one shard frame sent to one session, `seconds` after the frame came."""
        histogram, counter = self._delivery_children(shard)
        histogram.observe(seconds)
        counter.inc(events)

    def link_state(self, shard: str, state: str) -> None:
        """A shard link is "up", "down" (reconnecting) or "closed" (idle)."""
        if state == "closed":
            with contextlib.suppress(KeyError):
                self.link_up.remove(shard)
            return
        if state == "down":
            self.link_failures.labels(shard).inc()
        else:
            self.add_shard(shard)
        self.link_up.labels(shard).set(1 if state == "up" else 0)

    def rate_limited(self, what: str) -> None:
        self.limited.labels(what).inc()

    def slow_session(self) -> None:
        self.slow_sessions.inc()

    def stream_opened(self) -> None:
        self.open_streams.inc()

    def stream_closed(self) -> None:
        self.open_streams.dec()
