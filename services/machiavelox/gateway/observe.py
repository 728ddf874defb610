"""What a gateway tells about each action: metrics always, a trace for the sampled ones.

Every action a session sends starts a `gateway.action` span (a new trace, sampled by the
gateway's sampler; attributes: player, table, shard, action kind, the app's id and send time).
When it is sampled, its `traceparent` travels with the action to the shard (whose spans are its
children) and comes back on the items of the step the action made: each session that receives
that step gets a `gateway.deliver` span under the shard's span. The root span ends when the
ack or refusal is written to the app's stream, with the outcome, sequence number and arrival
index. What the app chose (its action id, the table id it joined) is cut to 64 characters
(`errors.shown`) before it becomes an attribute.
Metrics: machiavelox_gateway_* (gateway/metrics.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Protocol

from opentelemetry.trace import Span, SpanKind

from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.platform.errors import shown
from machiavelox.platform.metrics import ACCEPTED, REFUSED
from machiavelox.platform.telemetry import Attr, SpanName, Telemetry, traceparent

from .metrics import GatewayMetrics, request_kind


@dataclass(slots=True)
class Pending:
    kind: str
    arrived_perf_ns: int
    span: Span | None


class Observed(Protocol):
    player_id: str
    table_id: str
    pending: dict[str, Pending]


class GatewayObserver:
    def __init__(self, metrics: GatewayMetrics | None = None,
                 telemetry: Telemetry | None = None, gateway_id: str = "") -> None:
        self.metrics = metrics
        self.telemetry = telemetry if telemetry is not None and telemetry.enabled else None
        self.gateway_id = gateway_id

    def action(self, session: Observed, shard: str,
               request: gateway_pb2.ActionRequest) -> str:
        """An action read off the app's stream; the traceparent to send with it ("" when the
        trace is not sampled)."""
        kind = request_kind(request)
        span: Span | None = None
        parent = ""
        if self.telemetry is not None:
            attributes: dict[str, str | int] = {
                Attr.PLAYER: session.player_id, Attr.TABLE: shown(session.table_id),
                Attr.SHARD: shard, Attr.GATEWAY: self.gateway_id, Attr.ACTION_KIND: kind,
                Attr.CLIENT_ACTION_ID: shown(request.client_action_id)}
            if request.client_sent_ms:
                attributes[Attr.CLIENT_SENT_MS] = request.client_sent_ms
            span = self.telemetry.start_span(SpanName.GATEWAY_ACTION, traceparent="",
                                             kind=SpanKind.SERVER, attributes=attributes)
            if span.is_recording():
                parent = traceparent(span)
            else:
                span = None
        session.pending[request.client_action_id] = Pending(kind, time.perf_counter_ns(), span)
        return parent

    def outcome(self, session: Observed, shard: str, batch: common_pb2.Batch) -> None:
        """The ack or refusal of `batch` is written to the app's stream."""
        accepted = batch.HasField("ack")
        answer = batch.ack if accepted else batch.refused
        pending = session.pending.pop(answer.client_action_id, None)
        if pending is None:
            return
        if self.metrics is not None:
            self.metrics.observe_action(
                shard, pending.kind, ACCEPTED if accepted else REFUSED,
                (time.perf_counter_ns() - pending.arrived_perf_ns) / 1e9)
        span = pending.span
        if span is not None:
            span.set_attribute(Attr.OUTCOME, ACCEPTED if accepted else REFUSED)
            if accepted:
                span.set_attribute(Attr.SEQ, batch.ack.seq)
                span.set_attribute(Attr.ARRIVAL, batch.ack.arrival_index)
            else:
                span.set_attribute(Attr.REFUSAL_CODE, batch.refused.refusal.code)
            span.end()

    def delivered(self, session: Observed, shard: str, events: int, arrived_ns: int,
                  arrived_perf_ns: int, parent: str) -> None:
        """`events` of a shard frame that arrived at `arrived_ns` (wall) are on the stream."""
        if self.metrics is not None and arrived_perf_ns:
            self.metrics.observe_delivery(
                shard, (time.perf_counter_ns() - arrived_perf_ns) / 1e9, events)
        if self.telemetry is not None and parent and arrived_ns:
            self.telemetry.record_span(SpanName.GATEWAY_DELIVER, arrived_ns, time.time_ns(),
                                       traceparent=parent,
                                       attributes={Attr.PLAYER: session.player_id,
                                                   Attr.TABLE: shown(session.table_id),
                                                   Attr.EVENTS: events})

    def closed(self, session: Observed) -> None:
        """The session ended: actions still unanswered end their spans."""
        for pending in session.pending.values():
            if pending.span is not None:
                pending.span.set_attribute(Attr.OUTCOME, "unanswered")
                pending.span.end()
        session.pending.clear()
