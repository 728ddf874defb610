"""Classic melds (C2, C3): sets and runs with jokers and the three ways of playing the Ace.

A meld is an unordered collection of cards. A set is 3 or 4 cards of one rank, suits all
different; a run is 3 or more consecutive cards of one suit. A joker stands for any missing
card of either: in a set for a missing suit, in a run for a missing rank (inside it or at an
end). No joker stands alone (C2): decision (docs/rules-decisions.md), a meld holds at least
two natural cards, so the kind of every meld, and its suit or rank, can be read from the
table.

Aces (C3): `LOW` puts the Ace only below the 2 (A-2-3; Q-K-A is not a run); `LOW_HIGH` also
above the King (Q-K-A, and A..K..A with both Aces), never through it (K-A-2 is not a run);
`CIRCULAR` is Machiavelox's circle (M3.2: K-A-2 too). Decision: a classic run holds each rank
once (at most 13 cards; 14 only as A..K..A in `LOW_HIGH`), since classic never splits long
runs as Machiavelox does.

Machiavelox's `rules.melds.classify` is the same function as `classify(cards,
Aces.CIRCULAR)` on natural cards and runs of up to 13 (tests/classic/test_melds.py proves it
on random melds); the kind it returns is the same `MeldKind`. Pure functions only.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from machiavelox.rules import Card, MeldKind, Suit

from .cards import ClassicCard, Joker, sort_key
from .variants import Aces

MIN_NATURALS = 2  # decision (C2): "nessun jolly appoggiato da solo"
SET_MAX = 4  # C3


def opening_rank_value(rank: int) -> int:
    """C8: A=1, J/Q/K=10, other cards at face value."""
    return 10 if rank > 10 else rank


def _naturals(cards: Collection[ClassicCard]) -> list[Card]:
    return [c for c in cards if isinstance(c, Card)]


def _rank_of(value: int) -> int:
    """A position on the run line (1..14; 14 is the high Ace) to a rank."""
    return (value - 1) % 13 + 1


def run_starts(ranks: Sequence[int], n: int, aces: Aces) -> list[int]:
    """The first positions (1..14) of every window of `n` consecutive positions that can hold
    these natural ranks, the jokers filling the rest; [] when there is none (C3)."""
    if aces is Aces.CIRCULAR:
        if n > 13 or len(set(ranks)) != len(ranks):
            return []
        if n == 13:
            return [1]
        return [s for s in range(1, 14) if all((r - s) % 13 < n for r in ranks)]
    top = 13 if aces is Aces.LOW else 14
    others = [r for r in ranks if r != 1]
    if len(set(others)) != len(others):
        return []
    n_aces = len(ranks) - len(others)
    if n_aces == 0:
        options = [list(ranks)]
    elif aces is Aces.LOW:
        options = [[*others, 1]] if n_aces == 1 else []
    elif n_aces == 1:
        options = [[*others, 1], [*others, 14]]  # the Ace below the 2 or above the King
    elif n_aces == 2:
        options = [[*others, 1, 14]]
    else:
        options = []
    starts: set[int] = set()
    for values in options:
        lo, hi = min(values), max(values)
        starts.update(range(max(1, hi - n + 1), min(lo, top - n + 1) + 1))
    return sorted(starts)


Analysis = tuple[MeldKind, tuple[Card, ...], tuple[int, ...]]


def _analyse(cards: Collection[ClassicCard], aces: Aces) -> Analysis | None:
    """(kind, natural cards, run starts) of a valid meld, or None (C2, C3). A pure function
    of the cards: remembered (a table's melds are judged again at every `End`, most of them
    unchanged since the last)."""
    return _analysed(tuple(cards), aces)


@functools.lru_cache(maxsize=1 << 15)
def _analysed(cards: tuple[ClassicCard, ...], aces: Aces) -> Analysis | None:
    n = len(cards)
    if n < 3:
        return None
    nat = tuple(_naturals(cards))
    if len(nat) < MIN_NATURALS:
        return None
    first = nat[0]
    if all(c.rank == first.rank for c in nat):
        if n <= SET_MAX and len({c.suit for c in nat}) == len(nat):
            return MeldKind.SET, nat, ()
        return None
    if all(c.suit == first.suit for c in nat):
        starts = run_starts([c.rank for c in nat], n, aces)
        if starts:
            return MeldKind.RUN, nat, tuple(starts)
    return None


def classify(cards: Collection[ClassicCard], aces: Aces) -> MeldKind | None:
    """The kind of a valid meld, or None (C2, C3)."""
    found = _analyse(cards, aces)
    return None if found is None else found[0]


def is_valid(cards: Collection[ClassicCard], aces: Aces) -> bool:
    return _analyse(cards, aces) is not None


@dataclass(frozen=True, slots=True)
class Reading:
    """What a valid meld stands for: every position's face, in order (a run from its low
    end; a set by suit, the jokers' suits last)."""

    kind: MeldKind
    faces: tuple[tuple[int, Suit], ...]

    @property
    def opening_value(self) -> int:
        """C8: the points of the meld, each joker as the card it stands for."""
        return sum(opening_rank_value(rank) for rank, _ in self.faces)


