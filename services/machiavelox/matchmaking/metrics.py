"""Matchmaking's own metrics (docs/operations.md explains each).

- machiavelox_matchmaking_wait_seconds{queue}: histogram, from a ticket's start (Enqueue, or
  JoinFriendlyTable) to its assignment to a table; queue is competitive or friendly.
- machiavelox_matchmaking_tickets_total{queue, outcome}: counter, tickets ended: assigned,
  cancelled (CancelTicket), left (the stream closed first) or stopped (matchmaking stopped).
- machiavelox_matchmaking_tickets_waiting{queue}: gauge, tickets waiting now (competitive:
  in the queue; friendly: seats taken at lobbies whose table is not created yet).
- machiavelox_matchmaking_placement_failures_total{queue}: counter, tables no shard accepted
  (their players wait on: competitive tickets are requeued, lobbies retried).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from machiavelox.platform.metrics import WAIT_BUCKETS, read_safely

COMPETITIVE = "competitive"
FRIENDLY = "friendly"
QUEUES = (COMPETITIVE, FRIENDLY)
OUTCOMES = ("assigned", "cancelled", "left", "stopped")


class MatchmakingMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.wait = Histogram(
            "machiavelox_matchmaking_wait_seconds",
            "Time from a ticket's start to its assignment to a table.",
            ("queue",), buckets=WAIT_BUCKETS, registry=registry)
        self.tickets = Counter(
            "machiavelox_matchmaking_tickets_total", "Tickets ended, by queue and outcome.",
            ("queue", "outcome"), registry=registry)
        self.waiting = Gauge(
            "machiavelox_matchmaking_tickets_waiting", "Tickets waiting now.", ("queue",),
            registry=registry)
        self.placement_failures = Counter(
            "machiavelox_matchmaking_placement_failures_total",
            "Tables that no shard accepted.", ("queue",), registry=registry)
        self._wait = {q: self.wait.labels(q) for q in QUEUES}
        self._tickets: dict[tuple[str, str], Any] = {
            (q, o): self.tickets.labels(q, o) for q in QUEUES for o in OUTCOMES}
        self._failures = {q: self.placement_failures.labels(q) for q in QUEUES}

    def track_waiting(self, competitive: Callable[[], float],
                      friendly: Callable[[], float]) -> None:
        """Read the waiting tickets at each scrape (the callables must only read)."""
        self.waiting.labels(COMPETITIVE).set_function(read_safely(competitive))
        self.waiting.labels(FRIENDLY).set_function(read_safely(friendly))

    def ticket_ended(self, queue: str, outcome: str, waited_s: float) -> None:
        self._tickets[(queue, outcome)].inc()
        if outcome == "assigned":
            self._wait[queue].observe(waited_s)

    def placement_failed(self, queue: str) -> None:
        self._failures[queue].inc()
