"""Scenario text to typed statements (`parse_text`), with line and column in every error.

Besides the grammar, the parser checks what can be known before running: setup blocks build a
valid deal (`setup.DealBuilder`), nothing but setup comes before `start`, `expect rejected`
directly follows an action, and a meld name is used only after setup or `as NAME` gave it.
"""

from __future__ import annotations

import re

from machiavelox.rules import Seat

from .errors import ScenarioSyntaxError
from .expect_parser import parse_expect
from .lexer import Cursor, Line, Word, parse_card, split_text
from .setup import DealBuilder
from .syntax import (
    Act,
    At,
    CardRef,
    CardSpec,
    ExpectRejected,
    ListRef,
    Match,
    NameRef,
    Ref,
    Scenario,
    SetupStmt,
    Stmt,
    Title,
)

SETUP_WORDS = ("seed", "removed", "tallone", "hand", "table", "drawn", "direct-meld")
SIMPLE_VERBS = ("draw", "release", "conclude", "cancel", "stop", "giveup", "abandon", "silent",
                "alive", "ready", "leave")
VERBS = (*SIMPLE_VERBS, "declare", "undeclare", "direct", "attach", "place", "take", "put",
         "move")
_PLAYERISH = re.compile(r"[pP][0-9]+")


def parse_text(text: str) -> Scenario:
    """Parse a whole scenario. Raises ScenarioSyntaxError (line, col, message)."""
    return _Parser().parse(split_text(text))


