"""The deal (M1): two removed face-up cards and three talloni of 34, or an explicit position.

The randomness of a table lives in its Deal, so a table is replayable from (deal, action log).
Shuffles use a cryptographically secure RNG (M1 decision) unless a seed is given (tests,
scenarios, replays of seeded games).
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field

from .cards import ALL_CARDS, Card
from .seats import SEATS, Seat

TALLONE_SIZE = 34  # M1.3
REMOVED_COUNT = 2  # M1.2


@dataclass(frozen=True)
class Deal:
    """Where every card starts. Cards named nowhere are out of play (explicit deals only).

    `talloni[p]` lists the tallone top card first. `hands` and `table` exist for explicit
    positions (scenarios, tests): a real deal starts with empty hands and an empty table (M1.4).
    """

    removed: tuple[Card, ...]
    talloni: tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]]
    hands: tuple[tuple[Card, ...], tuple[Card, ...], tuple[Card, ...]] = ((), (), ())
    table: tuple[tuple[Card, ...], ...] = ()
    drawn: frozenset[Seat] = field(default_factory=frozenset)  # M8.2(1) already met
    direct_meld: frozenset[Seat] = field(default_factory=frozenset)  # M8.2(2) already met

    def __post_init__(self) -> None:
        seen: set[Card] = set()
        groups: list[tuple[Card, ...]] = [self.removed, *self.talloni, *self.hands, *self.table]
        for group in groups:
            for c in group:
                if c in seen:
                    raise ValueError(f"card {c} dealt twice")
                seen.add(c)

    def all_dealt(self) -> set[Card]:
        out = set(self.removed)
        for group in (*self.talloni, *self.hands, *self.table):
            out.update(group)
        return out


def shuffled_deal(seed: int | None = None) -> Deal:
    """A full deal of 104 cards: 2 removed, 3 x 34 talloni, empty hands (M1.2-M1.4)."""
    deck = list(ALL_CARDS)
    if seed is None:
        secrets.SystemRandom().shuffle(deck)
    else:
        random.Random(seed).shuffle(deck)
    removed = tuple(deck[:REMOVED_COUNT])
    rest = deck[REMOVED_COUNT:]
    talloni = tuple(tuple(rest[i * TALLONE_SIZE:(i + 1) * TALLONE_SIZE]) for i in SEATS)
    return Deal(removed=removed, talloni=(talloni[0], talloni[1], talloni[2]))
