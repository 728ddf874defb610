"""The typed statements of a classic scenario (SCENARIO-FORMAT.md, "Classic Machiavelli").

Cards are `Spec`s, not engine cards: a bare card (`7H`, `JK`) means "a copy of it in the zone
the statement reads from", resolved when the statement runs. Statements shared with
Machiavelox scenarios (`Title`, `At`, `Act`, the meld references, `ExpectRejected` and the
hand, table, meld, phase and event expectations) are `..syntax`'s generic ones, with classic
seats and `Spec`s; only classic's own expectations and `Start` are declared here.
"""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox import classic
from machiavelox.rules import Suit

from ..syntax import AnyRef, Block, Expect


@dataclass(frozen=True, slots=True)
class Spec:
    """A card as written: a face (None for a joker) and, with `#n`, an exact copy."""

    face: tuple[int, Suit] | None
    copy: int | None = None

    @property
    def text(self) -> str:
        if self.face is None:
            return "JK"
        return f"{classic.natural(self.face[0], self.face[1], 1).face}"

    def copies(self, decks: int, jokers: int) -> tuple[classic.ClassicCard, ...]:
        """Every physical card of this face at the table, lowest first."""
        if self.face is None:
            return classic.JOKERS[:jokers]
        return classic.copies(self.face[0], self.face[1], decks)

    def exact(self) -> classic.ClassicCard:
        """The written copy (copy 1 when none is written)."""
        if self.face is None:
            return classic.JOKERS[(self.copy or 1) - 1]
        return classic.natural(self.face[0], self.face[1], self.copy or 1)

    def matches(self, card: classic.ClassicCard) -> bool:
        if card.face != self.text:
            return False
        return self.copy is None or card == self.exact()

    def __str__(self) -> str:
        return self.text if self.copy is None else f"{self.text}#{self.copy}"


Ref = AnyRef[Spec]  # for annotations; the shared statements are built and matched unsubscripted


@dataclass(frozen=True, slots=True, kw_only=True)
class Start(Block):
    """`start` with the deal block before it. The first block also carries the variants.
    A seeded block is dealt when it runs (to the seats still in the session)."""

    variants: classic.Variants
    seed: int | None
    hands: dict[classic.Seat, tuple[classic.ClassicCard, ...]]
    stock: tuple[classic.ClassicCard, ...]
    table: tuple[tuple[classic.ClassicCard, ...], ...]
    first: classic.Seat | None
    opened: frozenset[classic.Seat]
    totals: tuple[tuple[classic.Seat, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectNumber(Expect):
    """`expect melds N`, `expect stock N`, `expect count P N`, `expect score P N`, `expect
    total P N`, `expect time-left S` (ms)."""

    what: str
    player: classic.Seat | None
    number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectSeat(Expect):
    """`expect turn P`, `expect opened P`, `expect not opened P`, `expect status P WORD`."""

    what: str
    player: classic.Seat
    word: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectWinners(Expect):
    """`expect winner P [P...]`, `expect winner none`, `expect session-winner P [P...]`."""

    session: bool
    players: tuple[classic.Seat, ...]  # () = none
