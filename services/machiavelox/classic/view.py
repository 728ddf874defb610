"""What one player may see of a classic table (as strict as Machiavelox's P5).

`view_for(session, viewer)` builds it: the viewer's own hand; of every other player only the
number of cards in hand; of the stock only its size, never its order (nor the cards out of
play of an explicit position); the table, which is public, in display order with what each
joker stands for; whose turn it is and how long is left on the table's clock; each player's
opening status, status in the session and total; the last hand's result and the session's.
A spectator (viewer None) sees no hand at all. Events go through `ClassicEvent.for_viewer`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from machiavelox.rules import RANK_NAMES, MeldKind, Suit

from .cards import ClassicCard, sorted_cards
from .melds import arrange, classify
from .scoring import HandResult, SessionResult
from .seats import Seat
from .session import Session
from .variants import Aces


@dataclass(frozen=True)
class MeldView:
    id: int
    cards: tuple[ClassicCard, ...]  # display order (a run from its low end)
    stands_for: tuple[str | None, ...]  # per card: the face a joker stands for (``7H``)
    kind: MeldKind | None  # None: not a valid meld (only in the middle of a turn)


@dataclass(frozen=True)
class SeatView:
    seat: Seat
    status: str  # active | eliminated
    playing: bool  # dealt in this hand
    hand_count: int
    opened: bool  # C8 (always true without an opening rule)
    total: int  # the session total (C11)


@dataclass(frozen=True)
class ClassicView:
    viewer: Seat | None  # None: a spectator
    now_ms: int
    phase: str  # playing | between | ended
    rules: str  # the variant set, in words
    hand_number: int
    hand: tuple[ClassicCard, ...]  # the viewer's own hand; empty for a spectator
    seats: tuple[SeatView, ...]
    table: tuple[MeldView, ...]
    stock_count: int
    turn: Seat | None  # whose turn it is (None between hands)
    turn_started_ms: int | None
    turn_ends_ms: int | None  # C7: None when untimed
    time_left_ms: int | None
    turn_changed: bool  # the player on turn has changed the table (a restore would undo it)
    standings: tuple[Seat, ...]  # best first (C11)
    last_hand: HandResult | None
    result: SessionResult | None


def _face(face: tuple[int, Suit] | None) -> str | None:
    if face is None:
        return None
    rank, suit = face
    return f"{RANK_NAMES[rank - 1]}{suit.name}"


@functools.lru_cache(maxsize=4096)
def _shown(cards: frozenset[ClassicCard], aces: Aces
           ) -> tuple[tuple[ClassicCard, ...], tuple[str | None, ...], MeldKind | None]:
    """A meld as views show it. Pure, so cached: views are built for every player after
    every action, and most melds do not change between two of them."""
    shown = arrange(cards, aces)
    return (tuple(c for c, _ in shown), tuple(_face(f) for _, f in shown),
            classify(cards, aces))


def view_for(session: Session, viewer: Seat | None) -> ClassicView:
    hand = session.hand
    aces = session.variants.aces
    melds: list[MeldView] = []
    for mid, cards in hand.melds.items():
        shown, stands_for, kind = _shown(frozenset(cards), aces)
        melds.append(MeldView(mid, shown, stands_for, kind))
    seats = tuple(SeatView(
        seat=s,
        status=session.status(s),
        playing=s in hand.playing,
        hand_count=len(hand.hands.get(s, ())),
        opened=s in hand.opened,
        total=session.totals[s],
    ) for s in session.seats)
    own = hand.hands.get(viewer, set()) if viewer is not None else set()
    in_play = not hand.over and session.result is None
    return ClassicView(
        viewer=viewer,
        now_ms=session.now_ms,
        phase=session.phase,
        rules=session.variants.describe(),
        hand_number=hand.number,
        hand=sorted_cards(own),
        seats=seats,
        table=tuple(melds),
        stock_count=len(hand.stock),
        turn=hand.turn if in_play else None,
        turn_started_ms=hand.turn_started_ms if in_play else None,
        turn_ends_ms=hand.deadline_ms if in_play else None,
        time_left_ms=hand.time_left_ms() if in_play else None,
        turn_changed=in_play and hand.changed(),
        standings=session.standings(),
        last_hand=hand.result,
        result=session.result,
    )
