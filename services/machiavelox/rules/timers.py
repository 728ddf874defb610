"""The table's timers: which deadline fires next (M5.0.1, M5.5.8, M6.3, M7).

Timers are not stored as a queue: each is a deadline on the state it belongs to (a calata, a
hold, the inactivity countdown), so undoing or concluding something cancels its timer for free.
Timers due at the same instant fire in a fixed order: holds, calata timeouts, consolidations,
inactivity; then by seat or calata id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .state import CalataStatus, Phase

if TYPE_CHECKING:
    from .table import Table

_ORDER = {"hold": 0, "calata": 1, "consolidate": 2, "inactivity": 3}


@dataclass(frozen=True, order=True)
class Timer:
    at_ms: int
    order: int
    ref: int
    kind: str


def all_timers(table: Table) -> list[Timer]:
    if table.phase is Phase.ENDED:
        return []
    out: list[Timer] = []
    for ps in table.players:
        if ps.hold is not None:
            out.append(Timer(ps.hold.deadline_ms, _ORDER["hold"], int(ps.seat), "hold"))
    for cal in table.calate.values():
        if cal.status is CalataStatus.OPEN and cal.deadline_ms is not None:
            out.append(Timer(cal.deadline_ms, _ORDER["calata"], cal.id, "calata"))
        elif cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms is not None:
            out.append(Timer(cal.consolidate_ms, _ORDER["consolidate"], cal.id, "consolidate"))
    if table.phase is Phase.PLAYING:
        out.append(Timer(table.inactivity_ms, _ORDER["inactivity"], 0, "inactivity"))
    return out


def due_timers(table: Table, now_ms: int) -> Timer | None:
    """The first timer due at or before `now_ms`, or None."""
    timers = [t for t in all_timers(table) if t.at_ms <= now_ms]
    return min(timers) if timers else None