class _Parser:
    def __init__(self) -> None:
        self.title: Title | None = None
        self.match: Match | None = None
        self.started = False
        self.builder = DealBuilder()
        self.out: list[Stmt] = []
        self.names: set[str] = set()  # meld names usable in the current smazzata
        self.last: Stmt | None = None

    def parse(self, lines: list[Line]) -> Scenario:
        for line in lines:
            stmt = self.statement(Cursor(line))
            if stmt is not None:
                self.out.append(stmt)
            self.last = stmt
        if not self.builder.empty:
            first = self.builder.stmts[0]
            raise ScenarioSyntaxError(first.line, first.col, "setup without a following 'start'")
        return Scenario(
            title=self.title.title if self.title is not None else None,
            long=self.match is not None and self.match.long,
            statements=tuple(self.out),
        )

    # ------------------------------------------------------------------ dispatch
    def statement(self, cur: Cursor) -> Stmt | None:
        """One line. Setup statements go to the deal builder (None is returned)."""
        first = cur.next("statement")
        word = first.text
        line, text = cur.number, cur.line.text
        if word in ("title", "match"):
            return self.header(cur, first)
        if word == "rules":  # `rules classic` first makes a classic scenario (scenario.classic)
            which = cur.keyword("machiavelox", "classic")
            if which == "classic" or any(not isinstance(st, Title) for st in self.out):
                raise cur.error(f"'rules {which}' must be the first statement (after an "
                                "optional title)", first)
            cur.end()
            return None
        if word in SETUP_WORDS:
            self.setup(cur, first)
            return None
        if word == "start":
            cur.end()
            start = self.builder.start(line, text)
            self.builder = DealBuilder()
            self.started = True
            self.names = set(start.names)
            return start
        if word in ("at", "wait", "expect") or _PLAYERISH.fullmatch(word):
            if not self.started:
                raise cur.error(f"'{word}' before 'start': set up the deal, then 'start'", first)
            if not self.builder.empty:
                raise cur.error(f"'{word}' in the middle of a new deal: finish it with 'start'",
                                first)
        if word in ("at", "wait"):
            ms = cur.seconds()
            cur.end()
            return At(line=line, text=text, ms=ms, relative=word == "wait")
        if word == "expect":
            stmt = parse_expect(cur)
            if isinstance(stmt, ExpectRejected) and not isinstance(self.last, Act):
                raise cur.error("'expect rejected' must directly follow an action", first)
            return stmt
        if _PLAYERISH.fullmatch(word):
            return self.action(cur, first)
        raise cur.error(f"unknown statement {word!r}", first)

    def header(self, cur: Cursor, first: Word) -> Stmt:
        line, text = cur.number, cur.line.text
        if self.started:
            raise cur.error(f"'{first.text}' belongs before the first 'start'", first)
        if first.text == "title":
            if self.title is not None:
                raise cur.error("title given twice", first)
            rest = cur.line.text[len("title"):].strip()
            if not rest:
                raise cur.error("missing title text")
            self.title = Title(line=line, text=text, title=rest)
            return self.title
        if self.match is not None:
            raise cur.error("match given twice", first)
        kind = cur.keyword("single", "long")
        cur.end()
        self.match = Match(line=line, text=text, long=kind == "long")
        return self.match

    # ------------------------------------------------------------------ setup
    def setup(self, cur: Cursor, first: Word) -> None:
        if self.started and self.builder.empty and not (self.match and self.match.long):
            raise cur.error("a new deal after 'start' needs 'match long'", first)
        word = first.text
        player: Seat | None = None
        name: str | None = None
        seed: int | None = None
        name_col = 1
        cards: list[tuple[CardSpec, Word]] = []
        if word == "seed":
            seed = cur.integer("seed")
            cur.end()
        elif word in ("drawn", "direct-meld"):
            player = cur.player()
            cur.end()
        else:
            if word in ("tallone", "hand"):
                player = cur.player()
                cur.keyword(":")
            elif word == "table":
                if not cur.accept(":"):
                    name_word = cur.name()
                    name, name_col = name_word.text, name_word.col
                    cur.keyword(":")
            else:
                cur.accept(":")
            cards = cur.cards(allow_empty=word != "table")
        st = SetupStmt(line=cur.number, text=cur.line.text, word=word, col=first.col,
                       player=player, name=name, name_col=name_col, seed=seed,
                       cards=tuple((spec, w.col) for spec, w in cards))
        self.builder.add(st)

    # ------------------------------------------------------------------ actions
    def action(self, cur: Cursor, first: Word) -> Act:
        player = cur.player_of(first)
        verb_word = cur.next("verb")
        verb = verb_word.text
        cards: tuple[CardSpec, ...] = ()
        src: Ref | None = None
        dst: Ref | None = None
        new = False
        name: str | None = None
        if verb in SIMPLE_VERBS:
            cur.end()
        elif verb in ("declare", "undeclare"):
            cards = tuple(s for s, _ in cur.cards(allow_empty=False))
        elif verb == "direct":
            specs = []
            while (word := cur.peek()) is not None and word.text != "as":
                specs.append(cur.card())
            if not specs:
                raise cur.error("missing cards", word)
            cards = tuple(specs)
            name = self.binding(cur)
        elif verb in ("attach", "place", "take"):
            cards = (cur.card(),)
            cur.keyword("from" if verb == "take" else "to")
            src = self.ref(cur)
            cur.end()
        elif verb == "put":
            new = cur.accept("new")
            if new:
                name = self.binding(cur)
            else:
                src = self.ref(cur)
                cur.end()
        elif verb == "move":
            cards = (cur.card(),)
            cur.keyword("from")
            src = self.ref(cur)
            cur.keyword("to")
            new = cur.accept("new")
            if new:
                name = self.binding(cur)
            else:
                dst = self.ref(cur)
                cur.end()
        else:
            raise cur.error(f"unknown verb {verb!r}", verb_word)
        return Act(line=cur.number, text=cur.line.text, player=player, verb=verb, cards=cards,
                   src=src, dst=dst, new=new, name=name)

    def binding(self, cur: Cursor) -> str | None:
        """An optional `as NAME` at the end of the line."""
        if not cur.accept("as"):
            cur.end()
            return None
        return self.bound_name(cur)

    def bound_name(self, cur: Cursor) -> str:
        """The NAME after `as`, which must end the line and be new in this smazzata."""
        word = cur.name()
        cur.end()
        if word.text in self.names:
            raise cur.error(f"meld name {word.text} is already in use", word)
        self.names.add(word.text)
        return word.text

    def ref(self, cur: Cursor) -> Ref:
        word = cur.peek()
        if word is None:
            raise cur.error("missing meld (a name, @CARD or [CARD ...])")
        if word.text == "[":
            return ListRef(cur.bracketed())
        cur.pos += 1
        if word.text.startswith("@"):
            return CardRef(parse_card(Word(word.text[1:], word.col + 1), cur.number))
        if word.text in ("to", "from", "new", "as") or not word.text[:1].isalnum():
            raise cur.error(f"expected a meld (a name, @CARD or [CARD ...]), found "
                            f"{word.text!r}", word)
        if word.text not in self.names:
            hint = f" (did you mean @{word.text}?)" if _looks_like_card(word, cur) else ""
            raise cur.error(f"unknown meld name {word.text!r}{hint}", word)
        return NameRef(word.text)


def _looks_like_card(word: Word, cur: Cursor) -> bool:
    try:
        parse_card(word, cur.number)
    except ScenarioSyntaxError:
        return False
    return True
