"""A planned step made an engine action on the live view (meld ids are the table's).

A step names its destination by a card it holds; the table's meld ids are read from the view
when the step is played. A step whose table is no longer the one it was planned on (another
player was faster, M6.4; a chain undid something, M5.5; a hold, M6.1) resolves to None: the
bot then plans again from the view it has (races are a normal outcome, M5.0.1).
"""

from __future__ import annotations

from machiavelox.rules import (
    Action,
    Attach,
    Card,
    Conclude,
    Declare,
    Direct,
    Move,
    Place,
    PlayerView,
    Seat,
)

from .plan import ATTACH, CONCLUDE, DECLARE, DIRECT, MOVE, PLACE, Step
from .position import TIEBREAK


def shape_of(view: PlayerView, universe: frozenset[Card]) -> frozenset[frozenset[Card]]:
    """The view's melds holding cards of `universe`, as sets of cards."""
    return frozenset(frozenset(tc.card for tc in m.cards) for m in view.table
                     if any(tc.card in universe for tc in m.cards))


def to_action(step: Step, view: PlayerView, seat: Seat,
              universe: frozenset[Card]) -> Action | None:
    """The action for `step` on `view`, or None when the view is not what the plan expects."""
    if shape_of(view, universe) != step.before:
        return None
    where: dict[Card, int] = {}
    held: set[Card] = set()
    for m in view.table:
        for tc in m.cards:
            where[tc.card] = m.id
            if tc.held_by is not None and tc.held_by != seat:
                held.add(tc.card)
    me = view.seats[seat]
    pozzetto = set(view.common if view.phase == TIEBREAK else me.pozzetto)
    hand = set(view.hand)
    dst = where.get(step.anchor) if step.anchor is not None else None
    if step.anchor is not None and dst is None:
        return None
    if step.kind == DECLARE:
        return Declare(seat, step.cards) if set(step.cards) <= hand else None
    if step.kind == DIRECT:
        return Direct(seat, step.cards) if set(step.cards) <= pozzetto else None
    card = step.cards[0] if step.cards else None
    if step.kind == MOVE and card is not None:
        src = where.get(card)
        if src is None or card in held or src == dst or not (pozzetto or view.stopper == seat):
            return None  # M6.1: held by another; M5.3.1: no declared cards
        return Move(seat, card, src, dst)
    if step.kind == PLACE and card is not None and dst is not None:
        return Place(seat, card, dst) if card in pozzetto else None
    if step.kind == ATTACH and card is not None and dst is not None:
        return Attach(seat, card, dst) if card in hand and not pozzetto else None
    if step.kind == CONCLUDE:
        return Conclude(seat) if me.calata_open else None
    return None
