"""The engine internals the test harness reads, in one place (everything else goes through
`machiavelox.rules`). If the engine's layout changes, this module (with `invariants.py` and
`oracle.py`, which compare the engine's own structures) is what follows it.

Read here: the calate and their statuses (`rules.state.CalataStatus`), the live ops
(`Table.live_ops`, `Op.calata/.player/.cards/.touched/.prev/.needs`), `board.last_op`, the
holds and reservations (M6), and the timers (`rules.timers.all_timers`).
"""

from __future__ import annotations

from machiavelox.rules import Card, Seat, Table
from machiavelox.rules.board import Op
from machiavelox.rules.state import CalataStatus, PlayerState
from machiavelox.rules.timers import all_timers

__all__ = [
    "CalataStatus",
    "Op",
    "PlayerState",
    "calata_is_open",
    "deadlines",
    "held_cards",
    "live_ops",
    "trial_cards_by_meld",
]


def live_ops(table: Table) -> list[Op]:
    """The ops on the table now, in arrival order."""
    return table.live_ops()


def calata_is_open(table: Table, calata: int) -> bool:
    """Is the calata still open (its work on trial, M5.4.3)?"""
    return table.calate[calata].status is CalataStatus.OPEN


def held_cards(table: Table, but: Seat | None = None) -> set[Card]:
    """The table cards held (M6.1), by anyone but `but`."""
    return {p.hold.card for p in table.players if p.hold is not None and p.seat != but}


def trial_cards_by_meld(table: Table, seat: Seat) -> dict[int, set[Card]]:
    """Per meld, its cards on trial (M5.4.3) in the open calate of players other than `seat`:
    last brought there by a live op of an open calata."""
    out: dict[int, set[Card]] = {}
    for op in table.live_ops():
        cal = table.calate[op.calata]
        if cal.player == seat or cal.status is not CalataStatus.OPEN:
            continue
        for c in op.cards:
            mid = table.board.where.get(c)
            if mid is not None and table.board.last_op.get(c) == op.seq:
                out.setdefault(mid, set()).add(c)
    return out


def deadlines(table: Table) -> list[int]:
    """When each armed timer fires (M5.0.1 calata, M5.5.8 consolidation, M6.3 hold, M7
    inactivity, M9 freeze, M10 tiebreak, M11 absence), sorted."""
    return sorted(tm.at_ms for tm in all_timers(table))
