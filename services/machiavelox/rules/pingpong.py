"""Ping-pong (M6.5): a card moved back and forth by simultaneous calate becomes reserved.

For every card moved by open calate, an episode counts how many times the card has stood at
each position (meld id; the position it started from counts once). When a move brings it to a
position for the third time and at least two players' calate moved it, the card is reserved to
the player, among them, whose calata started first (ties: the lower seat). The others are
refused `card/reserved` until that calata ends. An episode ends with the last calata that moved
the card.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .cards import Card
from .errors import conflict
from .events import Event
from .seats import Seat
from .state import Calata, Phase

if TYPE_CHECKING:
    from .state import PlayerState
    from .table import Table

RETURNS_TO_RESERVE = 3


@dataclass
class Episode:
    visits: dict[int, int] = field(default_factory=dict)
    movers: set[Seat] = field(default_factory=set)


def check_reserved(t: Table, ps: PlayerState, card: Card) -> None:
    owner = t.reserved.get(card)
    if owner is None or owner == ps.seat:
        return
    if t.phase is Phase.FROZEN and t.stopper == ps.seat:
        return  # M9.4: every table card is the stopper's during the freeze
    raise conflict("card/reserved", f"{card.face} is reserved to {owner} after a ping-pong "
                   "(M6.5)")


def moved(t: Table, ps: PlayerState, card: Card, src: int, dst: int) -> list[Event]:
    ep = t.episodes.setdefault(card, Episode(visits={src: 1}))
    ep.movers.add(ps.seat)
    ep.visits[dst] = ep.visits.get(dst, 0) + 1
    if ep.visits[dst] < RETURNS_TO_RESERVE or len(ep.movers) < 2 or card in t.reserved:
        return []
    open_movers = [c for s in ep.movers if (c := t.open_calata(s)) is not None]
    if not open_movers:
        return []
    first = min(open_movers, key=lambda c: (c.started_ms, c.player))
    t.reserved[card] = first.player
    return [Event("reserved", t.now_ms, first.player, cards=(card,),
                  detail="ping-pong: reserved to the calata that started first")]


def calata_ended(t: Table, cal: Calata) -> None:
    for card in [c for c, owner in t.reserved.items() if owner == cal.player]:
        del t.reserved[card]
    for card in list(t.episodes):
        ep = t.episodes[card]
        ep.movers.discard(cal.player)
        if not any(t.open_calata(s) is not None and s != cal.player for s in ep.movers):
            del t.episodes[card]
