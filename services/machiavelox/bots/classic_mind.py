"""`ClassicBot`: a classic Machiavelli player's decisions from its own view (C4-C8).

At the start of each of its turns the bot plans the whole turn (`classic_solver`: the most hand
cards onto a valid table; `classic_plan`: the gestures, checked as `End` would judge them) and
then plays it one action per `decide`, each resolved on the view it is given (meld ids by a
card they hold). With nothing to place, a joker swap when one fits (C2: the turn ends without
a draw, the joker in hand), else a draw (C5). A turn it finds already changed and has no plan
for (a bot that joined mid-turn, or an action refused) is given up (`Restore`, C6) if the
table changed, else drawn. Pure: no clock, no I/O; the shells (`classic_arena.py`,
`classic_player.py`) do the waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from machiavelox.classic import ClassicAction, ClassicView, Seat, Variants

from .classic_plan import (
    DRAW_STEP,
    END_STEP,
    RESTORE_STEP,
    ClassicStep,
    build_plan,
    check,
    resolve,
    swap_step,
    where_of,
)
from .classic_solver import TIME_LIMIT_S, position_of, solve_classic


@dataclass(frozen=True, slots=True)
class Decision:
    """One planned turn, for figures and tests."""
    solve_ms: float
    size: int  # cards in the position (hand + touchable table)
    placed: int  # hand cards the plan puts on the table
    status: str  # the solver's: optimal | time-limit | none
    kind: str  # play | swap | draw | fallback (a solution the check refused: drawn instead)


@dataclass
class ClassicBot:
    seat: Seat
    variants: Variants
    time_limit_s: float = TIME_LIMIT_S
    decisions: list[Decision] = field(default_factory=list)
    _turn: tuple[int, int | None] | None = None
    _steps: list[ClassicStep] = field(default_factory=list)

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
        sol = solve_classic(pos, self.time_limit_s)
        steps = build_plan(pos, sol) if sol.placed else None
        kind = "play"
        if steps is None or not check(pos, steps, self.seat):
            swap = swap_step(pos)
            kind, steps = "draw", [DRAW_STEP]
            if swap is not None and check(pos, [swap, END_STEP], self.seat):
                kind, steps = "swap", [swap, END_STEP]
            if sol.placed:  # a solution the plan could not play: a bug of ours, counted
                kind = "fallback"
        self.decisions.append(Decision(sol.solve_ms, sol.size, sol.placed, sol.status, kind))
        return steps
