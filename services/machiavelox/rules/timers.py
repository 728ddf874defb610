"""The table's timers: which deadline fires next (M5.0.1, M5.5.8, M6.3, M7, M9, M10, M11).

Timers are not stored as a queue: each is a deadline on the state it belongs to (a calata, a
hold, the inactivity countdown, the freeze, the tiebreak, a player's absence), so concluding or
undoing something cancels its timer for free. Timers due at the same instant fire in a fixed
order: holds, calata timeouts, the end of a freeze, consolidations, abandonments (all those of
one instant together, M11.3), inactivity, the end of a tiebreak; then by seat or calata id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .state import ABANDON_MS, CalataStatus, Phase, Timer, TimerKind

if TYPE_CHECKING:
    from .tablestate import TableState

def all_timers(table: TableState) -> list[Timer]:
    """Every armed timer. Computed once per state: the state changes only when an action is
    accepted or a timer fires, so (log length, timers fired) keys a cache (a refused action
    changes nothing, M2.3)."""
    return _cached(table)[0]


def _cached(table: TableState) -> tuple[list[Timer], int | None]:
    """The timers of the current state and the earliest deadline among them."""
    key = (len(table.log), table.fired)
    cached = table.timer_cache
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    timers = _compute(table)
    first = min(t.at_ms for t in timers) if timers else None
    table.timer_cache = (key, timers, first)
    return timers, first


def _compute(table: TableState) -> list[Timer]:
    if table.phase in (Phase.ENDED, Phase.PAUSE):
        return []
    out: list[Timer] = []
    for ps in table.players:
        if ps.hold is not None:
            out.append(Timer(ps.hold.deadline_ms, TimerKind.HOLD, int(ps.seat)))
        if ps.in_play and ps.absence_since_ms is not None:
            out.append(Timer(ps.absence_since_ms + ABANDON_MS, TimerKind.ABSENCE, int(ps.seat)))
    for cid in table.unsettled:  # the calate open or confirmed
        cal = table.calate[cid]
        if cal.status is CalataStatus.OPEN and cal.deadline_ms is not None:
            out.append(Timer(cal.deadline_ms, TimerKind.CALATA, cal.id))
        elif cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms is not None:
            out.append(Timer(cal.consolidate_ms, TimerKind.CONSOLIDATE, cal.id))
    if table.phase is Phase.PLAYING:
        out.append(Timer(table.inactivity_ms, TimerKind.INACTIVITY))
    if table.phase is Phase.FROZEN and table.stop_deadline_ms is not None:
        out.append(Timer(table.stop_deadline_ms, TimerKind.STOP))
    if table.phase is Phase.TIEBREAK and table.tiebreak_ms is not None:
        out.append(Timer(table.tiebreak_ms, TimerKind.TIEBREAK))
    return out


def due_timer(table: TableState, now_ms: int) -> Timer | None:
    """The first timer due at or before `now_ms`, or None."""
    timers, first = _cached(table)
    if first is None or first > now_ms:
        return None  # the usual case: nothing due
    return min(t for t in timers if t.at_ms <= now_ms)


def next_deadline(table: TableState) -> int | None:
    """When the next timer fires (ms of table time), or None when none is set."""
    return _cached(table)[1]
