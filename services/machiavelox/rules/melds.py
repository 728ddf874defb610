"""Meld validity and shape (M3): runs, sets, the circular Ace, splits.

A meld is an unordered collection of physical cards; its order, when it is a run, is derived.
Pure functions only.

Runs round the circle (M3.3: "Una scala può crescere oltre le 13 carte, proprio perché l'Asso
la rende continua"): a run of n > 13 cards goes once round the circle and on, so it holds both
copies of n - 13 consecutive ranks and one of every other rank (at most 26 cards, both decks'
whole suit). It never stays on the table as it is: over 10 cards it is split (`split_long_run`).
"""

from __future__ import annotations

import enum
import functools
from collections import Counter
from collections.abc import Collection, Sequence

from .cards import Card

MAX_RUN_BEFORE_SPLIT = 10  # M3.3: a run longer than this is split in two
FULL_CIRCLE = 13  # ranks on the circle A..K (M3.2)
MAX_RUN = 2 * FULL_CIRCLE  # both copies of every rank of one suit (M1.1: two decks)


class MeldKind(enum.Enum):
    RUN = "run"  # M3.1
    SET = "set"  # M3.4


def classify(cards: Collection[Card]) -> MeldKind | None:
    """The kind of a regular meld, or None when the cards are not a regular meld (M3)."""
    n = len(cards)
    if n < 3:  # M3.5
        return None
    it = iter(cards)
    first = next(it)
    same_rank = same_suit = True
    for c in it:
        if c.rank != first.rank:
            same_rank = False
        if c.suit != first.suit:
            same_suit = False
    if same_rank:
        # M3.4: 3 or 4 cards of one rank, suits all different (7♥ 7♥ 7♠ is not a set).
        if n <= 4 and len({c.suit for c in cards}) == n:
            return MeldKind.SET
        return None
    if same_suit and _is_run(cards, n):
        return MeldKind.RUN  # M3.1, M3.2, M3.3
    return None


def is_regular(cards: Collection[Card]) -> bool:
    return classify(cards) is not None


def _is_run(cards: Collection[Card], n: int) -> bool:
    """One suit's cards consecutive around the circle (M3.1-M3.3). Up to 13 cards: distinct
    ranks in one block. More (the circle once round and on): every rank, and the ranks held
    twice are one block of n - 13 (Q K A 2 ... K A: the Ace twice)."""
    if n <= FULL_CIRCLE:
        return _is_circular_block({c.rank for c in cards}, n)
    if n > MAX_RUN:
        return False
    counts = Counter(c.rank for c in cards)
    if len(counts) != FULL_CIRCLE:
        return False
    twice = {r for r, k in counts.items() if k == 2}
    return _is_circular_block(twice, n - FULL_CIRCLE)


def _is_circular_block(ranks: set[int], n: int) -> bool:
    """True when `ranks` (n distinct values wanted) form one block on the circle A..K (M3.2)."""
    if len(ranks) != n or n > 13:
        return False
    if n == 13:
        return True
    # Exactly one rank in the block has no successor: the block's top end.
    ends = sum(1 for r in ranks if (r % 13) + 1 not in ranks)
    return ends == 1


def run_order(cards: Collection[Card]) -> list[Card]:
    """The cards of a regular run from its low end to its high end.

    The low end is the card that follows the gap in the circle (Q K A 2 3 starts at Q). A full
    circle of 13 starts at the Ace. A run of more than 13 starts at the first of the ranks it
    holds twice, with its lower copy, and ends with their other copies (4 5 ... K A 2 3 4 5
    for fourteen and fifteen cards); all 26 start at the Ace.
    """
    n = len(cards)
    if n > FULL_CIRCLE:
        return _long_run_order(cards, n)
    by_rank = {c.rank: c for c in cards}
    start = 1 if len(by_rank) == 13 else next(r for r in by_rank if (r - 2) % 13 + 1 not in by_rank)
    out: list[Card] = []
    r = start
    while r in by_rank:
        out.append(by_rank[r])
        if len(out) == len(by_rank):
            break
        r = (r % 13) + 1
    return out


def _long_run_order(cards: Collection[Card], n: int) -> list[Card]:
    """`run_order` of a regular run of 14..26 cards (see there)."""
    by_rank: dict[int, list[Card]] = {}
    for c in sorted(cards, key=lambda c: c.copy):
        by_rank.setdefault(c.rank, []).append(c)
    twice = {r for r, cs in by_rank.items() if len(cs) == 2}
    start = 1 if n == MAX_RUN else next(r for r in twice if (r - 2) % 13 + 1 not in twice)
    taken = dict.fromkeys(by_rank, 0)
    out: list[Card] = []
    r = start
    for _ in range(n):
        out.append(by_rank[r][taken[r]])
        taken[r] += 1
        r = (r % 13) + 1
    return out


def display_order(cards: Collection[Card]) -> list[Card]:
    """A stable order for showing a meld, regular or not.

    One suit with distinct ranks (a run, or a run with gaps): around the circle, starting after
    the widest gap, so Q K A 2 starts at Q and 4 5 6 8 stays in that order. Anything else: by
    rank, then suit, then copy.
    """
    if len(cards) > FULL_CIRCLE and classify(cards) is MeldKind.RUN:
        return run_order(cards)  # round the circle: only as dealt in an explicit position
    by_rank = sorted(cards, key=lambda c: (c.rank, c.suit, c.copy))
    ranks = [c.rank for c in by_rank]
    if len(ranks) < 2 or len({c.suit for c in by_rank}) != 1 or len(set(ranks)) != len(ranks):
        return by_rank
    gaps = [((ranks[(i + 1) % len(ranks)] - r) % 13, i) for i, r in enumerate(ranks)]
    start = (max(gaps)[1] + 1) % len(ranks)
    return by_rank[start:] + by_rank[:start]


def split_long_run(cards: Sequence[Card]) -> tuple[list[Card], list[Card]] | None:
    """M3.3: a regular run of more than 10 cards splits into two runs as equal as possible.

    Decision (docs/rules-decisions.md): the lower half (from the run's low end) gets
    ``n // 2`` cards and the upper half the rest, so 11 cards split 5 + 6 and a run round the
    circle of 14 splits 7 + 7 (each half has each rank once). Returns None when no split is
    due. A half still longer than 10 (a run of 21 or more cards) is split again by the board.
    """
    if len(cards) <= MAX_RUN_BEFORE_SPLIT or classify(cards) is not MeldKind.RUN:
        return None
    ordered = run_order(cards)
    half = len(ordered) // 2
    return ordered[:half], ordered[half:]


def split_on_removal(cards: Sequence[Card], removed: Card) -> tuple[list[Card], list[Card]] | None:
    """Decision (interior removal): taking a card out of the interior of a regular run leaves
    two melds, the cards on each side of the gap. Returns (low side, high side), or None when
    the card is at an end, or the meld is not a regular run (then the card just leaves it)."""
    cut = _removal_cut(tuple(cards), removed)
    return None if cut is None else (list(cut[0]), list(cut[1]))


@functools.lru_cache(maxsize=1 << 14)
def _removal_cut(cards: tuple[Card, ...], removed: Card
                 ) -> tuple[tuple[Card, ...], tuple[Card, ...]] | None:
    """`split_on_removal`, remembered: a pure function of the meld and the card, and the
    judgement's replays (trial.py) take the same card out of the same meld many times."""
    if classify(cards) is not MeldKind.RUN:
        return None
    ordered = run_order(cards)
    i = ordered.index(removed)
    if i == 0 or i == len(ordered) - 1:
        return None
    return tuple(ordered[:i]), tuple(ordered[i + 1:])
