"""Scenario text to typed statements (`parse_text`), with line and column in every error.

Besides the grammar, the parser checks what can be known before running: setup blocks build a
valid deal (`setup.DealBuilder`), nothing but setup comes before `start`, `expect rejected`
directly follows an action, and a meld name is used only after setup or `as NAME` gave it.
The grammar both rulesets share is `grammar.StatementParser`; here are Machiavelox's header
(`title`, `match`), setup statements, verbs and expectations (`expect_parser`).
"""

from __future__ import annotations

from machiavelox.rules import Seat

from .errors import ScenarioSyntaxError
from .expect_parser import parse_expect
from .grammar import CardLine, NotMine, Parts, SetupBlock, StatementParser
from .lexer import CardCursor, Cursor, Line, Word, parse_card, split_text
from .setup import DealBuilder
from .syntax import CardSpec, Match, Scenario, SetupStmt, Start, Stmt, Title

SETUP_WORDS = ("seed", "removed", "tallone", "hand", "table", "drawn", "direct-meld")
SIMPLE_VERBS = ("draw", "release", "conclude", "cancel", "stop", "giveup", "abandon", "silent",
                "alive", "ready", "leave")
VERBS = (*SIMPLE_VERBS, "declare", "undeclare", "direct", "attach", "place", "take", "put",
         "move")

Cur = CardCursor[Seat, CardSpec]


def parse_text(text: str) -> Scenario:
    """Parse a whole scenario. Raises ScenarioSyntaxError (line, col, message)."""
    return _Parser().parse(split_text(text))


class _Parser(StatementParser[Seat, CardSpec]):
    def __init__(self) -> None:
        super().__init__()
        self.title_stmt: Title | None = None
        self.match: Match | None = None
        self.builder = DealBuilder()

    def parse(self, lines: list[Line]) -> Scenario:
        self.parse_lines(lines)
        return Scenario(
            title=self.title_stmt.title if self.title_stmt is not None else None,
            long=self.match is not None and self.match.long,
            statements=tuple(self.out),
        )

    def cursor(self, line: Line) -> Cur:
        return Cursor(line)

    def block(self) -> SetupBlock:
        return self.builder

    # ------------------------------------------------------------------ directives
    def directive(self, cur: Cur, first: Word) -> Stmt | NotMine | None:
        word = first.text
        if word in ("title", "match"):
            return self.header(cur, first)
        if word == "rules":  # `rules classic` first makes a classic scenario (scenario.classic)
            which = cur.keyword("machiavelox", "classic")
            if which == "classic" or any(not isinstance(st, Title) for st in self.out):
                raise cur.error(f"'rules {which}' must be the first statement (after an "
                                "optional title)", first)
            cur.end()
            return None
        return self.setup_or_start(cur, first, SETUP_WORDS)

    def close_block(self, line: int, text: str) -> Start:
        start = self.builder.start(line, text)
        self.builder = DealBuilder()
        return start

    def header(self, cur: Cur, first: Word) -> Stmt:
        if self.started:
            raise cur.error(f"'{first.text}' belongs before the first 'start'", first)
        if first.text == "title":
            if self.title_stmt is not None:
                raise cur.error("title given twice", first)
            self.title_stmt = self.title(cur, first)
            return self.title_stmt
        if self.match is not None:
            raise cur.error("match given twice", first)
        kind = cur.keyword("single", "long")
        cur.end()
        self.match = Match(line=cur.number, text=cur.line.text, long=kind == "long")
        return self.match

    # ------------------------------------------------------------------ setup
    def setup(self, cur: Cur, first: Word) -> None:
        if self.started and self.builder.empty and not (self.match and self.match.long):
            raise cur.error("a new deal after 'start' needs 'match long'", first)
        word = first.text
        player: Seat | None = None
        seed: int | None = None
        cards: CardLine[Seat, CardSpec] = CardLine(None, None, 1, ())
        if word == "seed":
            seed = cur.integer("seed")
            cur.end()
        elif word in ("drawn", "direct-meld"):
            player = cur.player()
            cur.end()
        else:
            cards = self.card_line(cur, word, ("tallone", "hand"), colon_optional=True)
            player = cards.player
        self.builder.add(SetupStmt(line=cur.number, text=cur.line.text, word=word,
                                   col=first.col, player=player, name=cards.name,
                                   name_col=cards.name_col, seed=seed, cards=cards.cards))

    # ------------------------------------------------------------------ actions
    def verb(self, cur: Cur, verb: Word) -> Parts[CardSpec]:
        match verb.text:
            case word if word in SIMPLE_VERBS:
                cur.end()
                return Parts()
            case "declare" | "undeclare":
                return Parts(cards=tuple(s for s, _ in cur.cards(allow_empty=False)))
            case "direct":
                return self.cards_as(cur)
            case "attach" | "place":
                return self.card_ref(cur, "to")
            case "take":
                return self.card_ref(cur, "from")
            case "put":
                put = self.destination(cur, (), None)
                return Parts(src=put.dst, new=put.new, name=put.name)
            case "move":
                return self.move(cur)
        raise cur.error(f"unknown verb {verb.text!r}", verb)

    def expectation(self, cur: Cur) -> Stmt:
        return parse_expect(cur)

    def name_hint(self, cur: Cur, word: Word) -> str:
        return f" (did you mean @{word.text}?)" if _looks_like_card(word, cur) else ""


def _looks_like_card(word: Word, cur: Cur) -> bool:
    try:
        parse_card(word, cur.number)
    except ScenarioSyntaxError:
        return False
    return True
