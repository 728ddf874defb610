"""The statement grammar both rulesets share: `StatementParser`, with line and column in every
error (SCENARIO-FORMAT.md "Lexical", "Time", "Actions", "Expectations").

The shared part: the order of statements (nothing but setup before `start`, no play in the
middle of a new deal, `expect rejected` directly after an action, a setup block ends with
`start`), `title`, `at`/`wait`, `PLAYER VERB ...` with the verb shapes both games have (cards
up to `as NAME`, `CARD to REF`, `move CARD from REF to REF|new`), `as NAME` and meld
references, and the `table [NAME]:` / `hand P:` setup lines. Each ruleset's parser
(`parser._Parser`, `classic.parser._Parser`) adds its directives (`directive`: header, setup,
`start`), its verbs (`verb`) and its expectations (`expectation`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from .errors import ScenarioSyntaxError
from .lexer import CardCursor, Line, Word
from .syntax import Act, AnyRef, At, Block, CardRef, ExpectRejected, ListRef, NameRef, Stmt, Title

S = TypeVar("S")
C = TypeVar("C")
PLAYERISH = re.compile(r"[pP][0-9]+")


class NotMine:
    """What `directive` returns for a statement that is not a directive of the ruleset."""


NOT_MINE: Final = NotMine()


@dataclass(frozen=True, slots=True)
class Parts(Generic[C]):
    """What a verb's arguments give an `Act` (see `syntax.Act`)."""

    cards: tuple[C, ...] = ()
    src: AnyRef[C] | None = None
    dst: AnyRef[C] | None = None
    new: bool = False
    name: str | None = None


@dataclass(frozen=True, slots=True)
class CardLine(Generic[S, C]):
    """A setup line of cards: `hand P: ...`, `table [NAME]: ...`, `stock: ...`, `removed ...`."""

    player: S | None
    name: str | None
    name_col: int
    cards: tuple[tuple[C, int], ...]  # with the column of each card


class Positioned(Protocol):
    @property
    def line(self) -> int: ...

    @property
    def col(self) -> int: ...


class SetupBlock(Protocol):
    """A ruleset's deal builder: the setup statements read since the last `start`."""

    @property
    def empty(self) -> bool: ...

    @property
    def stmts(self) -> Sequence[Positioned]: ...


