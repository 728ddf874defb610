"""Lines to words, and a cursor that reads typed words (cards, players, numbers) off a line.

Lexical rules (SCENARIO-FORMAT.md "Lexical"): one statement per line; words are separated by
white space; `#` starts a comment when it begins a word (so the `#2` of `7H#2` is not a
comment); `[`, `]` and `:` are words of their own even when written against another word
(`[4C`, `6C]`, `p1:`). Columns are 1-based character positions.

`CardCursor` is shared by both rulesets, generic in the written card it reads (`read_card`);
`Cursor` is Machiavelox's (its cards and players p1..p3), classic's is in `classic.parser`.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Generic, TypeVar

from machiavelox import rules

from .errors import ScenarioSyntaxError
from .syntax import CardSpec

PUNCTUATION = "[]:"
_NAME = re.compile(r"[A-Za-z0-9_]+")
_CARD = re.compile(r"(A|[2-9]|10|J|Q|K)([SHDC♠♥♦♣])(?:#([0-9]+))?")
_SUITS = {"S": rules.Suit.S, "H": rules.Suit.H, "D": rules.Suit.D, "C": rules.Suit.C,
          "♠": rules.Suit.S, "♥": rules.Suit.H, "♦": rules.Suit.D, "♣": rules.Suit.C}
_RANKS = {"A": 1, "J": 11, "Q": 12, "K": 13}
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_INTEGER = re.compile(r"-?[0-9]+")
_VARIATION_SELECTOR = "\ufe0f"  # emoji presentation of ♠♥♦♣, as some editors insert it


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    col: int


@dataclass(frozen=True, slots=True)
class Line:
    number: int
    text: str  # the statement without its comment, stripped
    words: tuple[Word, ...]


def split_line(number: int, raw: str) -> Line:
    """The words of one line, comment removed."""
    words: list[Word] = []
    i, n = 0, len(raw)
    end = n
    while i < n:
        ch = raw[i]
        if ch.isspace() or ch == _VARIATION_SELECTOR:
            i += 1
            continue
        if ch == "#":
            end = i
            break
        if ch in PUNCTUATION:
            words.append(Word(ch, i + 1))
            i += 1
            continue
        start = i
        while i < n and not raw[i].isspace() and raw[i] not in PUNCTUATION:
            i += 1
        words.append(Word(raw[start:i].replace(_VARIATION_SELECTOR, ""), start + 1))
    return Line(number, raw[:end].strip(), tuple(words))


def split_text(text: str) -> list[Line]:
    """The non-empty lines of a scenario (blank and comment-only lines dropped)."""
    raw_lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    lines = (split_line(i, raw) for i, raw in enumerate(raw_lines, start=1))
    return [line for line in lines if line.words]


def bad_card(word: Word, line: int, card: re.Pattern[str], examples: str, spelling: str
             ) -> ScenarioSyntaxError:
    """A word that is no card: the hint says how cards are written (`examples` when only the
    case is wrong, else `spelling`)."""
    hint = f" (cards are written in upper case, e.g. {examples})" \
        if card.fullmatch(word.text.upper()) else f" ({spelling})"
    return ScenarioSyntaxError(line, word.col, f"bad card {word.text!r}{hint}")


def parse_card(word: Word, line: int) -> CardSpec:
    m = _CARD.fullmatch(word.text)
    if m is None:
        raise bad_card(word, line, _CARD, "7H, 10S, QH#2", "rank A 2..10 J Q K, then suit S H D C")
    rank_text, suit_text, copy_text = m.groups()
    copy: int | None = None
    if copy_text is not None:
        if copy_text not in ("1", "2"):
            raise ScenarioSyntaxError(line, word.col, f"bad card copy in {word.text!r}: "
                                      "there are two copies, #1 and #2")
        copy = int(copy_text)
    rank = _RANKS.get(rank_text) or int(rank_text)
    return CardSpec(rank, _SUITS[suit_text], copy)


def is_name(text: str) -> bool:
    return _NAME.fullmatch(text) is not None


S = TypeVar("S")
C = TypeVar("C")


class CardCursor(ABC, Generic[S, C]):
    """Reads the words of one line left to right; every error names the offending column.

    The cards and players it reads are the ruleset's (`read_card`, `player_of`)."""

    PLAYER = "player (p1, p2 or p3)"  # what a missing player is called

    def __init__(self, line: Line) -> None:
        self.line = line
        self.words = line.words
        self.pos = 0

    # -- low level -----------------------------------------------------------------------
    @property
    def number(self) -> int:
        return self.line.number

    def at_end(self) -> bool:
        return self.pos >= len(self.words)

    def peek(self) -> Word | None:
        return None if self.at_end() else self.words[self.pos]

    def end_col(self) -> int:
        """The column just after the last word (where a missing word would go)."""
        if not self.words:
            return 1
        last = self.words[-1]
        return last.col + len(last.text) + 1

    def error(self, message: str, word: Word | None = None) -> ScenarioSyntaxError:
        col = word.col if word is not None else self.end_col()
        return ScenarioSyntaxError(self.number, col, message)

    def next(self, what: str) -> Word:
        word = self.peek()
        if word is None:
            raise self.error(f"missing {what}")
        self.pos += 1
        return word

    def keyword(self, *choices: str) -> str:
        """One of the given words."""
        what = " or ".join(repr(c) for c in choices)
        word = self.next(what)
        if word.text not in choices:
            raise self.error(f"expected {what}, found {word.text!r}", word)
        return word.text

    def accept(self, text: str) -> bool:
        word = self.peek()
        if word is not None and word.text == text:
            self.pos += 1
            return True
        return False

    def end(self) -> None:
        word = self.peek()
        if word is not None:
            raise self.error(f"unexpected {word.text!r}: the statement is complete", word)

    # -- typed words ---------------------------------------------------------------------
    @abstractmethod
    def read_card(self, word: Word) -> C:
        """The card `word` writes; a ScenarioSyntaxError at its column if it is none."""

    @abstractmethod
    def player_of(self, word: Word) -> S:
        """The seat `word` names; a ScenarioSyntaxError at its column if it is none."""

    def player(self) -> S:
        return self.player_of(self.next(self.PLAYER))

    def card(self) -> C:
        return self.read_card(self.next("card"))

    def card_word(self) -> tuple[C, Word]:
        word = self.next("card")
        return self.read_card(word), word

    def cards(self, allow_empty: bool = True) -> list[tuple[C, Word]]:
        """Cards to the end of the line, or `-` for none."""
        word = self.peek()
        if word is not None and word.text == "-":
            if not allow_empty:
                raise self.error("at least one card is needed here", word)
            self.pos += 1
            self.end()
            return []
        if word is None:
            raise self.error("missing cards (write - for none)" if allow_empty
                             else "missing cards")
        out: list[tuple[C, Word]] = []
        while not self.at_end():
            out.append(self.card_word())
        return out

    def bracketed(self) -> tuple[C, ...]:
        """`[CARD CARD ...]` (at least one card)."""
        self.keyword("[")
        out: list[C] = []
        while True:
            word = self.next("']'")
            if word.text == "]":
                break
            out.append(self.read_card(word))
        if not out:
            raise self.error("a meld has at least one card", self.words[self.pos - 1])
        return tuple(out)

    def seconds(self) -> int:
        """Non-negative seconds (`12.5`) as integer milliseconds."""
        word = self.next("seconds")
        if _SECONDS.fullmatch(word.text) is None:
            raise self.error(f"bad time {word.text!r}: seconds, e.g. 12 or 12.5", word)
        return round(float(word.text) * 1000)

    def integer(self, what: str, signed: bool = False) -> int:
        word = self.next(what)
        if _INTEGER.fullmatch(word.text) is None or (not signed and word.text.startswith("-")):
            kind = "an integer" if signed else "a non-negative integer"
            raise self.error(f"bad {what} {word.text!r}: {kind}", word)
        return int(word.text)

    def name(self) -> Word:
        word = self.next("meld name")
        if not is_name(word.text) or word.text == "new":
            raise self.error(f"bad meld name {word.text!r}: letters, digits and _ "
                             "(not 'new')", word)
        return word


class Cursor(CardCursor[rules.Seat, CardSpec]):
    """The Machiavelox cursor: its cards (two copies) and its players p1..p3."""

    def read_card(self, word: Word) -> CardSpec:
        return parse_card(word, self.number)

    def player_of(self, word: Word) -> rules.Seat:
        try:
            return rules.Seat.parse(word.text)
        except ValueError:
            raise self.error(f"bad player {word.text!r}: use p1, p2 or p3", word) from None
