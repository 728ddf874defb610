"""In-process smazzate between bots, on the engine, in simulated time (tests and the ladder).

Each bot reads its view (`rules.view_for`) when it wakes, decides, and its action reaches the
table after the bot's reaction delay; meanwhile the others may act, so races are real (M6.4):
the table may have moved under a decision. A refusal is *predictable* when nothing at all
happened on the table between the decision and its arrival (the view already held the reason,
a bot bug), a *race* otherwise. Deals are seeded (`rules.shuffled_deal(seed)`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from machiavelox import codec, rules

from .mind import Decision, SolverBot, SolveStat
from .strategy import Closing, next_action

MAX_SIM_MS = 60 * 60_000  # a smazzata longer than an hour of table time is cut
MAX_ACTIONS = 20_000


class Player(Protocol):
    seat: rules.Seat

    def decide(self, view: rules.PlayerView) -> Decision | None: ...
    def accepted(self, action: rules.Action) -> None: ...
    def refused(self, action: rules.Action) -> None: ...
    def idle(self) -> int: ...


@dataclass
class BaselineBot:
    """Today's bots (`strategy.next_action`) at the pace of `player.py`: an action 200 ms
    after each look, a look every second when there is nothing to do."""
    seat: rules.Seat
    interval_ms: int = 200
    closing: Closing = field(default_factory=Closing)

    def decide(self, view: rules.PlayerView) -> Decision | None:
        pb = codec.view_to_pb(view, "arena", view.phase, [s.status for s in view.seats])
        action = next_action(pb, self.seat, can_close=self.closing.met)
        return None if action is None else Decision(action, self.interval_ms)

    def accepted(self, action: rules.Action) -> None:
        self.closing.accepted(action)

    def refused(self, action: rules.Action) -> None:
        """Today's bot learns nothing from a refusal: its next look decides afresh."""

    def idle(self) -> int:
        return self.interval_ms * 5


@dataclass
class LeveledBot(SolverBot):
    def idle(self) -> int:
        return self.level.idle_ms


@dataclass
class Outcome:
    seed: int
    winner: rules.Seat | None
    scores: tuple[int, ...]
    ending: str
    sim_ms: int
    actions: list[int] = field(default_factory=lambda: [0, 0, 0])
    races: list[int] = field(default_factory=lambda: [0, 0, 0])
    predictable: list[list[str]] = field(default_factory=lambda: [[], [], []])
    solves: list[SolveStat] = field(default_factory=list)


def play(seed: int, players: list[Player], deal: rules.Deal | None = None,
         watch: Callable[[rules.Table], None] | None = None) -> Outcome:
    """One smazzata to its end (or the caps), the players in seat order; `watch` sees the
    table after every step (tests)."""
    table = rules.Table(deal if deal is not None else rules.shuffled_deal(seed))
    wake = [0, 0, 0]
    pending: list[tuple[rules.Action, int, tuple[int, int]] | None] = [None, None, None]
    out = Outcome(seed, None, (), "cut", 0)
    steps = 0
    while table.phase is not rules.Phase.ENDED and steps < MAX_ACTIONS:
        steps += 1
        times = [p[1] if p is not None else wake[s] for s, p in enumerate(pending)]
        seat = min(range(3), key=lambda s: (times[s], s))
        now = times[seat]
        if now > MAX_SIM_MS:
            break
        table.advance(max(now, table.now_ms))
        if watch is not None:
            watch(table)
        if _ended(table):
            break
        bot = players[seat]
        sent = pending[seat]
        if sent is not None:
            action, _, stamp = sent
            pending[seat] = None
            wake[seat] = now
            out.actions[seat] += 1
            try:
                table.apply(action, table.now_ms)
            except rules.RulesError as err:
                if _stamp(table) == stamp:
                    out.predictable[seat].append(f"{type(action).__name__}: {err.code}")
                else:
                    out.races[seat] += 1
                bot.refused(action)
            else:
                bot.accepted(action)
            if watch is not None:
                watch(table)
            continue
        decision = bot.decide(rules.view_for(table, rules.Seat(seat)))
        if decision is None:
            wake[seat] = now + bot.idle()
        else:
            pending[seat] = (decision.action, now + decision.delay_ms, _stamp(table))
    result = table.result
    out.sim_ms = table.now_ms
    if result is not None:
        out.winner, out.scores, out.ending = result.winner, tuple(result.scores), result.ending
    for p in players:
        if isinstance(p, SolverBot):
            out.solves += p.solves
    return out


def _ended(table: rules.Table) -> bool:
    return table.phase is rules.Phase.ENDED


def _stamp(table: rules.Table) -> tuple[int, int]:
    """Changes when anything happens on the table: an accepted action or a timer firing."""
    return len(table.log), len(table.events)
