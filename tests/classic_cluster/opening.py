"""Finding an opening in a classic hand (C8), for the cluster tests: melds of the hand's own
cards, disjoint, valid, worth at least the threshold."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from machiavelox import classic
from machiavelox.classic import Aces, ClassicCard


def melds_in(hand: Sequence[ClassicCard], aces: Aces = Aces.LOW
             ) -> list[tuple[ClassicCard, ...]]:
    """Every valid meld of three or four of `hand`'s cards (C3), highest value first."""
    found = [combo for size in (3, 4) for combo in combinations(hand, size)
             if classic.is_valid(combo, aces)]
    return sorted(found, key=lambda m: -classic.opening_value(m, aces))


def opening(hand: Sequence[ClassicCard], points: int, aces: Aces = Aces.LOW
            ) -> list[tuple[ClassicCard, ...]] | None:
    """One or two disjoint melds of `hand` worth `points` or more (C8), or None."""
    melds = melds_in(hand, aces)
    for i, first in enumerate(melds):
        worth = classic.opening_value(first, aces)
        if worth >= points:
            return [first]
        for second in melds[i + 1:]:
            if not set(first) & set(second) and \
                    worth + classic.opening_value(second, aces) >= points:
                return [first, second]
    return None