class StatementParser(ABC, Generic[S, C]):
    REF_KEYWORDS: tuple[str, ...] = ("to", "from", "new", "as")  # never a meld name

    def __init__(self) -> None:
        self.out: list[Stmt] = []
        self.names: set[str] = set()  # meld names usable in the current deal
        self.last: Stmt | None = None
        self.started = False  # a first `start` was read

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def cursor(self, line: Line) -> CardCursor[S, C]:
        """A cursor reading the ruleset's cards and players."""

    @abstractmethod
    def block(self) -> SetupBlock:
        """The setup block being read (the ruleset's deal builder)."""

    @abstractmethod
    def directive(self, cur: CardCursor[S, C], first: Word) -> Stmt | NotMine | None:
        """A header, setup or `start` statement (None when it is folded into a later one), or
        NOT_MINE. Checked before anything else, so it may also refuse any statement."""

    @abstractmethod
    def setup(self, cur: CardCursor[S, C], first: Word) -> None:
        """One setup statement, added to the setup block."""

    @abstractmethod
    def close_block(self, line: int, text: str) -> Block:
        """`start`: the setup block folded into its statement; a new block begins."""

    @abstractmethod
    def verb(self, cur: CardCursor[S, C], verb: Word) -> Parts[C]:
        """The arguments of `verb` (an error at the verb when it is not one)."""

    @abstractmethod
    def expectation(self, cur: CardCursor[S, C]) -> Stmt:
        """The rest of an `expect` line (the cursor stands after `expect`)."""

    def pending(self) -> tuple[int, int] | None:
        """(line, col) of the first statement of a setup block not yet closed by `start`."""
        block = self.block()
        if block.empty:
            return None
        first = block.stmts[0]
        return first.line, first.col

    def setup_or_start(self, cur: CardCursor[S, C], first: Word, setup_words: Collection[str]
                       ) -> Stmt | NotMine | None:
        """A setup statement (folded into the block: None), `start`, or NOT_MINE."""
        if first.text in setup_words:
            self.setup(cur, first)
            return None
        if first.text != "start":
            return NOT_MINE
        cur.end()
        start = self.close_block(cur.number, cur.line.text)
        self.started = True
        self.names = set(start.names)
        return start

    # ------------------------------------------------------------------ the file
    def parse_lines(self, lines: list[Line]) -> None:
        for line in lines:
            stmt = self.statement(self.cursor(line))
            if stmt is not None:
                self.out.append(stmt)
            self.last = stmt
        where = self.pending()
        if where is not None:
            raise ScenarioSyntaxError(*where, "setup without a following 'start'")

    def statement(self, cur: CardCursor[S, C]) -> Stmt | None:
        """One line. Setup statements go to the deal builder (None is returned)."""
        first = cur.next("statement")
        done = self.directive(cur, first)
        if not isinstance(done, NotMine):
            return done
        word = first.text
        line, text = cur.number, cur.line.text
        if word in ("at", "wait", "expect") or PLAYERISH.fullmatch(word):
            if not self.started:
                raise cur.error(f"'{word}' before 'start': set up the deal, then 'start'", first)
            if self.pending() is not None:
                raise cur.error(f"'{word}' in the middle of a new deal: finish it with 'start'",
                                first)
        if word in ("at", "wait"):
            ms = cur.seconds()
            cur.end()
            return At(line=line, text=text, ms=ms, relative=word == "wait")
        if word == "expect":
            stmt = self.expectation(cur)
            if isinstance(stmt, ExpectRejected) and not isinstance(self.last, Act):
                raise cur.error("'expect rejected' must directly follow an action", first)
            return stmt
        if PLAYERISH.fullmatch(word):
            return self.action(cur, first)
        raise cur.error(f"unknown statement {word!r}", first)

    @staticmethod
    def title(cur: CardCursor[S, C], first: Word) -> Title:
        """`title TEXT` (the rest of the line, as written)."""
        text = cur.line.text
        rest = text[len("title"):].strip()
        if not rest:
            raise cur.error("missing title text")
        return Title(line=cur.number, text=text, title=rest)

    # ------------------------------------------------------------------ setup
    def card_line(self, cur: CardCursor[S, C], word: str, seated: Collection[str],
                  colon_optional: bool) -> CardLine[S, C]:
        """`WORD P: cards` (WORD in `seated`), `table [NAME]: cards` (none is `-`), or
        `WORD: cards` (the colon may be left out when `colon_optional`)."""
        player: S | None = None
        name: str | None = None
        name_col = 1
        if word in seated:
            player = cur.player()
            cur.keyword(":")
        elif word == "table":
            if not cur.accept(":"):
                name_word = cur.name()
                name, name_col = name_word.text, name_word.col
                cur.keyword(":")
        elif colon_optional:
            cur.accept(":")
        else:
            cur.keyword(":")
        cards = cur.cards(allow_empty=word != "table")
        return CardLine(player, name, name_col, tuple((spec, w.col) for spec, w in cards))

    # ------------------------------------------------------------------ actions
    def action(self, cur: CardCursor[S, C], first: Word) -> Act[S, C]:
        player = cur.player_of(first)
        verb = cur.next("verb")
        parts = self.verb(cur, verb)
        return Act(line=cur.number, text=cur.line.text, player=player, verb=verb.text,
                   cards=parts.cards, src=parts.src, dst=parts.dst, new=parts.new,
                   name=parts.name)

    def cards_as(self, cur: CardCursor[S, C]) -> Parts[C]:
        """`CARD CARD ... [as NAME]` (Machiavelox `direct`, classic `meld`)."""
        specs: list[C] = []
        while (word := cur.peek()) is not None and word.text != "as":
            specs.append(cur.card())
        if not specs:
            raise cur.error("missing cards", word)
        return Parts(cards=tuple(specs), name=self.binding(cur))

    def card_ref(self, cur: CardCursor[S, C], keyword: str) -> Parts[C]:
        """`CARD KEYWORD REF` (`attach 7C to REF`, `take 7H from REF`)."""
        cards = (cur.card(),)
        cur.keyword(keyword)
        src = self.ref(cur)
        cur.end()
        return Parts(cards=cards, src=src)

    def move(self, cur: CardCursor[S, C]) -> Parts[C]:
        """`CARD from REF to REF` or `CARD from REF to new [as NAME]`."""
        cards = (cur.card(),)
        cur.keyword("from")
        src = self.ref(cur)
        cur.keyword("to")
        return self.destination(cur, cards, src)

    def destination(self, cur: CardCursor[S, C], cards: tuple[C, ...],
                    src: AnyRef[C] | None) -> Parts[C]:
        """`new [as NAME]` or a REF, ending the line."""
        if cur.accept("new"):
            return Parts(cards=cards, src=src, new=True, name=self.binding(cur))
        dst = self.ref(cur)
        cur.end()
        return Parts(cards=cards, src=src, dst=dst)

    def binding(self, cur: CardCursor[S, C]) -> str | None:
        """An optional `as NAME` at the end of the line."""
        if not cur.accept("as"):
            cur.end()
            return None
        return self.bound_name(cur)

    def bound_name(self, cur: CardCursor[S, C]) -> str:
        """The NAME after `as`, which must end the line and be new in this deal."""
        word = cur.name()
        cur.end()
        if word.text in self.names:
            raise cur.error(f"meld name {word.text} is already in use", word)
        self.names.add(word.text)
        return word.text

    def ref(self, cur: CardCursor[S, C]) -> AnyRef[C]:
        word = cur.peek()
        if word is None:
            raise cur.error("missing meld (a name, @CARD or [CARD ...])")
        if word.text == "[":
            return ListRef(cur.bracketed())
        cur.pos += 1
        if word.text.startswith("@"):
            return CardRef(cur.read_card(Word(word.text[1:], word.col + 1)))
        if word.text in self.REF_KEYWORDS or not word.text[:1].isalnum():
            raise cur.error(f"expected a meld (a name, @CARD or [CARD ...]), found "
                            f"{word.text!r}", word)
        if word.text not in self.names:
            raise cur.error(f"unknown meld name {word.text!r}{self.name_hint(cur, word)}",
                            word)
        return NameRef(word.text)

    def name_hint(self, cur: CardCursor[S, C], word: Word) -> str:
        """Appended to 'unknown meld name': a ruleset may suggest what was meant."""
        return ""
