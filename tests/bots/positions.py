"""Random small positions for the solver's tests: regular melds on the table, a hand, and the
engine table that holds them (an explicit deal, docs/rules-decisions.md "Setup")."""

from __future__ import annotations

import random

from machiavelox.rules import ALL_CARDS, Card, Deal, Seat, Table, is_regular


def random_melds(rng: random.Random, deck: list[Card], count: int) -> list[tuple[Card, ...]]:
    """`count` regular melds (runs of 3 to 6 round the circle, sets of 3 or 4) from `deck`,
    whose cards are removed from it."""
    out: list[tuple[Card, ...]] = []
    tries = 0
    while len(out) < count and tries < 200:
        tries += 1
        if rng.random() < 0.6:
            suit = rng.randrange(4)
            start = rng.randrange(13)
            length = rng.randint(3, 6)
            faces = [(suit, (start + i) % 13 + 1) for i in range(length)]
        else:
            rank = rng.randint(1, 13)
            faces = [(s, rank) for s in rng.sample(range(4), rng.choice((3, 3, 4)))]
        picked: list[Card] = []
        for suit, rank in faces:
            have = [c for c in deck if c.suit == suit and c.rank == rank and c not in picked]
            if not have:
                break
            picked.append(rng.choice(have))
        if len(picked) == len(faces) and is_regular(picked):
            for c in picked:
                deck.remove(c)
            out.append(tuple(picked))
    return out


def random_position(seed: int, melds: int = 2, hand: int = 3,
                    near: bool = True) -> tuple[list[tuple[Card, ...]], list[Card]]:
    """Table melds and a hand. `near`: hand cards mostly of the suits and ranks on the table,
    so that rearrangements matter."""
    rng = random.Random(seed)
    deck = list(ALL_CARDS)
    table = random_melds(rng, deck, melds)
    on_table = [c for m in table for c in m]
    cards: list[Card] = []
    while len(cards) < hand:
        if near and on_table and rng.random() < 0.8:
            base = rng.choice(on_table)
            options = [c for c in deck if (c.suit == base.suit and
                                           min((c.rank - base.rank) % 13,
                                               (base.rank - c.rank) % 13) <= 2)
                       or c.rank == base.rank]
        else:
            options = deck
        c = rng.choice(options)
        deck.remove(c)
        cards.append(c)
    return table, cards


def table_for(melds: list[tuple[Card, ...]], hand: list[Card], drawn: bool = True,
              direct: bool = True, tallone: int = 3) -> Table:
    """An engine table with these melds and P1's hand; P2 and P3 hold nothing but a few cards
    in their talloni (so nothing ends the smazzata at once)."""
    used = {c for m in melds for c in m} | set(hand)
    rest = [c for c in ALL_CARDS if c not in used]
    talloni = (tuple(rest[:tallone]), tuple(rest[tallone:2 * tallone]),
               tuple(rest[2 * tallone:3 * tallone]))
    deal = Deal(removed=(), talloni=talloni, hands=(tuple(hand), (), ()), table=tuple(melds),
                drawn=frozenset({Seat.P1}) if drawn else frozenset(),
                direct_meld=frozenset({Seat.P1}) if direct else frozenset())
    return Table(deal)
