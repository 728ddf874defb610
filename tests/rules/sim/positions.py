"""Positions for the rules tests: explicit ones written out card by card, and random ones.

Random positions are built by one generator (`random_deal`) from a `Shape` (how many melds,
how big the hands, how short the talloni) and a `Dice`: a seeded `random.Random` for the
simulations (`RngDice`), or Hypothesis's `draw` for the property tests (`DrawDice`, so that a
failing position shrinks). The shapes in use: `SHORT` (smazzate that end quickly), `LOADED`
(rich hands, the seeded replay games) and `RICH` (the property tests: rearrangements waiting to
happen, races for the same card).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from hypothesis import strategies as st

from machiavelox.rules import (
    ALL_CARDS,
    SEATS,
    Card,
    Deal,
    Event,
    Seat,
    Suit,
    Table,
    card,
    copies_of,
    shuffled_deal,
)

P1, P2, P3 = Seat.P1, Seat.P2, Seat.P3
T = TypeVar("T")
Face = tuple[int, Suit]


# --------------------------------------------------------------------------- explicit
def cards(text: str) -> tuple[Card, ...]:
    """``"4C 5C 6C#2"`` -> cards (bare = copy 1)."""
    return tuple(card(t) for t in text.split())


def run(suit: Suit, first: int, last: int, copy_no: int) -> tuple[Card, ...]:
    """The run first..last of `suit` (no wrap), all of copy `copy_no`."""
    return tuple(copies_of(r, suit)[copy_no - 1] for r in range(first, last + 1))


def deal(
    *,
    table: Sequence[str] = (),
    hands: tuple[str, str, str] = ("", "", ""),
    talloni: tuple[str, str, str] = ("", "", ""),
    removed: str = "",
    drawn: Sequence[Seat] = SEATS,
    direct: Sequence[Seat] = (),
) -> Deal:
    """A deal from an explicit position (like a scenario's setup); cards not named are out of
    play."""
    return Deal(
        removed=cards(removed),
        talloni=(cards(talloni[0]), cards(talloni[1]), cards(talloni[2])),
        hands=(cards(hands[0]), cards(hands[1]), cards(hands[2])),
        table=tuple(cards(m) for m in table),
        drawn=frozenset(drawn),
        direct_meld=frozenset(direct),
    )


def position(
    *,
    table: Sequence[str] = (),
    hands: tuple[str, str, str] = ("", "", ""),
    talloni: tuple[str, str, str] = ("", "", ""),
    removed: str = "",
    drawn: Sequence[Seat] = SEATS,
    direct: Sequence[Seat] = (),
) -> Table:
    """A table from an explicit position."""
    return Table(deal(table=table, hands=hands, talloni=talloni, removed=removed, drawn=drawn,
                      direct=direct))


# --------------------------------------------------------------------------- dice
class Dice(Protocol):
    """A source of random choices, for `random_deal`."""

    def integer(self, lo: int, hi: int) -> int: ...

    def chance(self, p: float) -> bool: ...

    def pick(self, options: Sequence[T]) -> T: ...


@dataclass
class RngDice:
    """Dice of a seeded `random.Random` (the simulations)."""

    rng: random.Random

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]


@dataclass
class DrawDice:
    """Dice of Hypothesis (the property tests): every choice is a draw, and shrinks towards
    the first option, the low bound, and "no" for a chance."""

    draw: st.DrawFn

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def chance(self, p: float) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - round(100 * p)

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(list(options)))


# --------------------------------------------------------------------------- random
@dataclass(frozen=True)
class Shape:
    """What a random position looks like (ranges are inclusive)."""

    melds: tuple[int, int]  # consolidated regular melds tried on the table
    longest_run: int  # of those melds (M3.1)
    set_chance: float  # a table meld is a set (M3.4), else a run
    setups: tuple[int, int]  # rearrangements waiting to happen (see `_setup`)
    hand_chance: float  # a player has a hand at all
    hand: tuple[int, int]  # hand cards dealt one by one
    near_chance: float  # a dealt card is one that could join a table meld
    ready_chance: float  # a hand also gets a regular meld ready to put down (M5.1)
    tallone: tuple[int, int]
    tallone_like_hand: bool  # talloni dealt like hands (near cards), else from what is left
    drawn_chance: float  # a player counts as having drawn already (M8.2)
    direct_chance: float  # ... and as having put down a direct meld (M8.2)


# Smazzate that end quickly and reach every kind of calata (test_random_smazzate).
SHORT = Shape(melds=(2, 9), longest_run=7, set_chance=0.45, setups=(0, 1), hand_chance=0.6,
              hand=(0, 3), near_chance=0.6, ready_chance=0.6, tallone=(1, 6),
              tallone_like_hand=True, drawn_chance=0.5, direct_chance=0.3)
# Busy hands on a busy table (test_replay_random).
LOADED = Shape(melds=(3, 10), longest_run=8, set_chance=0.5, setups=(0, 1), hand_chance=1.0,
               hand=(3, 9), near_chance=0.7, ready_chance=0.5, tallone=(0, 8),
               tallone_like_hand=False, drawn_chance=0.7, direct_chance=0.3)
# The property tests: rearrangements waiting to happen and races for a card.
RICH = Shape(melds=(3, 8), longest_run=7, set_chance=0.5, setups=(1, 2), hand_chance=1.0,
             hand=(3, 9), near_chance=0.75, ready_chance=0.5, tallone=(1, 8),
             tallone_like_hand=False, drawn_chance=0.5, direct_chance=0.5)


def run_faces(suit: Suit, start: int, length: int) -> list[Face]:
    """A run of `length` faces from rank `start`, circular (M3.2)."""
    return [((start - 1 + i) % 13 + 1, suit) for i in range(length)]


def near_faces(melds: Sequence[Sequence[Card]]) -> list[Face]:
    """Faces that could join or mirror a table meld: its own faces (the other copy, useful once
    cards move), the ranks next to each card in its suit, every suit of each card's rank."""
    return sorted({(c.rank, c.suit) for m in melds for c in m}
                  | {(c.rank % 13 + 1, c.suit) for m in melds for c in m}
                  | {((c.rank - 2) % 13 + 1, c.suit) for m in melds for c in m}
                  | {(c.rank, s) for m in melds for c in m for s in Suit})


class _Builder:
    """The cards not yet dealt, taken face by face (either copy)."""

    def __init__(self, dice: Dice) -> None:
        self.dice = dice
        self.left = set(ALL_CARDS)

    def take(self, face: Face) -> Card | None:
        options = [c for c in copies_of(*face) if c in self.left]
        if not options:
            return None
        c = self.dice.pick(options)
        self.left.discard(c)
        return c

    def take_all(self, faces: Sequence[Face]) -> list[Card] | None:
        """All of `faces`, or none if one of them is gone."""
        if any(all(c not in self.left for c in copies_of(*f)) for f in faces):
            return None
        return [c for f in faces if (c := self.take(f)) is not None]

    def meld_faces(self, shape: Shape, longest: int) -> list[Face]:
        dice = self.dice
        if dice.chance(shape.set_chance):
            rank = dice.integer(1, 13)
            suits = list(Suit)
            picked = [suits.pop(dice.integer(0, len(suits) - 1))
                      for _ in range(dice.integer(3, 4))]
            return [(rank, s) for s in picked]  # M3.4
        suit = dice.pick(list(Suit))
        return run_faces(suit, dice.integer(1, 13), dice.integer(3, longest))  # M3.1

    def some_cards(self, shape: Shape, near: Sequence[Face], lo: int, hi: int) -> list[Card]:
        dice = self.dice
        out: list[Card] = []
        for _ in range(dice.integer(lo, hi)):
            if near and dice.chance(shape.near_chance):
                face = dice.pick(near)
            else:
                face = (dice.integer(1, 13), dice.pick(list(Suit)))
            if (c := self.take(face)) is not None:
                out.append(c)
        if dice.chance(shape.ready_chance) and (ready := self.take_all(
                self.meld_faces(shape, 4))):
            out += ready
        return out


def _setup(b: _Builder, table: list[tuple[Card, ...]], hands: list[list[Card]]) -> None:
    """A rearrangement waiting to happen (M5.3): a set of four r's and a run of suit s up to
    r-1, so that r(s) can move to the run and make room for (r+1)(s) from a hand; another
    player holds the other copy of (r+1)(s) and may lean on the moved card (a race)."""
    dice = b.dice
    r, s = dice.integer(1, 13), dice.pick(list(Suit))
    run_ = b.take_all(run_faces(s, (r - 4) % 13 + 1, 3))
    group = b.take_all([(r, t) for t in Suit]) if run_ else None
    extra = b.take((r % 13 + 1, s)) if group else None
    if run_ and group and extra:
        table += [tuple(run_), tuple(group)]
        who = dice.integer(0, 2)
        hands[who].append(extra)
        rival = b.take((r % 13 + 1, s))
        if rival is not None:
            hands[(who + 1 + dice.integer(0, 1)) % 3].append(rival)


def random_deal(dice: Dice, shape: Shape) -> Deal:
    """A small explicit position: consolidated regular melds on the table, hands (and short
    talloni) with cards that fit them or form melds among themselves, 0-2 removed cards."""
    b = _Builder(dice)
    table: list[tuple[Card, ...]] = []
    for _ in range(dice.integer(*shape.melds)):
        if (m := b.take_all(b.meld_faces(shape, shape.longest_run))) is not None:
            table.append(tuple(m))
    hands: list[list[Card]] = [[], [], []]
    for _ in range(dice.integer(*shape.setups)):
        _setup(b, table, hands)
    near = near_faces(table)
    for hand in hands:
        if dice.chance(shape.hand_chance):
            hand += b.some_cards(shape, near, *shape.hand)
    talloni: list[tuple[Card, ...]] = []
    for _ in SEATS:
        if shape.tallone_like_hand:
            talloni.append(tuple(b.some_cards(shape, near, *shape.tallone)))
        else:
            rest = sorted(b.left)
            picked = [rest[dice.integer(0, len(rest) - 1)]
                      for _ in range(dice.integer(*shape.tallone))]
            talloni.append(tuple(dict.fromkeys(picked)))
            b.left.difference_update(picked)
    rest = sorted(b.left)
    removed = tuple(dict.fromkeys(rest[dice.integer(0, len(rest) - 1)]
                                  for _ in range(dice.integer(0, 2))))
    return Deal(
        removed=removed,
        talloni=(talloni[0], talloni[1], talloni[2]),
        hands=(tuple(hands[0]), tuple(hands[1]), tuple(hands[2])),
        table=tuple(table),
        drawn=frozenset(s for s in SEATS if dice.chance(shape.drawn_chance)),
        direct_meld=frozenset(s for s in SEATS if dice.chance(shape.direct_chance)),
    )


def seeded_deal(rng: random.Random, shape: Shape, full: bool = False) -> Deal:
    """A random position of `shape`, or (`full`) a whole shuffled deal (M1.2-M1.4)."""
    return shuffled_deal(rng.getrandbits(32)) if full else random_deal(RngDice(rng), shape)


@st.composite
def _deals(draw: st.DrawFn, shape: Shape) -> Deal:
    return random_deal(DrawDice(draw), shape)


def explicit_deals(shape: Shape = RICH) -> st.SearchStrategy[Deal]:
    """Random positions of `shape` drawn by Hypothesis."""
    return _deals(shape)


# --------------------------------------------------------------------------- reading back
def meld_with(t: Table, text: str) -> int:
    """The id of the meld holding this exact card."""
    return t.board.where[card(text)]


def melds(t: Table) -> list[list[str]]:
    """The table as sorted lists of card names, sorted, for comparisons."""
    return sorted(sorted(str(c) for c in m) for m in t.board.melds.values())


def kinds(events: Sequence[Event]) -> list[str]:
    """Events as their words (``"p1 attached 7C#1 3"``), for comparisons."""
    return [" ".join(e.words()) for e in events]
