"""Comparing written cards with engine cards, and showing cards and melds in messages.

A written list matches a set of physical cards as a multiset: `7H#2` (classic: `JK#1` too)
must be exactly that card, a bare `7H` matches any copy (`JK` any joker). Cards are shown by
face (`7H`), with the copy only for the faces the expectation itself named exactly (`7H#2`).

Both rulesets use these: the written cards are `CardSpec`s or classic `Spec`s (`Written`),
the physical ones `rules.Card`s or classic cards (`Physical`). Only the order a hand or a meld
is shown in is each engine's (`show_cards`, `show_meld` here; classic's in `classic.checks`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Sequence
from typing import Protocol, TypeVar

from machiavelox import rules
from machiavelox.rules import display_order


class Physical(Hashable, Protocol):
    """A physical card: its face is what a player sees (`7H`, `JK`), its str names the copy."""

    @property
    def face(self) -> str: ...


K = TypeVar("K", bound=Physical)
K_co = TypeVar("K_co", bound=Physical, covariant=True)


class Written(Protocol[K_co]):
    """A card as written: its face `text`, and the `copy` when written with `#n`."""

    @property
    def copy(self) -> int | None: ...

    @property
    def text(self) -> str: ...

    def exact(self) -> K_co: ...


def same_cards(specs: Sequence[Written[K]], cards: Collection[K]) -> bool:
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
    return faces == Counter(s.text for s in specs if s.copy is None)


def same_melds(expected: Sequence[Sequence[Written[K]]], melds: Sequence[Collection[K]]) -> bool:
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


def exact_faces(specs: Iterable[Written[Physical]]) -> set[str]:
    """The faces written with a copy: shown with their copy in messages."""
    return {s.text for s in specs if s.copy is not None}


def show_card(card: Physical, exact: Collection[str] = ()) -> str:
    return str(card) if card.face in exact else card.face


def show_list(ordered: Iterable[Physical], exact: Collection[str] = ()) -> str:
    """Cards in the order given, space separated; `-` when there are none."""
    return " ".join(show_card(c, exact) for c in ordered) or "-"


def show_in_brackets(ordered: Iterable[Physical], exact: Collection[str] = ()) -> str:
    """A meld whose cards are in the order given: `[4C 5C 6C]`."""
    return "[" + " ".join(show_card(c, exact) for c in ordered) + "]"


def show_specs(specs: Iterable[Written[Physical]]) -> str:
    return " ".join(str(s) for s in specs) or "-"


def show_cards(cards: Iterable[rules.Card], exact: Collection[str] = ()) -> str:
    """A Machiavelox hand or pozzetto: sorted by suit then rank; `-` when empty."""
    ordered = sorted(cards, key=lambda c: (c.suit, c.rank, c.copy))
    return show_list(ordered, exact)


def show_meld(cards: Collection[rules.Card], exact: Collection[str] = ()) -> str:
    """`[4C 5C 6C]`: a run from its low end (Q K A 2), otherwise by rank then suit."""
    return show_in_brackets(display_order(cards), exact)


def show_melds(melds: Iterable[Collection[rules.Card]], exact: Collection[str] = ()) -> str:
    return " ".join(show_meld(m, exact) for m in melds) or "-"
