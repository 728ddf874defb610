"""Stop! (M9): the actions of the freeze (saying it, giving it up) and its 3 minutes; how it
ends is `endings.end_freeze`.

During the freeze the stopper's calata has no 40 s limit and may rearrange without placing
(M5.3.7 exception); it may touch any table card without a declaration and regardless of holds
and reservations (M9.4: exclusive dominion); it concludes by itself only when the whole table is
in order (M9.4: nobody closes leaving wounds). Frozen players can do nothing; their calate are
suspended with their clocks, and so are consolidations and the inactivity countdown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import actions as A
from . import endings
from . import lifecycle as L
from .errors import illegal
from .events import Event, EventKind
from .state import STOP_MS, CalataStatus, Phase

if TYPE_CHECKING:
    from .tablestate import TableState


def stop(t: TableState, a: A.Stop) -> list[Event]:
    ps = t.actor(a.player)
    if t.phase is Phase.TIEBREAK:
        raise illegal("stop/tiebreak", "there is no Stop! during a tiebreak (M10.2)")
    if ps.said_stop:
        raise illegal("stop/once", "Stop! can be said once per smazzata (M9.1)")
    ps.said_stop = True
    t.phase = Phase.FROZEN
    t.stopper = ps.seat
    t.stop_deadline_ms = t.now_ms + STOP_MS
    t.frozen = tuple(p.seat for p in t.players if p.in_play and p.seat != ps.seat)
    out = [Event(EventKind.STOP, t.now_ms, ps.seat)]
    for s in t.frozen:  # M9.2, M9.4
        other = t.players[s]
        if other.hold is not None:
            out.append(L.release_hold(t, other, EventKind.RELEASED))
        cal = t.open_calata(s)
        if cal is not None and cal.deadline_ms is not None:
            cal.suspended_left_ms = max(0, cal.deadline_ms - t.now_ms)
            cal.deadline_ms = None
    for cal in [t.calate[c] for c in t.unsettled]:
        if cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms is not None:
            cal.consolidate_left_ms = max(0, cal.consolidate_ms - t.now_ms)
            cal.consolidate_ms = None
    t.inactivity_left_ms = max(0, t.inactivity_ms - t.now_ms)
    endings.pause_absence(t, list(t.frozen))  # M11.5
    own = t.open_calata(ps.seat)
    if own is not None:  # the calata already open becomes the stop calata (M9.3)
        own.is_stop = True
        own.deadline_ms = None
    return out


def giveup(t: TableState, a: A.GiveUp) -> list[Event]:
    ps = t.actor(a.player)
    if t.phase is not Phase.FROZEN or t.stopper != ps.seat:
        raise illegal("stop/not-stopper", "only the player who said Stop! can give it up (M9.6)")
    return fail_stop(t, "gave up the Stop! (M9.6)")


def timeout(t: TableState) -> list[Event]:
    return fail_stop(t, "no closing within the 3 minutes of Stop! (M9.6)")


def fail_stop(t: TableState, why: str) -> list[Event]:
    """M9.6-M9.7: the stopper is eliminated; their open work is judged normally and, if it is
    not regular, undone whole, so the table is as it was when Stop! was said."""
    assert t.stopper is not None
    stopper = t.players[t.stopper]
    out: list[Event] = []
    cal = t.open_calata(stopper.seat)
    if cal is not None:
        out += endings.conclude(t, cal, "failed Stop!", whole=True)  # M9.7
        if t.phase is not Phase.FROZEN or not stopper.in_play:
            return out  # it closed after all, or was already eliminated by its closing
    return out + endings.eliminate(t, [stopper], why)
