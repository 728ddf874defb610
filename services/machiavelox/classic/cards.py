"""Classic Machiavelli's cards (C1, C2): two or three French decks and 0, 2 or 4 jokers.

One card space serves both games. The natural cards are Machiavelox's own `rules.Card` values
(rank, suit, copy) with the same wire index, ``(copy - 1) * 52 + suit * 13 + rank - 1``:
copies 1 and 2 are the very instances of `rules.ALL_CARDS` (indexes 0..103, the same card in
both games), and the third deck is copy 3 (indexes 104..155), made by the same class. Jokers
have no rank or suit, so they are their own small value, `Joker(number)`, indexes 156..159.
Machiavelox uses the prefix 0..103 of this space; a classic table uses the prefix its variants
deal (`deck(decks, jokers)`), so a card index means the same card everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from machiavelox.rules import ALL_CARDS, RANK_NAMES, Card, Suit

MAX_DECKS = 3
MAX_JOKERS = 4
JOKER_BASE = 52 * MAX_DECKS  # 156: the first joker's index
JOKER_PENALTY = 25  # C9: the only value the seeds give a joker


@dataclass(frozen=True, slots=True, order=True)
class Joker:
    """One of the (at most four) jokers; `number` 1..4 is its identity (``JK#2``)."""

    number: int
    index: int = field(init=False, repr=False, compare=False)  # as `Card`'s: made once
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", JOKER_BASE + self.number - 1)
        object.__setattr__(self, "_hash", hash((self.number,)))

    def __hash__(self) -> int:
        return self._hash

    def __copy__(self) -> Joker:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Joker:
        return self

    @property
    def face(self) -> str:
        """What a player sees: every joker looks the same."""
        return "JK"

    def __str__(self) -> str:
        return f"JK#{self.number}"

    def __repr__(self) -> str:
        return f"Joker({self.number})"


ClassicCard = Card | Joker
"""A physical card of a classic table: a natural card (any of three decks) or a joker."""

THIRD_DECK: tuple[Card, ...] = tuple(
    Card(rank, Suit(suit), 3) for suit in range(4) for rank in range(1, 14))
NATURALS: tuple[Card, ...] = (*ALL_CARDS, *THIRD_DECK)  # indexes 0..155
JOKERS: tuple[Joker, ...] = tuple(Joker(n) for n in range(1, MAX_JOKERS + 1))
ALL_CLASSIC: tuple[ClassicCard, ...] = (*NATURALS, *JOKERS)  # indexes 0..159
assert all(c.index == i for i, c in enumerate(ALL_CLASSIC))

_RANK_BY_TEXT = {name: i + 1 for i, name in enumerate(RANK_NAMES)}
_SUIT_BY_TEXT = {"S": Suit.S, "H": Suit.H, "D": Suit.D, "C": Suit.C,
                 "♠": Suit.S, "♥": Suit.H, "♦": Suit.D, "♣": Suit.C}


def deck(decks: int, jokers: int) -> tuple[ClassicCard, ...]:
    """Every card a table with these variants plays with (C1, C2), in index order."""
    if not 1 <= decks <= MAX_DECKS or not 0 <= jokers <= MAX_JOKERS:
        raise ValueError(f"no deck of {decks} decks and {jokers} jokers")
    return (*NATURALS[:52 * decks], *JOKERS[:jokers])


def card_at(index: int) -> ClassicCard:
    """The card with this wire identity (0..159)."""
    if not 0 <= index < len(ALL_CLASSIC):
        raise ValueError(f"card index out of range: {index}")
    return ALL_CLASSIC[index]


def natural(rank: int, suit: Suit, copy: int) -> Card:
    """The natural card of this face and copy (1..3)."""
    if not 1 <= copy <= MAX_DECKS or not 1 <= rank <= 13:
        raise ValueError(f"no card of rank {rank}, copy {copy}")
    return NATURALS[(copy - 1) * 52 + suit * 13 + rank - 1]


def copies(rank: int, suit: Suit, decks: int) -> tuple[Card, ...]:
    """The physical copies of a face at a table of `decks` decks, lowest first."""
    return tuple(natural(rank, suit, k) for k in range(1, decks + 1))


def parse_face(text: str) -> tuple[tuple[int, Suit] | None, int | None]:
    """``7H``, ``10♣``, ``QS#3``, ``JK``, ``JK#2``: (face or None for a joker, copy or None).
    Raises ValueError with a message for people."""
    body, sep, copy_text = text.partition("#")
    copy: int | None = None
    if sep:
        if not copy_text.isdigit():
            raise ValueError(f"bad card copy in {text!r}")
        copy = int(copy_text)
    if body == "JK":
        if copy is not None and not 1 <= copy <= MAX_JOKERS:
            raise ValueError(f"bad joker {text!r}: jokers are JK#1 .. JK#4")
        return None, copy
    if copy is not None and not 1 <= copy <= MAX_DECKS:
        raise ValueError(f"bad card copy in {text!r}: at most three decks, #1 .. #3")
    rank = _RANK_BY_TEXT.get(body[:-1].upper()) if len(body) >= 2 else None
    suit = _SUIT_BY_TEXT.get(body[-1:].upper())
    if rank is None or suit is None:
        raise ValueError(f"bad card {text!r}: rank A 2..10 J Q K then suit S H D C, or JK")
    return (rank, suit), copy


def parse(text: str) -> ClassicCard:
    """An exact card: ``7H#3``, ``JK#2``; a bare ``7H`` or ``JK`` means copy 1."""
    face, copy = parse_face(text)
    if face is None:
        return JOKERS[(copy or 1) - 1]
    return natural(face[0], face[1], copy or 1)


def sort_key(c: ClassicCard) -> tuple[int, int, int, int]:
    """A total order for showing cards: naturals by suit, rank, copy; jokers last."""
    if isinstance(c, Joker):
        return (1, 0, 0, c.number)
    return (0, c.suit, c.rank, c.copy)


def sorted_cards(cards: Iterable[ClassicCard]) -> tuple[ClassicCard, ...]:
    return tuple(sorted(cards, key=sort_key))


def show(cards: Iterable[ClassicCard]) -> str:
    """Faces, space separated, for messages (``7H 8H JK``); ``-`` for none."""
    return " ".join(c.face for c in cards) or "-"
