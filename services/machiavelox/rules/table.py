"""One smazzata at one table: the facade of the pure rules engine (the sequencer's core).

`Table.apply(action, now_ms)` applies one action at server time `now_ms` (after firing every
timer due by then) and returns the events it produced; a refused action raises a RulesError and
changes nothing. `Table.advance(now_ms)` only lets time pass. No I/O, no wall clock: the same
deal and the same (time, action) log always give the same table (`Table.replay`).

The state is `tablestate.TableState`; the rules live in the modules below this one, in layers
(docs/rules-engine.md, "Layers"; the import contract in pyproject.toml enforces them): `play`
(card play) and `freeze` (Stop!) handle actions, `endings` acts on what concludes, `lifecycle`
is the calata mechanism (conclusions, undo, consolidation), under it the read-only analysis
(judgement, the chain's plan, timers). This module holds only the dispatch: which handler takes
an action, which rule a timer fires.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import actions as A
from . import endings, freeze, lifecycle, play
from .deal import Deal
from .errors import invalid
from .events import Event, EventKind
from .state import Timer, TimerKind
from .tablestate import TableState
from .timers import due_timer

Handler = Callable[[TableState, Any], list[Event]]

HANDLERS: dict[type[A.Action], Handler] = {
    A.Draw: play.draw,
    A.Declare: play.declare,
    A.Undeclare: play.undeclare,
    A.Direct: play.direct,
    A.Attach: play.attach,
    A.Place: play.place,
    A.Take: play.take,
    A.Put: play.put,
    A.Move: play.move,
    A.Release: play.release,
    A.Conclude: play.conclude,
    A.Cancel: play.cancel,
    A.Stop: freeze.stop,
    A.GiveUp: freeze.giveup,
    A.Abandon: endings.abandon_action,
    A.Liveness: endings.liveness,
    A.Ready: play.not_a_table_action,  # (the pause between smazzate: match.py)
    A.Leave: play.not_a_table_action,
}


def fire(t: TableState, timer: Timer) -> list[Event]:
    """The rule a due timer applies."""
    kind = timer.kind
    if kind is TimerKind.HOLD:  # M6.3
        return [lifecycle.release_hold(t, t.players[timer.ref], EventKind.HOLD_EXPIRED)]
    if kind is TimerKind.CALATA:  # M5.4.6
        return endings.conclude(t, t.calate[timer.ref], "timeout")
    if kind is TimerKind.STOP:  # M9.6
        return freeze.timeout(t)
    if kind is TimerKind.CONSOLIDATE:  # M5.5.8
        return lifecycle.consolidate(t, t.calate[timer.ref])
    if kind is TimerKind.ABSENCE:  # M11.2
        return endings.abandonment_due(t)
    if kind is TimerKind.INACTIVITY:  # M7.3
        return endings.inactivity(t)
    return endings.tiebreak_timeout(t)  # M10.3


class Table(TableState):
    # ------------------------------------------------------------------ public interface
    def apply(self, action: A.Action, now_ms: int) -> list[Event]:
        """Apply one action at server time `now_ms`; returns timer events then its events."""
        events = self.advance(now_ms)
        handler = HANDLERS.get(type(action))
        if handler is None:
            raise invalid("action/unknown", f"unknown action {type(action).__name__}")
        produced = handler(self, action)
        if not isinstance(action, A.Liveness):
            endings.sign_of_life(self, self.players[action.player])  # M11.1 decision
        self.log.append((now_ms, action))
        self.events += produced
        return events + produced

    def advance(self, now_ms: int) -> list[Event]:
        """Let time pass to `now_ms`, firing due timers in deadline order."""
        if now_ms < self.now_ms:
            raise invalid("time/backwards", f"time cannot go back from {self.now_ms} ms to "
                          f"{now_ms} ms")
        out: list[Event] = []
        while (timer := due_timer(self, now_ms)) is not None:
            self.now_ms = max(self.now_ms, timer.at_ms)
            self.fired += 1
            out += fire(self, timer)
        self.now_ms = now_ms
        self.events += out
        return out

    @classmethod
    def replay(cls, deal: Deal, log: Iterable[tuple[int, A.Action]], now_ms: int | None = None,
               start_ms: int = 0) -> Table:
        """Rebuild a table from its deal and action log (and advance it to `now_ms`)."""
        table = cls(deal, start_ms)
        for at, action in log:
            table.apply(action, at)
        if now_ms is not None:
            table.advance(now_ms)
        return table
