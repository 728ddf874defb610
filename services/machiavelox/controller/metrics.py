"""The capacity controller's own metrics (served on `/metrics` like every service's).

- machiavelox_controller_leader: gauge, 1 while this replica holds the Lease.
- machiavelox_controller_replicas: gauge, the shard StatefulSet's replicas last seen.
- machiavelox_controller_free_tables / _buffer_tables: gauges, free table capacity counted by
  the last round and the buffer it had to keep.
- machiavelox_controller_tables / _players: gauges, tables in play and players seated.
- machiavelox_controller_decisions_total{kind}: counter, rounds by decision (hold, scale-up,
  resume, drain, wait, scale-down).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge

from .decide import DRAIN, HOLD, RESUME, SCALE_DOWN, SCALE_UP, WAIT, Decision, Observation, Policy
from .decide import free_capacity as _free


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, text: str) -> Gauge:
            return Gauge(f"machiavelox_controller_{name}", text, registry=registry)

        self.leader = gauge("leader", "1 while this replica holds the Lease.")
        self.replicas = gauge("replicas", "Shard StatefulSet replicas last seen.")
        self.free = gauge("free_tables", "Free table capacity counted by the last round.")
        self.buffer = gauge("buffer_tables", "Free tables the last round had to keep.")
        self.tables = gauge("tables", "Tables in play on the shards.")
        self.players = gauge("players", "Players seated on the shards.")
        self.decisions = Counter("machiavelox_controller_decisions_total",
                                 "Reconcile rounds by decision.", ("kind",), registry=registry)
        for kind in (HOLD, SCALE_UP, RESUME, DRAIN, WAIT, SCALE_DOWN):
            self.decisions.labels(kind)

    def round(self, observation: Observation, decision: Decision, policy: Policy) -> None:
        self.replicas.set(observation.replicas)
        self.free.set(_free(observation.shards, policy.shard_capacity))
        self.buffer.set(policy.buffer.required(observation.tables))
        self.tables.set(observation.tables)
        self.players.set(observation.players)
        self.decisions.labels(decision.kind).inc()
