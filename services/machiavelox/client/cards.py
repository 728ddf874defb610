"""Cards as a person reads them: `7♥`, `10♣`, `JK`, sorted by suit or by rank (presentation
only). One card space serves both games (classic/cards.py): Machiavelox plays 0..103, a classic
table also the third deck (104..155) and the jokers (156..159), which sort last."""

from __future__ import annotations

from collections.abc import Iterable

from machiavelox import classic, rules
from machiavelox.rules import RANK_NAMES

RED_SUITS = frozenset({rules.Suit.H, rules.Suit.D})
JOKER_FACE = "JK"


def is_joker(index: int) -> bool:
    return isinstance(classic.card_at(index), classic.Joker)


def face(index: int) -> str:
    card = classic.card_at(index)
    if isinstance(card, classic.Joker):
        return JOKER_FACE
    return f"{RANK_NAMES[card.rank - 1]}{card.suit.symbol}"


def faces(indexes: Iterable[int]) -> str:
    return " ".join(face(i) for i in indexes)


def is_red(index: int) -> bool:
    card = classic.card_at(index)
    return not isinstance(card, classic.Joker) and card.suit in RED_SUITS


def sort_key(index: int, by_rank: bool = False) -> tuple[int, int, int, int]:
    card = classic.card_at(index)
    if isinstance(card, classic.Joker):
        return (1, 0, 0, card.number)  # jokers last
    if by_rank:
        return (0, card.rank, card.suit, card.copy)
    return (0, card.suit, card.rank, card.copy)


def sorted_cards(indexes: Iterable[int], by_rank: bool = False) -> list[int]:
    return sorted(indexes, key=lambda i: sort_key(i, by_rank))
