"""The deal of a classic hand (C1, C4): hands, the common stock, who plays first.

Like Machiavelox's `rules.Deal`, the randomness of a hand lives in its deal, so a session is
replayable from its deals and its inputs. A shuffled deal gives 13 cards (15 with three decks)
to every player, one at a time, and leaves the rest face down as the stock; there is no discard
pile. The first player is chosen by cutting the deck (C4: the highest card starts; ties cut
again). An explicit deal (scenarios, tests) names every place, and the cards it names nowhere
are out of play.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field

from machiavelox.rules import Card, invalid

from .cards import ClassicCard, deck
from .seats import Seat
from .variants import Variants


@dataclass(frozen=True)
class ClassicDeal:
    """Where every card of one hand starts.

    `hands[i]` is seat i's hand (empty for a seat that does not play this hand); `stock` lists
    the stock top card first. `table` holds melds already down (explicit positions only: a real
    deal starts with an empty table). `opened` are players who have already made the opening
    (C8) and `totals` the points some players carry into this hand (sessions, C11): both for
    explicit positions.
    """

    hands: tuple[tuple[ClassicCard, ...], ...]
    stock: tuple[ClassicCard, ...]
    table: tuple[tuple[ClassicCard, ...], ...] = ()
    first: Seat = Seat.P1
    opened: frozenset[Seat] = field(default_factory=frozenset)
    totals: tuple[tuple[Seat, int], ...] = ()

    def __post_init__(self) -> None:
        seen: set[ClassicCard] = set()
        for group in (*self.hands, self.stock, *self.table):
            for c in group:
                if c in seen:
                    raise ValueError(f"card {c} dealt twice")
                seen.add(c)

    def dealt(self) -> set[ClassicCard]:
        out: set[ClassicCard] = set(self.stock)
        for group in (*self.hands, *self.table):
            out.update(group)
        return out

    def check(self, variants: Variants, playing: tuple[Seat, ...]) -> None:
        """Raise InvalidActionError (``deal/...``) unless this deal fits the table: its cards
        are of the variants' deck, hands only for the seats that play, a first player among
        them."""
        if len(self.hands) != variants.players:
            raise invalid("deal/seats", f"the deal has {len(self.hands)} hands for "
                          f"{variants.players} seats")
        cards = set(deck(variants.decks, variants.jokers))
        foreign = sorted(str(c) for c in self.dealt() if c not in cards)
        if foreign:
            raise invalid("deal/card", f"not in this table's deck ({variants.decks} decks, "
                          f"{variants.jokers} jokers): {' '.join(foreign)}")
        for seat, hand in zip(variants.seats, self.hands, strict=True):
            if hand and seat not in playing:
                raise invalid("deal/seat-out", f"{seat} does not play this hand (eliminated)")
        if self.first not in playing:
            raise invalid("deal/first", f"{self.first} cannot play first: not in this hand")
        for seat, _ in self.totals:
            if seat not in variants.seats:
                raise invalid("deal/seats", f"no seat {seat} at a table of {variants.players}")


def cut(rng: random.Random, playing: tuple[Seat, ...], cards: tuple[ClassicCard, ...]) -> Seat:
    """C4: each player cuts a card; the highest rank starts (K high, A low; a joker cuts
    again), and tied players cut again until one is highest."""
    naturals = [c for c in cards if isinstance(c, Card)]
    contenders = list(playing)
    while True:
        ranks = {s: rng.choice(naturals).rank for s in contenders}
        top = max(ranks.values())
        contenders = [s for s in contenders if ranks[s] == top]
        if len(contenders) == 1:
            return contenders[0]


def shuffled_deal(variants: Variants, seed: int | None = None,
                  playing: tuple[Seat, ...] | None = None, first: Seat | None = None
                  ) -> ClassicDeal:
    """A full deal for the seats that play (default: all): hands dealt one card at a time in
    turn order, the rest the stock (C1); `first` chosen by cutting unless given (C4). A seed
    makes it reproducible; without one the shuffle uses the system's secure randomness."""
    seats = variants.seats if playing is None else playing
    cards = list(deck(variants.decks, variants.jokers))
    rng = random.Random(seed) if seed is not None else random.Random(secrets.randbits(128))
    rng.shuffle(cards)
    size = variants.hand_size
    dealt: dict[Seat, list[ClassicCard]] = {s: [] for s in seats}
    pos = 0
    for _ in range(size):
        for s in seats:
            dealt[s].append(cards[pos])
            pos += 1
    hands = tuple(tuple(dealt.get(s, ())) for s in variants.seats)
    chosen = first if first is not None else cut(rng, seats, tuple(cards))
    return ClassicDeal(hands=hands, stock=tuple(cards[pos:]), first=chosen)
