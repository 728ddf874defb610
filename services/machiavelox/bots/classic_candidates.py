"""Candidate melds of classic Machiavelli for the shared solver (`solver.py`): the classic
`Shape` (C2, C3).

Faces are the solver's (`candidates.py`: rank and suit, 0..51; the third deck's copies share
them). A classic run holds each rank once and may be 13 long (no automatic split); where the
Ace stands is the table's variant: `low` (A-2-3 only), `low-high` (also Q-K-A, never K-A-2),
`circular` (round the corner). A set is 3 or 4 cards of one rank in distinct suits.

Jokers (C2) stand for any face of a candidate; a candidate is offered when at least two of its
faces have a natural card available (no lone joker: every classic meld holds two naturals,
decision) and the jokers in play can fill the rest. Runs of 3 to 5 (plus one per joker, up to
two: a run like A-JK-JK-4-5-6 splits into no two valid runs) are enough for new melds: a
longer run is two of them end to end; longer runs (to 13) are candidates only round a kept
table meld, extended in place, as for Machiavelox.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import combinations

from machiavelox.classic import Aces
from machiavelox.rules import Card

from .candidates import (
    MAX_FREE_RUN,
    MAX_SET,
    MIN_MELD,
    RANKS,
    SUITS,
    Candidate,
    Face,
    Shape,
)
from .position import TableMeld

MAX_RUN = 13  # C3 (decision): each rank once; A..K..A (14) is never a candidate
MIN_NATURALS = 2  # C2 (decision): no lone joker


@dataclass(frozen=True, slots=True)
class ClassicTableMeld(TableMeld):
    """A classic table meld for the solver: `cards` are its natural cards; `faces` what the
    whole meld stands for (each joker as the face the view says it stands for)."""
    faces: tuple[Face, ...] = ()
    jokers: int = 0


def windows(aces: Aces) -> Iterator[tuple[int, int]]:
    """(first position, length) of every run the variant allows; positions 1..14 (14 is the
    high Ace)."""
    for length in range(MIN_MELD, MAX_RUN + 1):
        if aces is Aces.CIRCULAR:
            starts = range(1, 2) if length == MAX_RUN else range(1, RANKS + 1)
        else:
            top = RANKS if aces is Aces.LOW else RANKS + 1
            starts = range(1, top - length + 2)
        for start in starts:
            yield start, length


def run_faces(suit: int, start: int, length: int) -> tuple[Face, ...]:
    return tuple(sorted(suit * RANKS + (start - 1 + i) % RANKS for i in range(length)))


@functools.lru_cache(maxsize=4096)
def extensions(faces: tuple[Face, ...], aces: Aces) -> tuple[tuple[Face, ...], ...]:
    """The melds a valid table meld of `faces` (sorted; each joker as the face it stands
    for) becomes with cards added and none taken away (C3): the longer runs of its suit that
    hold every one of its faces, or the set of four of its rank."""
    suits = {f // RANKS for f in faces}
    have = set(faces)
    if len(suits) == 1:  # a run (a set has distinct suits)
        suit = next(iter(suits))
        return tuple(run for start, length in windows(aces) if length > len(faces)
                     for run in [run_faces(suit, start, length)] if have <= set(run))
    if len(faces) < MAX_SET:
        rank = faces[0] % RANKS
        return (tuple(s * RANKS + rank for s in range(SUITS)),)
    return ()


class ClassicShape(Shape):
    def __init__(self, aces: Aces, jokers: int, decks: int) -> None:
        self.aces = aces
        self.jokers = jokers  # jokers the play may use (the hand's and the touchable table's)
        self.decks = decks
        self.max_free = MAX_FREE_RUN + min(jokers, 2)
        self._windows = list(windows(aces))

    def _fits(self, faces: tuple[Face, ...], available: Mapping[Face, int]) -> bool:
        have = sum(1 for f in faces if available.get(f, 0) > 0)
        return have >= MIN_NATURALS and len(faces) - have <= self.jokers

    def candidates(self, available: Mapping[Face, int],
                   kept: Iterable[tuple[Face, ...]] = ()) -> list[Candidate]:
        grown = [frozenset(k) for k in kept]
        seen: set[tuple[Face, ...]] = set()
        out: list[Candidate] = []
        for suit in range(SUITS):
            if sum(available.get(suit * RANKS + r, 0) > 0 for r in range(RANKS)) < MIN_NATURALS:
                continue
            for start, length in self._windows:
                faces = run_faces(suit, start, length)
                if faces in seen or not self._fits(faces, available):
                    continue
                if length <= self.max_free or any(k <= set(faces) for k in grown):
                    seen.add(faces)
                    out.append(Candidate(faces, True))
        for rank in range(RANKS):
            for size in range(MIN_MELD, MAX_SET + 1):
                for combo in combinations(range(SUITS), size):
                    faces = tuple(s * RANKS + rank for s in combo)
                    if self._fits(faces, available):
                        out.append(Candidate(faces, False))
        return out

    def meld_faces(self, cards: tuple[Card, ...], meld: object) -> tuple[Face, ...]:
        if isinstance(meld, ClassicTableMeld):
            return meld.faces
        return super().meld_faces(cards, meld)

    def is_shape(self, faces: tuple[Face, ...]) -> bool:
        return 0 < len(faces) <= MAX_RUN and len(set(faces)) == len(faces)

    def upper(self, cand: Candidate, available: Mapping[Face, int]) -> int:
        return min(min(available.get(f, 0) for f in cand.faces) + self.jokers,
                   self.decks + self.jokers)
