"""What a shard tells about each action: metrics always, spans for the sampled ones.

An action's trace (docs/operations.md): the gateway starts it and, when it is sampled, sends its
`traceparent` with the action; the shard then records `shard.queue` (from the frame's arrival
to the start of the application: the wait behind the actions before it in the stream) and
`shard.apply` (the rules engine, with the table's sequence number, the arrival index, the
outcome and the refusal code). Actions without a traceparent get no span at all, so the
sampling decision is the gateway's alone and an unsampled action costs the shard nothing.

Conflicts (M6.4, fastest wins): the shard remembers, per table card, the last accepted Take
(its sequence number and span). An action refused with `card/held` carries the winner's
sequence number and a link to the winner's `shard.apply` span when that one was sampled.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span

from machiavelox import rules
from machiavelox.platform.telemetry import (
    Attr,
    RecentSpans,
    SpanName,
    Telemetry,
    mark_lost_to,
    traceparent,
)

from .metrics import HELD, ShardMetrics
from .sequencer import Applied


@dataclass(slots=True)
class Observation:
    kind: str
    arrived_ns: int  # when its frame arrived (wall; 0: unknown)
    started_ns: int  # wall clock (span time base)
    started_perf_ns: int
    span: Span | None
    applied_perf_ns: int = 0
    code: str = ""  # the refusal code ("" accepted)


class ShardObserver:
    """`begin` and `end` bracket the rules engine and do what must happen on the action's
    path (its spans, when sampled); `count` records its metrics and may run later, once the
    step's answers are on their way (the shard defers it, see `Shard.handle_frame`)."""

    def __init__(self, metrics: ShardMetrics | None = None,
                 telemetry: Telemetry | None = None, winners: int = 10_000) -> None:
        self.metrics = metrics
        self.telemetry = telemetry if telemetry is not None and telemetry.enabled else None
        self.winners = RecentSpans(winners)

    def begin(self, table_id: str, player: str, kind: str, parent: str,
              arrived_ns: int) -> Observation:
        """An action leaves its queue (arrived_ns: when its frame arrived, wall ns; 0: unknown)."""
        started = time.time_ns()
        span = None
        if self.telemetry is not None and parent:
            where = {Attr.TABLE: table_id, Attr.PLAYER: player}
            if arrived_ns:
                self.telemetry.record_span(SpanName.SHARD_QUEUE, arrived_ns, started,
                                           traceparent=parent, attributes=where)
            span = self.telemetry.start_span(SpanName.SHARD_APPLY, traceparent=parent,
                                             start_ns=started,
                                             attributes={**where, Attr.ACTION_KIND: kind})
        return Observation(kind, arrived_ns, started, time.perf_counter_ns(), span)

    def end(self, seen: Observation, table_id: str, action: object,
            applied: Applied[Any]) -> str:
        """The action applied; the traceparent of its apply span ("" when not traced)."""
        seen.applied_perf_ns = time.perf_counter_ns()
        code = seen.code = applied.error.code if applied.error is not None else ""
        span = seen.span
        if self.telemetry is not None and isinstance(action, rules.Take) and not code:
            self.winners.remember((table_id, action.card), applied.first_seq, span)
        if span is None:
            return ""
        span.set_attribute(Attr.ARRIVAL, applied.arrival)
        span.set_attribute(Attr.OUTCOME, "refused" if code else "accepted")
        if code:
            span.set_attribute(Attr.REFUSAL_CODE, code)
            card = getattr(action, "card", None)
            found = self.winners.recall((table_id, card)) if code == HELD else None
            if found is not None:
                mark_lost_to(span, *found)
        else:
            span.set_attribute(Attr.SEQ, applied.first_seq)
        parent = traceparent(span)
        span.end()
        return parent

    def count(self, seen: Observation) -> None:
        """The metrics of an action `end` has seen: its wait in the queue, its time in the
        rules engine, its outcome."""
        if self.metrics is None:
            return
        if seen.arrived_ns:
            self.metrics.observe_queue_wait(max(0, seen.started_ns - seen.arrived_ns) / 1e9)
        self.metrics.observe_action(seen.kind, seen.code,
                                    (seen.applied_perf_ns - seen.started_perf_ns) / 1e9)

    def draining(self, value: bool) -> None:
        if self.metrics is not None:
            self.metrics.set_draining(value)

    def stopped_in_play(self, tables: int) -> None:
        if self.metrics is not None:
            self.metrics.stopped_in_play(tables)

    def resent(self) -> None:
        """An action resent with a client_action_id already answered (answered again)."""
        if self.metrics is not None:
            self.metrics.resent_action()

    def events(self, events: list[tuple[int, Any]]) -> None:
        if self.metrics is not None and events:
            self.metrics.observe_events(events)
