"""Cards as a person reads them: `7♥`, `10♣`, sorted by suit or by rank (presentation only)."""

from __future__ import annotations

from collections.abc import Iterable

from machiavelox import rules
from machiavelox.rules import RANK_NAMES

RED_SUITS = frozenset({rules.Suit.H, rules.Suit.D})


def face(index: int) -> str:
    card = rules.card_at(index)
    return f"{RANK_NAMES[card.rank - 1]}{card.suit.symbol}"


def faces(indexes: Iterable[int]) -> str:
    return " ".join(face(i) for i in indexes)


def is_red(index: int) -> bool:
    return rules.card_at(index).suit in RED_SUITS


def sort_key(index: int, by_rank: bool = False) -> tuple[int, int, int]:
    card = rules.card_at(index)
    if by_rank:
        return (card.rank, card.suit, card.copy)
    return (card.suit, card.rank, card.copy)


def sorted_cards(indexes: Iterable[int], by_rank: bool = False) -> list[int]:
    return sorted(indexes, key=lambda i: sort_key(i, by_rank))
