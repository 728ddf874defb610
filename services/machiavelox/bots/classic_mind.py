"""`ClassicBot`: a classic Machiavelli player's decisions from its own view (C4-C8).

At the start of each of its turns the bot plans the whole turn (`classic_solver`: the most hand
cards onto a valid table; `classic_plan`: the gestures, checked as `End` would judge them) and
then plays it one action per `decide`, each resolved on the view it is given (meld ids by a
card they hold). With nothing to place, a joker swap when one fits (C2: the turn ends without
a draw, the joker in hand), else a draw (C5). A turn it finds already changed and has no plan
for (a bot that joined mid-turn, or an action refused) is given up (`Restore`, C6) if the
table changed, else drawn. Pure: no clock, no I/O; the shells (`classic_arena.py`,
`classic_player.py`) do the waiting.

Its strength is its `level` (`classic_levels.py`: the table melds a turn may rearrange,
joker swaps, the planner's time limit); the default is `hard`, the whole table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

from machiavelox.classic import ClassicAction, ClassicView, Seat, Variants

from .classic_levels import HARD, ClassicLevel
from .classic_levels import named as level_named
from .classic_plan import (
    DRAW_STEP,
    END_STEP,
    RESTORE_STEP,
    ClassicStep,
    build_plan,
    check,
    resolve,
    reworked,
    swap_step,
    where_of,
)
from .classic_solver import ClassicPosition, ClassicSolution, position_of, solve_classic


@dataclass(frozen=True, slots=True)
class Decision:
    """One planned turn, for figures and tests."""
    solve_ms: float
    size: int  # cards in the position (hand + touchable table)
    placed: int  # hand cards the plan puts on the table
    status: str  # the solver's: optimal | time-limit | none
    kind: str  # play | swap | draw | fallback (a solution the check refused: drawn instead)
    unplayable: int = 0  # solutions of the search whose plan the check refused (counted)


@dataclass
class ClassicBot:
    seat: Seat
    variants: Variants
    level: ClassicLevel = HARD
    time_limit_s: float | None = None  # the planner's time limit (None: the level's)
    decisions: list[Decision] = field(default_factory=list)
    _turn: tuple[int, int | None] | None = None
    _steps: list[ClassicStep] = field(default_factory=list)

    @classmethod
    def named(cls, seat: Seat, variants: Variants, level: str) -> ClassicBot:
        """A bot of the level of that name (`classic_levels.named`: `basic` is `hard`)."""
        return cls(seat, variants, level_named(level))

    def decide(self, view: ClassicView) -> ClassicAction | None:
        """The next action, or None when it is not the bot's turn."""
        if view.phase != "playing" or view.turn != self.seat:
            self._steps = []
            return None
        turn = (view.hand_number, view.turn_started_ms)
        if turn != self._turn:
            self._turn = turn
            self._steps = [] if view.turn_changed else self.plan(view)
        if self._steps:
            action = resolve(self._steps[0], where_of(view), self.seat)
            if action is not None:
                return action
            self._steps = []
        fallback = RESTORE_STEP if view.turn_changed else DRAW_STEP
        return resolve(fallback, {}, self.seat)

    def accepted(self, action: ClassicAction) -> None:
        if self._steps:
            self._steps.pop(0)

    def refused(self, action: ClassicAction) -> None:
        """The plan is dropped: the next decision gives the turn up (or draws)."""
        self._steps = []

    def plan(self, view: ClassicView) -> list[ClassicStep]:
        """The whole turn, from the view at its start."""
        pos = position_of(view, self.seat, self.variants)
        limit = self.level.solver_s if self.time_limit_s is None else self.time_limit_s
        found = self._search(pos, limit)
        sol, steps = found.solution, found.steps
        kind = "play"
        if steps is None:
            swap = swap_step(pos) if self.level.swaps else None
            kind, steps = "draw", [DRAW_STEP]
            if swap is not None and check(pos, [swap, END_STEP], self.seat):
                kind, steps = "swap", [swap, END_STEP]
            if sol.placed:  # a solution the plan could not play: a bug of ours, counted
                kind = "fallback"
        self.decisions.append(Decision(found.ms, sol.size, sol.placed, sol.status, kind,
                                       found.unplayable))
        return steps

    def _search(self, pos: ClassicPosition, limit: float) -> _Found:
        """The play of the most hand cards that reworks at most `level.depth` table melds
        (`classic_plan.reworked`), within `limit` (the solves' times summed).

        Bounded levels choose the melds the play needs: the whole table's best play first
        (half the time); if it reworks more melds than the depth, the hand and attaches alone
        (`rework` empty), then every `depth` of the melds the whole table's play reworked,
        while time is left; the most cards wins (the first found among equals)."""
        depth = self.level.depth
        found = _Found()
        if depth == 0:
            found.add(self, pos, solve_classic(pos, limit, ()))
            return found
        sol = solve_classic(pos, limit if depth is None else limit / 2)
        whole = found.add(self, pos, sol)
        if depth is None or (whole is None and sol.status == "optimal"):
            return found  # (nothing fits on the whole table: nothing fits on a part)
        need = reworked(pos, whole) if whole is not None else set()
        if whole is not None and len(need) <= depth:
            return found
        found.solution, found.steps = ZERO, None  # (too many melds reworked: not a play)
        for rework in [(), *combinations(sorted(need), depth)]:
            if found.ms >= limit * 1000 and rework:
                break
            found.add(self, pos, solve_classic(pos, max(limit - found.ms / 1000, 0.001),
                                               rework))
        return found


ZERO = ClassicSolution(0, (), "none", 0.0, 0)


@dataclass
class _Found:
    """A search's best play so far: its solution and checked steps (None: none)."""
    solution: ClassicSolution = ZERO
    steps: list[ClassicStep] | None = None
    ms: float = 0.0  # every solve's time
    unplayable: int = 0  # solutions whose plan the check refused (a bug of ours)

    def add(self, bot: ClassicBot, pos: ClassicPosition, sol: ClassicSolution
            ) -> list[ClassicStep] | None:
        """Count `sol` in; its checked steps (None: it places nothing, or its plan fails)."""
        self.ms += sol.solve_ms
        steps = build_plan(pos, sol) if sol.placed else None
        if steps is not None and not check(pos, steps, bot.seat):
            steps = None
            self.unplayable += 1
        if self.solution is ZERO or (steps is not None and (
                self.steps is None or sol.placed > self.solution.placed)):
            self.solution, self.steps = sol, steps
        return steps
