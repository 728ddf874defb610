"""Ping-pong (M6.5): a card moved back and forth by simultaneous calate becomes reserved.

For every card moved by open calate, an episode counts how many times the card has stood at
each position (meld id; the position it started from counts once). When a move brings it to a
position for the third time and at least two players' calate moved it, the card is reserved to
the player, among them, whose calata started first (ties: the lower seat). The others are
refused `card/reserved` until that calata ends. An episode ends with the last calata that moved
the card.

Giving it up (M6.5 decision, with M5.5.1): at the reservation, every move of the card in the
episode made by another player's open calata becomes the reserved player's work: the op moves
to the reserved player's calata. The episode's moves of the card (and the reserved player's
later ones while it is reserved) are then one unit, `Op.bundle`: the card's journey stands or
falls whole (deps.dependents), and judging others' work leaves it out whole or not at all.
So those moves are no longer a dependency of the reserved player's work; if the others'
calate then fail, are void or are cancelled, the card stays where the episode left it, as
though the reserved player had taken it from where it stood before any of them moved it, and
the removal from that meld is judged as the reserved player's own work.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from .cards import Card
from .errors import conflict
from .events import Event, EventKind
from .state import Calata, CalataStatus, Episode, Phase

if TYPE_CHECKING:
    from .state import PlayerState
    from .tablestate import TableState

RETURNS_TO_RESERVE = 3


def check_reserved(t: TableState, ps: PlayerState, card: Card) -> None:
    owner = t.reserved.get(card)
    if owner is None or owner == ps.seat:
        return
    if t.phase is Phase.FROZEN and t.stopper == ps.seat:
        return  # M9.4: every table card is the stopper's during the freeze
    raise conflict("card/reserved", f"{card.face} is reserved to {owner} after a ping-pong "
                   "(M6.5)")


def moved(t: TableState, ps: PlayerState, op_seq: int, card: Card, src: int,
          dst: int) -> tuple[list[Event], list[Calata]]:
    """Count a move of `card` (op `op_seq`); the events of a reservation it made, and the
    calate whose work it changed (to be judged again): those that gave the card up, then the
    reserved player's."""
    ep = t.episodes.setdefault(card, Episode(visits={src: 1}))
    ep.movers.add(ps.seat)
    ep.ops.append(op_seq)
    ep.visits[dst] = ep.visits.get(dst, 0) + 1
    if ep.visits[dst] < RETURNS_TO_RESERVE or len(ep.movers) < 2 or card in t.reserved:
        return [], []
    open_movers = [c for s in ep.movers if (c := t.open_calata(s)) is not None]
    if not open_movers:
        return [], []
    first = min(open_movers, key=lambda c: (c.started_ms, c.player))
    t.reserved[card] = first.player
    event = Event(EventKind.RESERVED, t.now_ms, first.player, cards=(card,),
                  detail="ping-pong: reserved to the calata that started first")
    return [event], [*_give_up(t, ep, first), first]  # (judged in this order)


def _give_up(t: TableState, ep: Episode, owner: Calata) -> list[Calata]:
    """M6.5 decision: the others' moves of the reserved card in the episode become the work
    of the reserved player's calata `owner`; the calate that lost them."""
    losers: dict[int, Calata] = {}
    bundle = ep.ops[0]
    for seq in ep.ops:
        op = t.ops.get(seq)
        if op is None:
            continue
        if op.calata == owner.id:
            op.bundle = bundle
            continue
        cal = t.calate[op.calata]
        if cal.status is not CalataStatus.OPEN:
            continue  # concluded work is the table's, given up by nobody
        cal.ops.remove(seq)
        cal.needs.pop(seq, None)
        op.player, op.calata, op.needs = owner.player, owner.id, frozenset()
        op.bundle = bundle
        bisect.insort(owner.ops, seq)
        losers[cal.id] = cal
    return list(losers.values())


def bundle_of(t: TableState, ps: PlayerState, card: Card) -> int | None:
    """The unit a new move of `card` by `ps` joins: its ping-pong's, while it is reserved to
    them (M6.5 decision)."""
    if t.reserved.get(card) != ps.seat:
        return None
    ep = t.episodes.get(card)
    return ep.ops[0] if ep is not None and ep.ops else None


def calata_ended(t: TableState, cal: Calata) -> None:
    for card in [c for c, owner in t.reserved.items() if owner == cal.player]:
        del t.reserved[card]
    for card in list(t.episodes):
        ep = t.episodes[card]
        ep.movers.discard(cal.player)
        if not any(t.open_calata(s) is not None and s != cal.player for s in ep.movers):
            del t.episodes[card]
