"""Comparing written cards with engine cards, and showing cards and melds in messages.

A written list matches a set of physical cards as a multiset: `7H#2` must be exactly that
copy, a bare `7H` matches either copy. Cards are shown by face (`7H`), with the copy only for
the faces the expectation itself named exactly (`7H#2`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from machiavelox import rules
from machiavelox.rules import display_order

from .syntax import CardSpec


def same_cards(specs: Sequence[CardSpec], cards: Collection[rules.Card]) -> bool:
    """True when `cards` are exactly `specs`, as multisets."""
    if len(specs) != len(cards):
        return False
    rest = Counter(cards)
    for spec in specs:
        if spec.copy is not None:
            exact = spec.exact()
            if rest[exact] == 0:
                return False
            rest[exact] -= 1
    faces = Counter(c.face for c, n in rest.items() for _ in range(n))
    return faces == Counter(s.face for s in specs if s.copy is None)


def same_melds(expected: Sequence[Sequence[CardSpec]],
               melds: Sequence[Collection[rules.Card]]) -> bool:
    """True when the melds are exactly the expected ones, one to one (any order)."""
    if len(expected) != len(melds):
        return False
    used = [False] * len(melds)

    def assign(i: int) -> bool:
        if i == len(expected):
            return True
        for j, meld in enumerate(melds):
            if not used[j] and same_cards(expected[i], meld):
                used[j] = True
                if assign(i + 1):
                    return True
                used[j] = False
        return False

    return assign(0)


def exact_faces(specs: Iterable[CardSpec]) -> set[str]:
    """The faces written with a copy: shown with their copy in messages."""
    return {s.face for s in specs if s.copy is not None}


def show_card(card: rules.Card, exact: Collection[str] = ()) -> str:
    return str(card) if card.face in exact else card.face


def show_cards(cards: Iterable[rules.Card], exact: Collection[str] = ()) -> str:
    """A hand or pozzetto: sorted by suit then rank; `-` when empty."""
    ordered = sorted(cards, key=lambda c: (c.suit, c.rank, c.copy))
    return " ".join(show_card(c, exact) for c in ordered) or "-"


def show_specs(specs: Iterable[CardSpec]) -> str:
    return " ".join(str(s) for s in specs) or "-"


def show_meld(cards: Collection[rules.Card], exact: Collection[str] = ()) -> str:
    """`[4C 5C 6C]`: a run from its low end (Q K A 2), otherwise by rank then suit."""
    return "[" + " ".join(show_card(c, exact) for c in display_order(cards)) + "]"


def show_melds(melds: Iterable[Collection[rules.Card]], exact: Collection[str] = ()) -> str:
    return " ".join(show_meld(m, exact) for m in melds) or "-"
