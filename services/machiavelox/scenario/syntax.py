"""The typed statements of a scenario, as the parser produces them.

Every statement carries its 1-based `line` and the source `text` (comment stripped), for
messages and `--verbose`. Cards are `CardSpec`s, not engine cards: a bare card (`7H`) means "a
copy of it in the zone the statement reads from", resolved only when the statement runs.

The statements both rulesets share are generic in the written card `C` (`CardSpec` here,
`classic.syntax.Spec` for classic scenarios) and the seat `S` (`rules.Seat`, `classic.Seat`):
`Act`, the meld references, and the hand, table, meld, phase and event expectations. Only what
is truly Machiavelox's (pozzetto, tallone, calata, holding, draw, ...) is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from machiavelox import rules

C = TypeVar("C")  # a written card: CardSpec, or classic's Spec
S = TypeVar("S")  # a seat: rules.Seat, or classic.Seat


@dataclass(frozen=True, slots=True)
class CardSpec:
    """A card as written: a face and, when given with `#n`, an exact copy."""

    rank: int
    suit: rules.Suit
    copy: int | None = None

    @property
    def face(self) -> str:
        return rules.card_at(self.suit * 13 + self.rank - 1).face

    @property
    def text(self) -> str:
        """The face as written, without the copy (what `cardsets` compares and shows)."""
        return self.face

    @property
    def copies(self) -> tuple[rules.Card, rules.Card]:
        return rules.copies_of(self.rank, self.suit)

    def exact(self, copy: int | None = None) -> rules.Card:
        """The physical card: the written copy, else `copy`, else copy 1."""
        return self.copies[(self.copy or copy or 1) - 1]

    def matches(self, card: rules.Card) -> bool:
        """Same face, and the same copy when the spec names one."""
        same_face = card.rank == self.rank and card.suit == self.suit
        return same_face and (self.copy is None or card.copy == self.copy)

    def __str__(self) -> str:
        return self.face if self.copy is None else f"{self.face}#{self.copy}"


# ---------------------------------------------------------------------- meld references
@dataclass(frozen=True, slots=True)
class NameRef:
    """A meld named in setup (`table g1: ...`) or by `as NAME`."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class CardRef(Generic[C]):
    """`@7H`: the meld that holds that card."""

    card: C

    def __str__(self) -> str:
        return f"@{self.card}"


@dataclass(frozen=True, slots=True)
class ListRef(Generic[C]):
    """`[4C 5C 6C]`: the meld whose cards are exactly these."""

    cards: tuple[C, ...]

    def __str__(self) -> str:
        return "[" + " ".join(str(c) for c in self.cards) + "]"


AnyRef = NameRef | CardRef[C] | ListRef[C]  # a meld reference, whatever the cards
Ref = AnyRef[CardSpec]


# ---------------------------------------------------------------------- statements
@dataclass(frozen=True, slots=True, kw_only=True)
class Stmt:
    line: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Title(Stmt):
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Match(Stmt):
    long: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Block(Stmt):
    """`start` with the setup block before it (each ruleset's `Start` adds its deal).

    `names` maps a setup name to the index of its meld in the deal's table.
    """

    names: dict[str, int]
    setup: tuple[Stmt, ...]  # the setup statements of this block, for --verbose


@dataclass(frozen=True, slots=True, kw_only=True)
class Start(Block):
    """`start`, carrying the deal its setup block built and the setup meld names."""

    deal: rules.Deal


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupStmt(Stmt):
    """One setup statement (`seed`, `removed`, `tallone`, `hand`, `table`, `drawn`,
    `direct-meld`); `parser` folds a block of them into the following `Start`."""

    word: str
    player: rules.Seat | None = None
    cards: tuple[tuple[CardSpec, int], ...] = ()  # with the column of each card
    name: str | None = None
    seed: int | None = None
    col: int = 1  # of the statement's first word
    name_col: int = 1  # of the name, for `table NAME:`


@dataclass(frozen=True, slots=True, kw_only=True)
class At(Stmt):
    ms: int
    relative: bool  # `wait` rather than `at`


@dataclass(frozen=True, slots=True, kw_only=True)
class Act(Stmt, Generic[S, C]):
    """`PLAYER VERB ARGS`. `src` is the `from`/`to` REF of the verb (attach/place/put, classic
    attach/swap: the destination; take, move: the source); `dst` is the destination of `move`;
    `new` means a new meld (`put new`, `move ... to new`); `name` is the `as NAME` binding.
    Classic `swap` has the hand card, then the joker, in `cards`."""

    player: S
    verb: str
    cards: tuple[C, ...] = ()
    src: AnyRef[C] | None = None
    dst: AnyRef[C] | None = None
    new: bool = False
    name: str | None = None


# ---------------------------------------------------------------------- expectations
@dataclass(frozen=True, slots=True, kw_only=True)
class Expect(Stmt):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectRejected(Expect):
    word: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectCards(Expect, Generic[S, C]):
    """`expect hand pX: ...` or `expect pozzetto pX: ...`."""

    zone: str  # hand | pozzetto (classic: hand)
    player: S
    cards: tuple[C, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectTallone(Expect):
    player: rules.Seat
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectTable(Expect, Generic[C]):
    melds: tuple[tuple[C, ...], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectMeld(Expect, Generic[C]):
    cards: tuple[C, ...]
    status: str | None  # consolidated | confirmed | trial (classic: always None)
    absent: bool  # `expect no meld [...]`


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectMeldCount(Expect):
    count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectCalata(Expect):
    player: rules.Seat
    open: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectHolding(Expect):
    player: rules.Seat
    card: CardSpec | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectPhase(Expect):
    phase: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectStatus(Expect):
    player: rules.Seat
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectWinner(Expect):
    player: rules.Seat | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectDraw(Expect):
    players: tuple[rules.Seat, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectPoints(Expect):
    """`expect score pX N` (this smazzata) or `expect total pX N` (a long match)."""

    total: bool
    player: rules.Seat
    points: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectEvent(Expect):
    words: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed file: its statements in order (setup folded into each `Start`)."""

    title: str | None
    long: bool  # `match long` (always False for classic)
    statements: tuple[Stmt, ...]
