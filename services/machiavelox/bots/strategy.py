"""A simple, legal-minded bot: pure functions from a player's view to its next action.

In order of preference: finish an open calata (a direct meld of the pozzetto, or place its
cards where they fit, else conclude); put down a regular triple from the hand (declare, then
direct); attach a hand card where it makes a meld longer, unless it would empty the hand
before the closing conditions are met (M8.2); draw. Nothing to do: wait (the inactivity rule
ends every smazzata, M7). Bots do not rearrange the table: they exist to drive the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2

Cards = tuple[rules.Card, ...]


@dataclass
class Closing:
    """What today's bot remembers of its own accepted actions: the two closing conditions
    (M8.2), `next_action`'s `can_close`."""

    drew: bool = False
    direct: bool = False

    def accepted(self, action: rules.Action) -> None:
        self.drew = self.drew or isinstance(action, rules.Draw)
        self.direct = self.direct or isinstance(action, rules.Direct)

    @property
    def met(self) -> bool:
        return self.drew and self.direct


def _cards(msgs: object) -> list[rules.Card]:
    return [rules.card_at(m.index) for m in msgs]  # type: ignore[attr-defined]


def _triple(hand: list[rules.Card]) -> Cards | None:
    """A regular meld of three in the hand, if any (sets first, then runs)."""
    by_rank: dict[int, dict[rules.Suit, rules.Card]] = {}
    for c in hand:
        by_rank.setdefault(c.rank, {})[c.suit] = c
    for suits in by_rank.values():
        if len(suits) >= 3:
            return tuple(list(suits.values())[:3])
    if len(hand) > 14:
        return None
    for combo in combinations(sorted(hand, key=lambda c: (c.suit, c.rank)), 3):
        if rules.is_regular(combo):
            return combo
    return None


def next_action(view: common_pb2.PlayerView, seat: rules.Seat,
                can_close: bool = True) -> rules.Action | None:
    """The bot's next action, or None to wait. `can_close`: the bot has drawn and put down a
    direct meld (M8.2), so emptying its hand is a valid closing."""
    if view.phase not in (common_pb2.PHASE_PLAYING, common_pb2.PHASE_FROZEN):
        return None
    me = view.seats[seat]
    if me.status not in (common_pb2.PLAYER_STATUS_ACTIVE, common_pb2.PLAYER_STATUS_DORMANT):
        return None
    if view.phase == common_pb2.PHASE_FROZEN and view.stopper != seat + 1:
        return None
    hand = _cards(view.hand)
    pozzetto = _cards(me.pozzetto)
    melds = [(m.id, [rules.card_at(tc.card.index) for tc in m.cards]) for m in view.table]
    if pozzetto:
        if len(pozzetto) >= 3 and rules.is_regular(pozzetto):
            return rules.Direct(seat, tuple(pozzetto))
        for card in pozzetto:
            for mid, cards in melds:
                if rules.is_regular(cards) and rules.is_regular([*cards, card]):
                    return rules.Place(seat, card, mid)
        return rules.Conclude(seat)
    if me.calata_open:
        return rules.Conclude(seat)
    triple = _triple(hand)
    if triple is not None:
        return rules.Declare(seat, triple)
    for card in hand if (can_close or len(hand) > 1) else ():
        for mid, cards in melds:
            if rules.is_regular(cards) and rules.is_regular([*cards, card]):
                return rules.Attach(seat, card, mid)
    if me.tallone_count > 0:
        return rules.Draw(seat)
    return None
