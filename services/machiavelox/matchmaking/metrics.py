"""Matchmaking's own metrics (docs/operations.md explains each).

- machiavelox_matchmaking_wait_seconds{queue}: histogram, from a ticket's start (Enqueue, or
  JoinFriendlyTable) to its assignment to a table; queue is competitive or friendly.
- machiavelox_matchmaking_tickets_total{queue, outcome}: counter, tickets ended: assigned,
  cancelled (CancelTicket), left (the stream closed first), stopped (matchmaking stopped),
  expired (the friendly lobby outlived its TTL) or replaced (a newer join stream of the player).
- machiavelox_matchmaking_tickets_waiting{queue}: gauge, tickets waiting now (competitive:
  in the queue; friendly: seats taken at lobbies whose table is not created yet).
- machiavelox_matchmaking_placement_failures_total{queue}: counter, tables no shard accepted
  (their players wait on: competitive tickets are requeued, lobbies retried).
- machiavelox_matchmaking_rate_limited_total{call}: counter, calls refused `rate/limited`
  (enqueue, cancel, create_friendly, join_friendly).
- machiavelox_matchmaking_unknown_codes_total: counter, join attempts with a code of no open
  lobby (a rise with few lobbies is someone guessing).
- machiavelox_matchmaking_lobbies_expired_total: counter, friendly lobbies gone at their TTL.
- machiavelox_matchmaking_lost_tables_total: counter, seated tables their shard did not have
  (`seatcheck.py`): ended without points, their players freed, nobody rated.
- machiavelox_matchmaking_placement_cancels_total{outcome}: counter, CancelTable calls for
  placements given up on a shard (`placing.py`): gone (no table of it there any more), kept
  (the table exists and is in use: placed there), unsure (asked again later).
- machiavelox_matchmaking_placements_resumed_total: counter, placements taken over from a
  placer that died (its lease ran out), each undone.
- machiavelox_matchmaking_placements_unresolved: gauge, this replica's placements waiting
  for a shard to say for sure that it has no table of them (their players keep waiting).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from machiavelox.platform.metrics import WAIT_BUCKETS, read_safely

from .limits import CALLS, Call

COMPETITIVE = "competitive"
FRIENDLY = "friendly"
QUEUES = (COMPETITIVE, FRIENDLY)
OUTCOMES = ("assigned", "cancelled", "left", "stopped", "expired", "replaced")
CANCELS = ("gone", "kept", "unsure")


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
        self.rate_limited_calls = Counter(
            "machiavelox_matchmaking_rate_limited_total",
            "Calls refused rate/limited, by call.", ("call",), registry=registry)
        self._limited = {c: self.rate_limited_calls.labels(c) for c in CALLS}
        self.unknown_codes = Counter(
            "machiavelox_matchmaking_unknown_codes_total",
            "Join attempts with a code of no open friendly lobby.", registry=registry)
        self.lobbies_expired = Counter(
            "machiavelox_matchmaking_lobbies_expired_total",
            "Friendly lobbies gone at their time to live.", registry=registry)
        self.lost_tables = Counter(
            "machiavelox_matchmaking_lost_tables_total",
            "Seated tables their shard did not have: their players freed, nobody rated.",
            registry=registry)

        self.cancels = Counter(
            "machiavelox_matchmaking_placement_cancels_total",
            "CancelTable calls for placements given up on a shard, by answer.", ("outcome",),
            registry=registry)
        self._cancels = {o: self.cancels.labels(o) for o in CANCELS}
        self.resumed = Counter(
            "machiavelox_matchmaking_placements_resumed_total",
            "Placements taken over from a placer that died, and undone.", registry=registry)
        self.unresolved = Gauge(
            "machiavelox_matchmaking_placements_unresolved",
            "Placements waiting for their shard to say it has no table of them.",
            registry=registry)

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

    def rate_limited(self, call: Call) -> None:
        self._limited[call].inc()

    def unknown_code(self) -> None:
        self.unknown_codes.inc()

    def lobby_expired(self) -> None:
        self.lobbies_expired.inc()

    def table_lost(self) -> None:
        self.lost_tables.inc()

    def track_unresolved(self, unresolved: Callable[[], float]) -> None:
        self.unresolved.set_function(read_safely(unresolved))

    def cancelled(self, outcome: str) -> None:
        counter = self._cancels.get(outcome)
        if counter is not None:
            counter.inc()

    def placement_resumed(self) -> None:
        self.resumed.inc()
