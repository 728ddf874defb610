"""Candidate melds for the solver: every regular meld (M3) the available cards could form.

Cards are reduced to their *face* (rank and suit, 0..51: `suit * 13 + rank - 1`): for the
regularity of a meld the two physical copies of a face (M1.1) are interchangeable, so the
solver counts faces and the planner (`plan.py`) picks the physical cards afterwards.

Candidates are runs of cards of one suit, consecutive around the circle (M3.1, M3.2: Q-K-A-2
is a run) and sets of 3 or 4 cards of one rank in distinct suits (M3.4). Runs of 3 to 5 are
enough for any table (a longer run is two of them end to end, M3.5); runs of 6 to 10 are
candidates only when they hold a kept table meld (extended in place). Runs longer than 10 are
never candidates: the engine splits them at once into two regular runs (M3.3), so a run of 11+
is the same table as two shorter candidates, and targets of at most 10 cards never split while
they are built. Every candidate has distinct faces, so it uses at most one copy of each face;
the solver may lay a candidate twice (identical melds may coexist, M3.5).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import combinations

from machiavelox.rules import Card

RANKS = 13
SUITS = 4
FACES = RANKS * SUITS
MIN_MELD = 3  # M3.5
MAX_TARGET_RUN = 10  # M3.3: a longer run is split by the engine
MAX_FREE_RUN = 5  # longer runs are two shorter ones end to end (see `candidates`)
MAX_SET = 4  # M3.4

Face = int


def face_of(card: Card) -> Face:
    return card.index % FACES


def face_rank(face: Face) -> int:
    return face % RANKS + 1


def face_suit(face: Face) -> int:
    return face // RANKS


def faces_of(cards: Iterable[Card]) -> tuple[Face, ...]:
    return tuple(sorted(face_of(c) for c in cards))


@dataclass(frozen=True, slots=True)
class Candidate:
    faces: tuple[Face, ...]  # sorted, distinct
    is_run: bool


def run_faces(suit: int, start_rank: int, length: int) -> tuple[Face, ...]:
    """The faces of the run of `length` cards of `suit` from `start_rank` round the circle."""
    return tuple(sorted(suit * RANKS + (start_rank - 1 + i) % RANKS for i in range(length)))


def candidates(available: Mapping[Face, int],
               kept: Iterable[tuple[Face, ...]] = ()) -> list[Candidate]:
    """The candidate melds whose faces all have at least one available card: every set, the
    runs of 3 to 5 cards, and the longer runs (up to 10) that hold one of the `kept` melds.

    Runs of 3 to 5 are enough to build any table: a run of 6 or more is two runs of 3 to 5
    laid end to end, holding the same cards (identical melds may coexist, M3.5). Longer
    runs matter only as a kept table meld extended in place (the tie-break: fewest table
    cards moved); leaving the others out about halves the model."""
    grown = [frozenset(k) for k in kept]
    out: list[Candidate] = []
    for suit in range(SUITS):
        have = [available.get(suit * RANKS + r, 0) > 0 for r in range(RANKS)]
        for start in range(RANKS):
            if not have[start]:
                continue
            for length in range(1, MAX_TARGET_RUN + 1):
                if not have[(start + length - 1) % RANKS]:
                    break
                if length < MIN_MELD:
                    continue
                faces = run_faces(suit, start + 1, length)
                if length <= MAX_FREE_RUN or any(k <= set(faces) for k in grown):
                    out.append(Candidate(faces, True))
    for rank in range(RANKS):
        suits = [s for s in range(SUITS) if available.get(s * RANKS + rank, 0) > 0]
        for size in range(MIN_MELD, min(MAX_SET, len(suits)) + 1):
            for combo in combinations(suits, size):
                out.append(Candidate(tuple(sorted(s * RANKS + rank for s in combo)), False))
    return out


def is_candidate_shape(faces: tuple[Face, ...]) -> bool:
    """True when the (sorted) faces are a meld the solver could produce (a kept table meld
    of at most 10 cards with distinct faces: the only melds that can be extended in place)."""
    return len(faces) <= MAX_TARGET_RUN and len(set(faces)) == len(faces)


class Shape:
    """What the solver takes as a meld: the candidates, which table melds it may keep (and as
    which faces), how many copies of a candidate may be laid. Machiavelox's (M3) here; the
    classic planner's (`classic_candidates.ClassicShape`: aces, jokers, runs to 13) subclasses
    it, so one integer program serves both games."""

    def candidates(self, available: Mapping[Face, int],
                   kept: Iterable[tuple[Face, ...]] = ()) -> list[Candidate]:
        return candidates(available, kept)

    def meld_faces(self, cards: tuple[Card, ...], meld: object) -> tuple[Face, ...]:
        """The faces a table meld stands for (`meld`: the position's meld, for subclasses)."""
        return faces_of(cards)

    def is_shape(self, faces: tuple[Face, ...]) -> bool:
        return is_candidate_shape(faces)

    def upper(self, cand: Candidate, available: Mapping[Face, int]) -> int:
        """The most copies of `cand` the table may hold afterwards."""
        return min(available[f] for f in cand.faces)


MACHIAVELOX = Shape()
