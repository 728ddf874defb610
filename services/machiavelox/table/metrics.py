"""A table shard's own metrics (docs/operations.md explains each).

    metrics = ShardMetrics(observability.registry, shard_id)
    metrics.track_load(lambda: shard.tables_in_play, lambda: shard.players, shard.capacity)
    metrics.observe_queue_wait(seconds)                      # arrival -> start of apply
    metrics.observe_action("take", refusal_code, seconds)    # "" when accepted
    metrics.observe_events(applied.events)                   # any (seq, Event) the shard records

Every metric has a `shard` label (the shard id), so dashboards and alerts can show shards
side by side whatever the scrape labels are. Labelled children are cached: an observation on
the hot path is a dict look-up and an atomic add.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from machiavelox import rules
from machiavelox.platform.metrics import (
    ACCEPTED,
    ACTION_KINDS,
    LOOP_BUCKETS,
    OUTCOMES,
    REFUSED,
    read_safely,
)

HELD = "card/held"  # the refusal of an action that lost a card to a faster player (M6.4)
# How a smazzata can end (rules.scoring.SmazzataResult.ending); anything else counts as "other".
ENDINGS = ("closing", "survivor", "silence", "tiebreak", "draw", "everyone-gone")


def ending_of(event: rules.Event) -> str:
    """The ending of an `ended` event: its detail starts with ``<ending>:``."""
    ending = event.detail.partition(":")[0]
    return ending if ending in ENDINGS else "other"


class ShardMetrics:
    """
    - machiavelox_shard_queue_wait_seconds{shard}: histogram, an action's wait from its
      arrival at the shard to the start of its application (its table's queue).
    - machiavelox_shard_apply_seconds{shard, kind}: histogram, applying one action.
    - machiavelox_shard_actions_total{shard, kind, outcome}: counter, players' actions applied,
      accepted or refused (presence changes and timers are not actions).
    - machiavelox_shard_refusals_total{shard, code}: counter, refused actions by code.
    - machiavelox_shard_holds_lost_total{shard}: counter, actions refused because a faster
      player holds the card (card/held).
    - machiavelox_shard_chain_cancellations_total{shard}: counter, calate undone by another's
      failure (`chain` events).
    - machiavelox_shard_forced_draws_total{shard}: counter, inactivity forced draws
      (`forced-draw` events).
    - machiavelox_shard_stops_total{shard}: counter, Stop!s (`stop` events).
    - machiavelox_shard_abandonments_total{shard}: counter, players out by absence
      (`abandoned` events).
    - machiavelox_shard_smazzate_ended_total{shard, ending}: counter, smazzate ended, by
      ending (closing, survivor, silence, tiebreak, draw, everyone-gone).
    - machiavelox_shard_tables{shard}, machiavelox_shard_players{shard},
      machiavelox_shard_capacity{shard}: gauges, tables in play, players seated at them, and
      the most tables the shard accepts (read at scrape time, see `track_load`).
    - machiavelox_shard_draining{shard}: gauge, 1 while the shard places no new table (a
      scale-down, or a shutdown serving its last tables).
    - machiavelox_shard_tables_stopped_in_play_total{shard}: counter, tables still in play
      when the shard stopped (its drain time ran out): should stay 0.
    """

    def __init__(self, registry: CollectorRegistry, shard_id: str) -> None:
        self.shard_id = shard_id
        s = ("shard",)
        self.queue_wait = Histogram(
            "machiavelox_shard_queue_wait_seconds",
            "Time an action waits in its table's queue before being applied.",
            s, buckets=LOOP_BUCKETS, registry=registry)
        self.apply = Histogram(
            "machiavelox_shard_apply_seconds", "Time to apply one action, by kind.",
            (*s, "kind"), buckets=LOOP_BUCKETS, registry=registry)
        self.actions = Counter(
            "machiavelox_shard_actions_total", "Players' actions applied, by kind and outcome.",
            (*s, "kind", "outcome"), registry=registry)
        self.refusals = Counter(
            "machiavelox_shard_refusals_total", "Refused actions, by refusal code.",
            (*s, "code"), registry=registry)
        self.holds_lost = Counter(
            "machiavelox_shard_holds_lost_total",
            "Actions refused because a faster player holds the card (card/held).",
            s, registry=registry)
        self.chain_cancellations = Counter(
            "machiavelox_shard_chain_cancellations_total",
            "Calate undone because another calata failed (chain events).", s, registry=registry)
        self.forced_draws = Counter(
            "machiavelox_shard_forced_draws_total", "Forced draws after inactivity (M7).",
            s, registry=registry)
        self.stops = Counter("machiavelox_shard_stops_total", "Stop!s called (M9).", s,
                             registry=registry)
        self.abandonments = Counter(
            "machiavelox_shard_abandonments_total", "Players out of a smazzata by absence (M11).",
            s, registry=registry)
        self.smazzate_ended = Counter(
            "machiavelox_shard_smazzate_ended_total", "Smazzate ended, by how they ended.",
            (*s, "ending"), registry=registry)
        self.tables = Gauge("machiavelox_shard_tables", "Tables in play.", s,
                            registry=registry)
        self.players = Gauge("machiavelox_shard_players", "Players seated at tables in play.", s,
                             registry=registry)
        self.capacity = Gauge("machiavelox_shard_capacity", "The most tables in play accepted.",
                              s, registry=registry)

        self.draining = Gauge("machiavelox_shard_draining",
                              "1 while no new table is placed on the shard.", s,
                              registry=registry)
        self.stopped = Counter("machiavelox_shard_tables_stopped_in_play_total",
                               "Tables still in play when the shard stopped.", s,
                               registry=registry)
        self.resent = Counter("machiavelox_shard_actions_resent_total",
                              "Actions resent with a client_action_id already answered: "
                              "answered again, not applied (issue 13).", s, registry=registry)
        sid = shard_id
        self._resent = self.resent.labels(sid)
        self.draining.labels(sid).set(0)
        self.stopped.labels(sid)
        self._queue_wait = self.queue_wait.labels(sid)
        self._holds_lost = self.holds_lost.labels(sid)
        self._apply: dict[str, Any] = {}
        self._actions: dict[tuple[str, str], Any] = {}
        self._refusals: dict[str, Any] = {}
        self._endings = {e: self.smazzate_ended.labels(sid, e) for e in (*ENDINGS, "other")}
        self._by_event: dict[str, Any] = {
            "chain": self.chain_cancellations.labels(sid),
            "forced-draw": self.forced_draws.labels(sid),
            "stop": self.stops.labels(sid),
            "abandoned": self.abandonments.labels(sid),
        }
        for kind in ACTION_KINDS:  # every series exists from the start, at zero
            self._apply_child(kind)
            for outcome in OUTCOMES:
                self._actions_child(kind, outcome)
        self._refusal_child(HELD)

    # ------------------------------------------------------------------ children
    def _apply_child(self, kind: str) -> Any:
        child = self._apply.get(kind)
        if child is None:
            child = self._apply[kind] = self.apply.labels(self.shard_id, kind)
        return child

    def _actions_child(self, kind: str, outcome: str) -> Any:
        key = (kind, outcome)
        child = self._actions.get(key)
        if child is None:
            child = self._actions[key] = self.actions.labels(self.shard_id, kind, outcome)
        return child

    def _refusal_child(self, code: str) -> Any:
        child = self._refusals.get(code)
        if child is None:
            child = self._refusals[code] = self.refusals.labels(self.shard_id, code)
        return child

    # ------------------------------------------------------------------ observations
    def track_load(self, tables: Callable[[], float], players: Callable[[], float],
                   capacity: float) -> None:
        """Read tables and players in play at each scrape (the callables run in the scrape's
        thread: they must only read; see `read_safely`)."""
        self.tables.labels(self.shard_id).set_function(read_safely(tables))
        self.players.labels(self.shard_id).set_function(read_safely(players))
        self.capacity.labels(self.shard_id).set(capacity)

    def set_draining(self, value: bool) -> None:
        self.draining.labels(self.shard_id).set(1 if value else 0)

    def stopped_in_play(self, tables: int) -> None:
        self.stopped.labels(self.shard_id).inc(tables)

    def resent_action(self) -> None:
        self._resent.inc()

    def observe_queue_wait(self, seconds: float) -> None:
        self._queue_wait.observe(seconds)

    def observe_action(self, kind: str, refusal_code: str, apply_seconds: float) -> None:
        """One player's action applied: accepted (`refusal_code` "") or refused."""
        self._apply_child(kind).observe(apply_seconds)
        if refusal_code:
            self._actions_child(kind, REFUSED).inc()
            self.observe_refusal(refusal_code)
        else:
            self._actions_child(kind, ACCEPTED).inc()

    def observe_refusal(self, code: str) -> None:
        """A refusal (counted by `observe_action` for actions; call it directly only for
        refusals of anything else)."""
        self._refusal_child(code).inc()
        if code == HELD:
            self._holds_lost.inc()

    def observe_event_kinds(self, kinds: Iterable[tuple[str, str]]) -> None:
        """Events as (kind, detail) pairs: the game counters are fed from them."""
        for kind, detail in kinds:
            counter = self._by_event.get(kind)
            if counter is not None:
                counter.inc()
            elif kind == "ended":
                ending = detail.partition(":")[0]
                self._endings.get(ending, self._endings["other"]).inc()

    def observe_events(self, events: Iterable[tuple[int, rules.Event]]) -> None:
        """Events a table recorded (`Applied.events`, `TableHost.advance`): call it once for
        every event, whether an action or a timer produced it."""
        for _, event in events:
            counter = self._by_event.get(event.kind)
            if counter is not None:
                counter.inc()
            elif event.kind == "ended":
                self._endings[ending_of(event)].inc()


class JournalMetrics:
    """
    - machiavelox_shard_journal_write_seconds{shard}: histogram, one group-commit write to the
      journal store (what every answer of it waited for).
    - machiavelox_shard_journal_failures_total{shard}: counter, journal writes that failed (their
      actions refused `table/journal`, their tables rebuilt from the store).
    - machiavelox_shard_journal_healthy{shard}: gauge, 0 while the journal store cannot be
      written (actions refused at once).
    - machiavelox_shard_tables_in_memory{shard}: gauge, tables held (in play, or ended within
      their resume grace): flat over time on a steady load.
    - machiavelox_shard_recovery_seconds{shard}: gauge, how long the last start's recovery took;
      machiavelox_shard_tables_recovered{shard}: the tables it restored.
    """

    def __init__(self, registry: CollectorRegistry, shard_id: str) -> None:
        s = ("shard",)
        self.shard_id = shard_id
        self.write = Histogram(
            "machiavelox_shard_journal_write_seconds", "One write to the journal store.",
            s, buckets=LOOP_BUCKETS, registry=registry).labels(shard_id)
        self.failures = Counter(
            "machiavelox_shard_journal_failures_total", "Journal writes that failed.",
            s, registry=registry).labels(shard_id)
        self.healthy = Gauge(
            "machiavelox_shard_journal_healthy", "1 while the journal store takes writes.",
            s, registry=registry).labels(shard_id)
        self.in_memory = Gauge(
            "machiavelox_shard_tables_in_memory", "Tables held in memory.", s,
            registry=registry).labels(shard_id)
        self.recovery = Gauge(
            "machiavelox_shard_recovery_seconds", "Duration of the last start's recovery.", s,
            registry=registry).labels(shard_id)
        self.recovered = Gauge(
            "machiavelox_shard_tables_recovered", "Tables the last start restored.", s,
            registry=registry).labels(shard_id)

    def track(self, healthy: Callable[[], float], in_memory: Callable[[], float]) -> None:
        """Read at each scrape (the callables must only read; see `read_safely`)."""
        self.healthy.set_function(read_safely(healthy))
        self.in_memory.set_function(read_safely(in_memory))

