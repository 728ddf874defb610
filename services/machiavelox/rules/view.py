"""What one player may see (P1, P2, P5): `view_for(table, viewer)`.

The gateway streams views and events, never the table. A view holds the viewer's own hand and
pozzetto; of the opponents only counts and their face-up pozzetti (M4.3, M5.3.8); of every
tallone only its size, never its order; the removed cards (P1); and each table card's status:
consolidated, confirmed-not-yet-consolidated, on trial (by whom), held (by whom) (P2).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .cards import Card
from .melds import display_order, is_regular
from .seats import SEATS, Seat
from .state import ABANDON_MS, CalataStatus, Phase, SmazzataResult

if TYPE_CHECKING:
    from .tablestate import TableState


class CardStatus(enum.IntEnum):
    """Weakest first: a meld shows the weakest status among its cards."""

    TRIAL = 0
    CONFIRMED = 1
    CONSOLIDATED = 2

    @property
    def word(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class TableCard:
    card: Card
    status: CardStatus
    trial_by: Seat | None
    held_by: Seat | None


@dataclass(frozen=True)
class MeldView:
    id: int
    cards: tuple[TableCard, ...]
    regular: bool
    status: CardStatus


@dataclass(frozen=True)
class SeatView:
    seat: Seat
    status: str
    hand_count: int  # hand without the pozzetto
    pozzetto: tuple[Card, ...]  # face-up for everyone (M5.3.8)
    tallone_count: int
    calata_open: bool
    calata_deadline_ms: int | None
    zone: tuple[int, ...]  # melds the open calata is touching (M6.6)
    holding: Card | None  # a held card is shown as engaged (M6.6)
    dormant: bool  # P4: absent (no sign of life for 10 s), and since when
    silent_since_ms: int | None
    abandon_at_ms: int | None  # when absence becomes abandonment, if the clock runs (M11.2)
    said_stop: bool


@dataclass(frozen=True)
class PlayerView:
    viewer: Seat | None  # None: a spectator
    now_ms: int
    phase: str
    removed: tuple[Card, ...]  # P1
    hand: tuple[Card, ...]  # the viewer's own hand; empty for a spectator
    seats: tuple[SeatView, SeatView, SeatView]
    table: tuple[MeldView, ...]
    result: SmazzataResult | None
    stopper: Seat | None  # during a freeze (M9)
    stop_ends_ms: int | None
    tiebreak: tuple[Seat, ...]  # the tied players (M10.2)
    common: tuple[Card, ...]  # the common pozzetto, face-up
    tiebreak_ends_ms: int | None
    inactivity_ms: int | None  # when the 2-minute countdown fires (M7)
    reserved: tuple[tuple[Card, Seat], ...]  # ping-pong reservations (M6.5)


def card_status(table: TableState, card: Card) -> tuple[CardStatus, Seat | None]:
    """Status of a table card from the calata of the last op that moved it."""
    seq = table.board.last_op.get(card)
    op = table.ops.get(seq) if seq is not None else None
    if op is None:
        return CardStatus.CONSOLIDATED, None
    cal = table.calate[op.calata]
    if cal.status is CalataStatus.OPEN:
        return CardStatus.TRIAL, cal.player
    if cal.status is CalataStatus.CONFIRMED:
        return CardStatus.CONFIRMED, None
    return CardStatus.CONSOLIDATED, None


def meld_status(table: TableState, meld_id: int) -> CardStatus:
    """The weakest status of the meld's cards and of live ops that took cards from it."""
    weakest = min((card_status(table, c)[0] for c in table.board.melds[meld_id]),
                  default=CardStatus.CONSOLIDATED)
    lineage = set(table.board.lineage(meld_id))
    for op in table.live_ops():
        if op.src_meld is not None and op.src_meld in lineage:
            status = table.calate[op.calata].status
            if status is CalataStatus.OPEN:
                weakest = min(weakest, CardStatus.TRIAL)
            elif status is CalataStatus.CONFIRMED:
                weakest = min(weakest, CardStatus.CONFIRMED)
    return weakest


def _sorted(cards: set[Card] | tuple[Card, ...]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.suit, c.rank, c.copy)))


def view_for(table: TableState, viewer: Seat | None) -> PlayerView:
    holders = {ps.hold.card: ps.seat for ps in table.players if ps.hold is not None}
    melds: list[MeldView] = []
    for mid, cards in table.board.melds.items():
        shown = []
        for c in display_order(cards):
            status, by = card_status(table, c)
            shown.append(TableCard(c, status, by, holders.get(c)))
        melds.append(MeldView(mid, tuple(shown), is_regular(cards), meld_status(table, mid)))
    seats = []
    for s in SEATS:
        ps = table.players[s]
        cal = table.open_calata(s)
        seats.append(SeatView(
            seat=s,
            status=ps.status.value,
            hand_count=len(ps.hand),
            pozzetto=_sorted(ps.pozzetto),
            tallone_count=len(ps.tallone),
            calata_open=cal is not None,
            calata_deadline_ms=cal.deadline_ms if cal is not None else None,
            zone=tuple(sorted(cal.touched_now)) if cal is not None else (),
            holding=ps.hold.card if ps.hold is not None else None,
            dormant=table.is_dormant(s),
            silent_since_ms=ps.last_sign_ms if ps.silent else None,
            abandon_at_ms=(ps.absence_since_ms + ABANDON_MS
                           if ps.absence_since_ms is not None else None),
            said_stop=ps.said_stop,
        ))
    hand = _sorted(table.players[viewer].hand) if viewer is not None else ()
    return PlayerView(
        viewer=viewer,
        now_ms=table.now_ms,
        phase=table.phase.value,
        removed=table.removed,
        hand=hand,
        seats=(seats[0], seats[1], seats[2]),
        table=tuple(melds),
        result=table.result,
        stopper=table.stopper,
        stop_ends_ms=table.stop_deadline_ms,
        tiebreak=table.tiebreak_players,
        common=_sorted(tuple(table.common)),
        tiebreak_ends_ms=table.tiebreak_ms,
        inactivity_ms=table.inactivity_ms if table.phase is Phase.PLAYING else None,
        reserved=tuple(sorted(table.reserved.items(), key=lambda kv: kv[0].index)),
    )
