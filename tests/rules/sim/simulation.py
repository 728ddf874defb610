"""Seeded simulations: three agents playing one smazzata (or the smazzate of a match) with
random timing, checked on the way.

A step: time passes (`Agents.tick`: at once, seconds, or exactly to a deadline), then one
agent acts (or a silent one comes back, or nothing happens). Every action goes through `act`:
a refusal must be a `RulesError` (anything else propagates: a bug) and must change nothing
(errors.py): the cheap `watch.fingerprint` is compared around every action, the full
`invariants.snapshot` around the careful ones. With a `Watch`, `watch.check_step` runs after
every step. `drive_to_end`: the agents stop playing and time alone must end the smazzata (M7
inactivity and forced draws, M9.6, M10 final silence and tiebreak, M11).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from machiavelox.rules import SEATS, Action, Draw, Liveness, Phase, RulesError, Table

from .agents import COMPLETE, Agents
from .endings import check_ending
from .engine import deadlines
from .invariants import assert_refusal_changed_nothing, check_replay, snapshot
from .positions import SHORT, seeded_deal
from .watch import Driver, Watch, advance_to, check_step, fingerprint, table_driver

ACTIVE_STEPS = 400  # steps of play in a small position; then time is driven forward
MAX_GAME_MS = 4 * 3600 * 1000  # a smazzata must end within 4 hours of game time


@dataclass
class Stats:
    endings: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    steps: int = 0

    def add(self, other: Stats) -> None:
        self.endings.update(other.endings)
        self.events.update(other.events)
        self.refusals.update(other.refusals)
        self.steps += other.steps


@dataclass
class Simulation:
    """Agents playing through a driver; `watch` set: every step is checked (`check_step`)."""

    agents: Agents
    driver: Driver
    stats: Stats = field(default_factory=Stats)
    watch: Watch | None = None

    @property
    def table(self) -> Table:
        return self.agents.table

    def act(self, action: Action, at: int, careful: bool = False) -> bool:
        """Apply one action at `at` (time has already been advanced to `at`); whether it was
        accepted. A refusal must be a RulesError and must change nothing (errors.py)."""
        t = self.table
        before = fingerprint(t)
        full = snapshot(t) if careful else None
        try:
            self.driver.apply(action, at)
        except RulesError as e:
            self.stats.refusals[e.code] += 1
            self.agents.plans.pop(action.player, None)  # the table changed under the plan
            assert fingerprint(t) == before, f"refused {action} ({e.code}) changed the table"
            if full is not None:
                assert_refusal_changed_nothing(full, t, action)
            return False
        return True

    def check(self, replay_each: bool) -> None:
        if self.watch is not None:
            check_step(self.table, self.watch)
        if replay_each:
            check_replay(self.table)

    def step(self, careful: bool = False, replay_each: bool = False) -> None:
        """One step: time passes, then one agent acts, or a silent one comes back, or nothing
        happens; then the checks."""
        agents, t = self.agents, self.table
        at = agents.tick()
        advance_to(t, self.driver, self.watch, at)
        self.stats.steps += 1
        if t.phase is not Phase.ENDED:
            action = agents.comeback(at)
            if action is None:
                p = agents.actor()
                action = None if p in agents.silent_until else agents.choose(p)
            if action is not None:
                self.act(action, at, careful)
        self.check(replay_each)

    def drive_to_end(self, replay_each: bool = False) -> None:
        """The agents stop playing (back at the table, idle): time alone must end the
        smazzata."""
        agents, t = self.agents, self.table
        for p in sorted(agents.silent_until):
            if t.players[p].in_play:
                self.act(Liveness(p, True), t.now_ms)
        agents.silent_until.clear()
        limit = t.start_ms + MAX_GAME_MS
        for _ in range(5_000):
            if t.phase is Phase.ENDED or t.now_ms >= limit:
                break
            due = min(deadlines(t), default=limit)
            self.driver.advance(min(limit, max(t.now_ms + 1, due)))
            self.stats.steps += 1
            self.check(replay_each)
        assert t.phase is Phase.ENDED or t.now_ms >= limit, (
            "time does not end the smazzata: its timers keep firing")
        assert t.phase is Phase.ENDED, (
            f"the smazzata has not ended after {MAX_GAME_MS // 3_600_000} hours of game time")

    def opening_draws(self, lo: int, hi: int) -> None:
        """A few draws each (M4.2) at time 0, so that a full deal has something to play."""
        for p in SEATS:
            for _ in range(self.agents.rng.randint(lo, hi)):
                self.act(Draw(p), 0)


def play_smazzata(seed: int, stats: Stats, full: bool, replay_each: bool) -> Table:
    """One smazzata of the complete agents from its seed (a SHORT position, or a full deal),
    to its end, every step checked; then its ending (M12 scores) and its replay."""
    rng = random.Random(seed)
    t = Table(seeded_deal(rng, SHORT, full))
    sim = Simulation(Agents(rng, t, COMPLETE), table_driver(t), stats, Watch())
    for i in range(3 * ACTIVE_STEPS if full else ACTIVE_STEPS):
        if t.phase is Phase.ENDED or t.now_ms >= MAX_GAME_MS // 2:
            break
        sim.step(careful=replay_each or i % 8 == 0, replay_each=replay_each)
    sim.drive_to_end(replay_each)
    check_ending(t)
    check_replay(t)
    stats.endings[t.result.ending if t.result else "?"] += 1
    stats.events.update(e.kind for e in t.events)
    return t


def run_all(what: str, seeds: list[int], play: Callable[[int, int], object]) -> None:
    """Play every seed; a failure does not stop the others (all are reported at the end)."""
    failures: list[str] = []
    for i, seed in enumerate(seeds):
        try:
            play(i, seed)
        except AssertionError as e:
            failures.append(f"{what} {i} (seed {seed}): {e}")
    assert not failures, f"{len(failures)} of {len(seeds)} failed:\n" + "\n".join(failures[:8])
