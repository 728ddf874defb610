"""Physical cards (M1.1): two French decks, 104 cards, each with a stable identity.

A card is a frozen value: rank 1..13 (A=1, J=11, Q=12, K=13), suit, and copy (1 or 2), so the
two 7♥ are different cards. All 104 instances are created once; `card()` and `parse_card()`
return those instances, so identity comparison and hashing stay cheap.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Suit(enum.IntEnum):
    """The four French suits; the letters are those of the scenario format."""

    S = 0  # spades ♠
    H = 1  # hearts ♥
    D = 2  # diamonds ♦
    C = 3  # clubs ♣

    @property
    def symbol(self) -> str:
        return "♠♥♦♣"[self.value]


RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
_SUIT_BY_TEXT = {"S": Suit.S, "H": Suit.H, "D": Suit.D, "C": Suit.C,
                 "♠": Suit.S, "♥": Suit.H, "♦": Suit.D, "♣": Suit.C}
_RANK_BY_TEXT = {name: i + 1 for i, name in enumerate(RANK_NAMES)}


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One physical card. `index` (0..103) is its stable identity on the wire and in logs.

    Cards are the engine's most used keys (boards, hands, every set of cards): the index and
    the hash are computed once, when the card is made (a value hash of rank, suit and copy, as
    the generated one was, but without re-hashing three fields on every lookup), and copying
    a card gives the card itself (it is immutable)."""

    rank: int
    suit: Suit
    copy: int
    index: int = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", (self.copy - 1) * 52 + self.suit * 13 + self.rank - 1)
        object.__setattr__(self, "_hash", hash((self.rank, int(self.suit), self.copy)))

    def __hash__(self) -> int:
        return self._hash

    def __copy__(self) -> Card:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Card:
        return self

    @property
    def face(self) -> str:
        """Rank and suit without the copy, e.g. ``7H``: what a player sees."""
        return f"{RANK_NAMES[self.rank - 1]}{self.suit.name}"

    def __str__(self) -> str:
        return f"{self.face}#{self.copy}"

    def __repr__(self) -> str:
        return f"card({str(self)!r})"


ALL_CARDS: tuple[Card, ...] = tuple(
    Card(rank, Suit(suit), copy)
    for copy in (1, 2)
    for suit in range(4)
    for rank in range(1, 14)
)
assert all(c.index == i for i, c in enumerate(ALL_CARDS))


def card_at(index: int) -> Card:
    """The card with this wire identity (0..103)."""
    if not 0 <= index < len(ALL_CARDS):
        raise ValueError(f"card index out of range: {index}")
    return ALL_CARDS[index]


def card(text: str) -> Card:
    """Parse an exact card, ``7H#2``; a bare ``7H`` means copy 1."""
    face, copy = parse_face(text)
    return ALL_CARDS[(copy or 1) * 52 - 52 + face[1] * 13 + face[0] - 1]


def parse_face(text: str) -> tuple[tuple[int, Suit], int | None]:
    """Parse ``7H``, ``10♣``, ``QS#2``: ((rank, suit), copy or None). Raises ValueError."""
    body, sep, copy_text = text.partition("#")
    copy: int | None = None
    if sep:
        if copy_text not in ("1", "2"):
            raise ValueError(f"bad card copy in {text!r}: use #1 or #2")
        copy = int(copy_text)
    if len(body) < 2:
        raise ValueError(f"bad card {text!r}")
    rank = _RANK_BY_TEXT.get(body[:-1].upper())
    suit = _SUIT_BY_TEXT.get(body[-1].upper())
    if rank is None or suit is None:
        raise ValueError(f"bad card {text!r}: rank A 2..10 J Q K then suit S H D C")
    return (rank, suit), copy


def copies_of(rank: int, suit: Suit) -> tuple[Card, Card]:
    """Both physical copies of a face."""
    base = suit * 13 + rank - 1
    return ALL_CARDS[base], ALL_CARDS[52 + base]