def readings(cards: Collection[ClassicCard], aces: Aces) -> list[Reading]:
    """Every way the meld can be read (several when jokers can stand at either end of a run);
    [] when it is not a valid meld."""
    found = _analyse(cards, aces)
    if found is None:
        return []
    kind, nat, starts = found
    n = len(cards)
    if kind is MeldKind.SET:
        rank = nat[0].rank
        suits = sorted(c.suit for c in nat)
        missing = [s for s in Suit if s not in suits][:n - len(nat)]
        return [Reading(kind, tuple((rank, s) for s in (*suits, *missing)))]
    suit = nat[0].suit
    return [Reading(kind, tuple((_rank_of(v), suit) for v in range(start, start + n)))
            for start in starts]


def opening_value(cards: Collection[ClassicCard], aces: Aces) -> int:
    """C8: the points a meld is worth for the opening (0 if it is not valid). Decision: when a
    joker could stand for more than one card, the most valuable reading counts."""
    return max((r.opening_value for r in readings(cards, aces)), default=0)


def display_reading(cards: Collection[ClassicCard], aces: Aces) -> Reading | None:
    """The reading a view shows: a run starting with a natural card where one can (so extra
    jokers go at the high end: 5 6 JK is 5 6 7), else the highest window."""
    options = readings(cards, aces)
    if not options:
        return None
    if options[0].kind is MeldKind.SET:
        return options[0]
    faces = {(c.rank, c.suit) for c in _naturals(cards)}
    for r in options:
        if r.faces[0] in faces:
            return r
    return options[-1]


def arrange(cards: Collection[ClassicCard], aces: Aces
            ) -> list[tuple[ClassicCard, tuple[int, Suit] | None]]:
    """The meld in display order, each joker with the face it stands for: a valid meld as
    `display_reading` reads it; anything else by suit and rank, jokers last (standing for
    nothing)."""
    reading = display_reading(cards, aces)
    if reading is None:
        return [(c, None) for c in sorted(cards, key=sort_key)]
    naturals: dict[tuple[int, Suit], list[Card]] = {}
    for c in sorted(_naturals(cards), key=lambda c: c.copy):
        naturals.setdefault((c.rank, c.suit), []).append(c)
    jokers = sorted((c for c in cards if isinstance(c, Joker)), key=sort_key)
    out: list[tuple[ClassicCard, tuple[int, Suit] | None]] = []
    for face in reading.faces:
        held = naturals.get(face)
        if held:
            out.append((held.pop(0), None))
        else:
            out.append((jokers.pop(0), face))
    return out


def why_invalid(cards: Collection[ClassicCard], aces: Aces) -> str:
    """Why a meld is not valid, in words for people ('' when it is valid)."""
    if is_valid(cards, aces):
        return ""
    nat = _naturals(cards)
    if len(nat) < MIN_NATURALS and len(nat) < len(cards):
        return "no joker stands alone: a meld needs at least two natural cards (C2)"
    if len(cards) < 3:
        return "a meld has at least three cards (C3)"
    if all(c.rank == nat[0].rank for c in nat):
        if len(cards) > SET_MAX:
            return "a set has three or four cards (C3)"
        return "a set's suits must all be different (C3)"
    if all(c.suit == nat[0].suit for c in nat):
        return (f"a run's cards must be consecutive, each rank once (aces {aces.value}; "
                "jokers fill the gaps, C3)")
    return "neither a set (one rank) nor a run (one suit) (C3)"
