"""Candidate melds for the solver: every regular meld (M3) the available cards could form.

Cards are reduced to their *face* (rank and suit, 0..51: `suit * 13 + rank - 1`): for the
regularity of a meld the two physical copies of a face (M1.1) are interchangeable, so the
solver counts faces and the planner (`plan.py`) picks the physical cards afterwards.

Candidates are runs of 3 to 10 cards of one suit, consecutive around the circle (M3.1, M3.2:
Q-K-A-2 is a run) and sets of 3 or 4 cards of one rank in distinct suits (M3.4). Runs longer
than 10 are not candidates: the engine splits them at once into two regular runs (M3.3), so a
run of 11+ is the same table as two shorter candidates, and targets of at most 10 cards never
split while they are built. Every candidate has distinct faces, so it uses at most one copy of
each face; the solver may lay a candidate twice (identical melds may coexist, M3.5).
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


def candidates(available: Mapping[Face, int]) -> list[Candidate]:
    """Every candidate meld whose faces all have at least one available card."""
    out: list[Candidate] = []
    for suit in range(SUITS):
        have = [available.get(suit * RANKS + r, 0) > 0 for r in range(RANKS)]
        for start in range(RANKS):
            if not have[start]:
                continue
            for length in range(1, MAX_TARGET_RUN + 1):
                if not have[(start + length - 1) % RANKS]:
                    break
                if length >= MIN_MELD:
                    out.append(Candidate(run_faces(suit, start + 1, length), True))
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
