"""A model of how the table's melds change under one player's gestures, for planning.

It follows the engine's documented board semantics (docs/rules-decisions.md, "Melds"): taking
a card from the interior of a regular run leaves the two sides as two melds; a card leaving an
irregular meld just leaves it, and if what stays is a regular run over 10 it splits (M3.3); a
card added that makes a regular run over 10 splits it in two, the halves as equal as possible.
Melds are named by model ids (not the table's: the planner names destinations by a card they
hold, resolved against the live view when the step is played).
"""

from __future__ import annotations

from collections.abc import Iterable

from machiavelox.rules import Card, split_long_run, split_on_removal


class BoardModel:
    def __init__(self, melds: Iterable[Iterable[Card]] = ()) -> None:
        self.melds: dict[int, list[Card]] = {}
        self.where: dict[Card, int] = {}
        self._next = 1
        for cards in melds:
            self.new(cards)

    def copy(self) -> BoardModel:
        other = BoardModel()
        other.melds = {k: list(v) for k, v in self.melds.items()}
        other.where = dict(self.where)
        other._next = self._next
        return other

    def new(self, cards: Iterable[Card]) -> int:
        mid = self._next
        self._next += 1
        self.melds[mid] = []
        for c in cards:
            self.melds[mid].append(c)
            self.where[c] = mid
        self._split_if_long(mid)
        return mid

    def remove(self, card: Card) -> None:
        mid = self.where.pop(card)
        cards = self.melds[mid]
        halves = split_on_removal(cards, card)  # interior removal (rules decision)
        if halves is None:
            cards.remove(card)
            if not cards:
                del self.melds[mid]
            else:
                self._split_if_long(mid)
            return
        low, high = halves
        self.melds[mid] = list(low)
        self.new(high)

    def add(self, card: Card, mid: int | None) -> int:
        """Put `card` into meld `mid` (None: a new meld); returns the meld it went to."""
        if mid is None:
            return self.new((card,))
        self.melds[mid].append(card)
        self.where[card] = mid
        self._split_if_long(mid)
        return mid

    def move(self, card: Card, anchor: Card | None) -> None:
        """The table card `card` to the meld holding `anchor` (None: a new meld)."""
        self.remove(card)
        self.add(card, None if anchor is None else self.where[anchor])

    def _split_if_long(self, mid: int) -> None:
        halves = split_long_run(self.melds[mid])  # M3.3
        if halves is None:
            return
        low, high = halves
        for c in low:
            self.where[c] = mid
        self.melds[mid] = list(low)
        self.new(high)

    def shape(self, universe: frozenset[Card]) -> frozenset[frozenset[Card]]:
        """The melds holding cards of `universe`, as sets of cards."""
        return frozenset(frozenset(cs) for cs in self.melds.values()
                         if any(c in universe for c in cs))
