"""A bot of a level (`levels.py`): pure decisions from its own view, time as an argument.

`decide(view)` returns the next action and the delay after which to send it (the level's
human-like reaction), or None to look again after `level.idle_ms`; `accepted` / `refused`
tell it what became of the action. It sees only its view (`rules.view_for`), and remembers
only what it did itself (its draws and direct melds, for the closing conditions, M8.2).

A decision: go on with the plan in progress while the table is what the plan expects; else
solve the view (`solver.py`), turn the best play into steps (`plan.py`) and play them; with
nothing to place, conclude an open calata, or draw (M4.2), or wait. A race lost to a faster
player (M6.4), a chain that undid a move (M5.5) or a refusal makes the bot plan again from the
view it has then (M5.0.1: a normal outcome).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from machiavelox.rules import (
    Action,
    Card,
    Conclude,
    Direct,
    Draw,
    GiveUp,
    PlayerView,
    Seat,
    Stop,
)

from .levels import Level
from .plan import Plan, build_plan
from .position import FROZEN, PLAYING, TIEBREAK, Position, position_of
from .resolve import to_action
from .solver import Rules, Solution, solve

CALATA_MS = 40_000  # M5.0.1
RETRIES = 2  # plans cut short from one position before the bot gives that position up
MEMORY = 64  # positions remembered for that


@dataclass(frozen=True, slots=True)
class Decision:
    action: Action
    delay_ms: int  # send the action this long after the view was read


@dataclass
class SolveStat:
    ms: float
    size: int  # cards in the position (pool + touchable table)
    status: str


@dataclass
class SolverBot:
    seat: Seat
    level: Level
    seed: int = 0
    drew: bool = False  # M8.2(1), known from the start in explicit positions
    direct_given: bool = False  # M8.2(2), likewise
    solves: list[SolveStat] = field(default_factory=list)
    _plan: Plan | None = None
    _next: int = 0
    _sent: Action | None = None
    _directs: list[tuple[Card, ...]] = field(default_factory=list)
    _first_tallone: int | None = None
    _last_key: object = None  # the position last solved with nothing to play
    _plan_key: object = None  # the position the plan in progress was made from
    _broken: dict[object, int] = field(default_factory=dict)  # plans cut short, by position

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    # -- feedback ----------------------------------------------------------------------------
    def accepted(self, action: Action) -> None:
        if isinstance(action, Draw):
            self.drew = True
        if isinstance(action, Direct):
            self._directs.append(action.cards)
        if self._plan is not None and action == self._sent and not isinstance(action, Stop):
            self._next += 1  # (the plan a Stop! was said for goes on in the freeze, M9.4)
        self._sent = None

    def refused(self, action: Action) -> None:
        self._drop_plan()
        self._sent = None
        self._last_key = None

    # -- the decision ------------------------------------------------------------------------
    def decide(self, view: PlayerView) -> Decision | None:
        me = view.seats[self.seat]
        if me.status != "active" or view.phase not in (PLAYING, FROZEN, TIEBREAK):
            return None
        if view.phase == FROZEN and view.stopper != self.seat:
            return None  # M9.2: frozen
        if view.phase == TIEBREAK and self.seat not in view.tiebreak:
            return None  # M10.2
        if self._first_tallone is None:
            self._first_tallone = me.tallone_count
        if me.tallone_count < self._first_tallone:
            self.drew = True  # forced draws count too (M7.3)
        action = self._continue(view)
        if action is not None:
            return self._send(action, first=False)
        return self._fresh(view)

    def _send(self, action: Action, first: bool) -> Decision:
        self._sent = action
        base = self.level.stop_ms if isinstance(action, Stop) else None
        return Decision(action, self.level.delay_ms(first, self._rng, base))

    def _continue(self, view: PlayerView) -> Action | None:
        plan = self._plan
        if plan is None:
            return None
        if self._next >= len(plan.steps):
            self._plan = None
            return None
        action = to_action(plan.steps[self._next], view, self.seat, plan.universe)
        if action is None:
            self._drop_plan()  # the table moved under the plan: plan again
        return action

    def _drop_plan(self) -> None:
        """A plan cut short (a race lost, M6.4; a refusal): counted against the position it
        was made from. The same position coming back (the chain undid our calata and the
        others', M5.5, and the table is as it was) would replay the same plan and meet the
        same interruption: a cycle that never ends the smazzata. After `RETRIES` cuts the bot
        treats that position as one with nothing to play."""
        if self._plan is not None and self._next < len(self._plan.steps):
            if len(self._broken) >= MEMORY:
                self._broken.pop(next(iter(self._broken)))
            self._broken[self._plan_key] = self._broken.get(self._plan_key, 0) + 1
        self._plan = None

    def _fresh(self, view: PlayerView) -> Decision | None:
        me = view.seats[self.seat]
        stop = view.phase == FROZEN
        position = position_of(view, self.seat)
        key = (position, self.drew, self.has_direct(view), stop)
        plan = None
        if key != self._last_key and self._broken.get(key, 0) < RETRIES:
            plan = self._solve(position, view, self.level.depth)
            if plan is not None and not stop and not self._in_time(plan, view):
                plan = self._solve(position, view, 0)  # the 40 s (M5.0.1): a shorter play
                plan = plan if plan is not None and self._in_time(plan, view) else None
        if stop and (plan is None or not plan.closes):
            # M9.6: no closing left (never expected: the bot stops only with one in hand)
            return self._send(GiveUp(self.seat), first=True)
        if plan is None:
            self._last_key = key
            if me.calata_open:
                return self._send(Conclude(self.seat), first=True)
            if view.phase == PLAYING and me.tallone_count > 0 and not me.pozzetto:
                return self._send(Draw(self.seat), first=False)  # a draw is a quick tap
            return None
        if (self.level.hold and not plan.closes and view.phase == PLAYING
                and me.tallone_count > 0 and not me.calata_open and not me.pozzetto):
            # the level keeps its cards until one calata can close (M8.1): cards laid early
            # are places the opponents attach to; with the tallone empty it sheds (M10.1)
            self._last_key = key
            return self._send(Draw(self.seat), first=False)
        self._last_key = None
        self._plan, self._next, self._plan_key = plan, 0, key
        if self._wants_stop(plan, view):
            return self._send(Stop(self.seat), first=True)
        action = self._continue(view)
        return None if action is None else self._send(action, first=True)

    def _solve(self, position: Position, view: PlayerView, depth: int | None) -> Plan | None:
        limit = self.level.stop_solver_s if position.stop else self.level.solver_s
        rules = Rules(drawn=self.drew, has_direct=self.has_direct(view), depth=depth,
                      time_limit_s=limit)
        solution: Solution = solve(position, rules)
        self.solves.append(SolveStat(solution.solve_ms, position.size, solution.status))
        return build_plan(position, solution)

    def _in_time(self, plan: Plan, view: PlayerView) -> bool:
        """The plan ends before its calata's 40 s at this level's pace (M5.0.1)."""
        me = view.seats[self.seat]
        deadline = me.calata_deadline_ms if me.calata_open else None
        left = (deadline - view.now_ms) if deadline is not None else CALATA_MS
        need = self.level.think_ms + len(plan.steps) * self.level.act_ms
        return need * (1 + self.level.jitter) <= left - self.level.calata_margin_ms

    def _wants_stop(self, plan: Plan, view: PlayerView) -> bool:
        """Stop! (M9) to close without interference: a valid closing in hand, nothing of ours
        open, no wound on the table to mend (M9.4), once per smazzata (M9.1)."""
        me = view.seats[self.seat]
        least = self.level.stop_min_steps
        return (least is not None and view.phase == PLAYING and plan.closes
                and len(plan.steps) >= least and not me.said_stop and not me.calata_open
                and all(m.regular for m in view.table))

    def has_direct(self, view: PlayerView) -> bool:
        """M8.2(2): a direct meld of ours stands (a calata undone by the chain gives its cards
        back to the hand, M5.5.7, and is as if it never happened)."""
        if self.direct_given:
            return True
        on_table = {tc.card for m in view.table for tc in m.cards}
        return any(all(c in on_table for c in cards) for cards in self._directs)
