"""Classic scenario text to typed statements, with line and column in every error.

A scenario is classic when its first statement (after an optional `title`) is `rules classic`
(`is_classic`). The lexer, the cursor and the statement grammar are the shared ones
(`..lexer`, `..grammar`, the shared expectations of `..expect_parser`); here are classic's
cards (jokers `JK`, `JK#1`..`JK#4`, a third copy `7H#3`), players (up to `p6`), header and
setup statements, verbs (`meld`, `swap`, ...) and its own expectations.
"""

from __future__ import annotations

import re

from machiavelox import classic

from ..errors import ScenarioSyntaxError
from ..expect_parser import (
    event_kind,
    expect_cards,
    expect_meld,
    expect_melds,
    expect_phase,
    expect_rejected,
    expect_table,
)
from ..grammar import NotMine, Parts, SetupBlock, StatementParser
from ..lexer import CardCursor, Line, Word, bad_card, split_text
from ..syntax import ExpectEvent, Scenario, Stmt, Title
from .setup import Builder, SetupStmt
from .syntax import ExpectNumber, ExpectSeat, ExpectWinners, Spec, Start

SETUP_WORDS = ("players", "variant", "seed", "hand", "stock", "table", "first", "opened",
               "total")
SIMPLE_VERBS = ("end", "draw", "restore", "end-session", "silent", "alive")
VERBS = (*SIMPLE_VERBS, "meld", "attach", "move", "swap")
MACHIAVELOX_ONLY = ("removed", "tallone", "drawn", "direct-meld", "match")
PHASES = ("playing", "between", "ended")
STATUSES = ("active", "eliminated")
MACHIAVELOX_VERBS = ("declare", "undeclare", "direct", "place", "take", "put", "stop",
                     "conclude")
_CARD = re.compile(r"(?:(A|[2-9]|10|J|Q|K)([SHDC♠♥♦♣])|JK)(?:#([0-9]+))?")


def is_classic(text: str) -> bool:
    """True when the scenario declares `rules classic` before its first `start` (it must be
    its first statement after an optional title: the classic parser says so otherwise)."""
    for line in split_text(text):
        words = [w.text for w in line.words]
        if words[0] == "start":
            return False
        if words[:2] == ["rules", "classic"]:
            return True
    return False


def parse_text(text: str) -> Scenario:
    """Parse a whole classic scenario. Raises ScenarioSyntaxError (line, col, message)."""
    return _Parser().parse(split_text(text))


def parse_spec(word: Word, line: int) -> Spec:
    if _CARD.fullmatch(word.text) is None:
        raise bad_card(word, line, _CARD, "7H, 10S, QH#2, JK",
                       "rank A 2..10 J Q K then suit S H D C, or JK for a joker")
    try:
        face, copy = classic.parse_face(word.text)
    except ValueError as e:
        raise ScenarioSyntaxError(line, word.col, str(e)) from None
    return Spec(face, copy)


class _Cur(CardCursor[classic.Seat, Spec]):
    """The shared cursor with classic cards (jokers, a third copy) and players p1..p6."""

    PLAYER = "player (p1 .. p6)"
    players = 6

    def read_card(self, word: Word) -> Spec:
        return parse_spec(word, self.number)

    def player_of(self, word: Word) -> classic.Seat:
        try:
            seat = classic.Seat.parse(word.text)
        except ValueError:
            raise self.error(f"bad player {word.text!r}: use p1 .. p{self.players}",
                             word) from None
        if seat >= self.players:
            raise self.error(f"no {seat} at a table of {self.players} players", word)
        return seat


Cur = CardCursor[classic.Seat, Spec]


class _Parser(StatementParser[classic.Seat, Spec]):
    REF_KEYWORDS = (*StatementParser.REF_KEYWORDS, "in", "for")

    def __init__(self) -> None:
        super().__init__()
        self.title_text: str | None = None
        self.declared = False
        self.variants: classic.Variants | None = None
        self.builder = Builder(None)
        self.players = 6

    def parse(self, lines: list[Line]) -> Scenario:
        self.parse_lines(lines)
        if self.variants is None:
            raise ScenarioSyntaxError(lines[-1].number if lines else 1, 1,
                                      "a classic scenario needs a 'start'")
        return Scenario(title=self.title_text, long=False, statements=tuple(self.out))

    def cursor(self, line: Line) -> _Cur:
        cur = _Cur(line)
        cur.players = self.players
        return cur

    def block(self) -> SetupBlock:
        return self.builder

    # ------------------------------------------------------------------ directives
    def directive(self, cur: Cur, first: Word) -> Stmt | NotMine | None:
        word = first.text
        if word == "title":
            if self.title_text is not None or self.variants is not None:
                raise cur.error("title given twice" if self.title_text is not None
                                else "'title' belongs before the first 'start'", first)
            title = self.title(cur, first)
            self.title_text = title.title
            return title
        if word == "rules":
            if self.declared or (self.out and not isinstance(self.out[-1], Title)):
                raise cur.error("'rules classic' comes first (after an optional title)", first)
            cur.keyword("classic")
            cur.end()
            self.declared = True
            return None
        if not self.declared:
            raise cur.error("a classic scenario starts with 'rules classic'", first)
        if word in MACHIAVELOX_ONLY:
            raise cur.error(f"'{word}' is a Machiavelox statement, not classic", first)
        return self.setup_or_start(cur, first, SETUP_WORDS)

    def close_block(self, line: int, text: str) -> Start:
        start = self.builder.start(line, text)
        if self.variants is None:
            self.variants = start.variants
            self.players = start.variants.players
        self.builder = Builder(self.variants)
        return start

    # ------------------------------------------------------------------ setup
    def setup(self, cur: Cur, first: Word) -> None:
        word = first.text
        line, text = cur.number, cur.line.text

        def simple(player: classic.Seat | None = None, number: int | None = None) -> None:
            cur.end()
            self.builder.add(SetupStmt(line=line, text=text, word=word, col=first.col,
                                       player=player, number=number))

        if word in ("players", "seed"):
            simple(number=cur.integer("number of players" if word == "players" else "seed"))
            return
        if word == "variant":
            self.builder.add(self.variant(cur, first.col))
            return
        if word in ("first", "opened"):
            simple(player=cur.player())
            return
        if word == "total":
            seat = cur.player()
            simple(player=seat, number=cur.integer("points", signed=True))
            return
        cards = self.card_line(cur, word, ("hand",), colon_optional=False)
        self.builder.add(SetupStmt(
            line=line, text=text, word=word, col=first.col, player=cards.player,
            name=cards.name, name_col=cards.name_col, cards=cards.cards))

    def variant(self, cur: Cur, col: int) -> SetupStmt:
        key = cur.keyword("jokers", "decks", "aces", "opening", "turn-time", "penalty",
                          "scoring", "session")
        number: int | None = None
        value = ""
        if key in ("jokers", "decks", "opening", "penalty"):
            number = cur.integer(key)
        elif key == "turn-time":
            number = cur.seconds()
        elif key == "aces":
            value = cur.keyword("low", "low-high", "circular")
        elif key == "scoring":
            value = cur.keyword("face", "scala40")
        else:
            value = cur.keyword("single", "threshold", "hands", "elimination", "open")
            if value in ("threshold", "hands", "elimination"):
                number = cur.integer(f"{value} number")
                if number <= 0:
                    raise cur.error(f"a {value} session needs a positive number",
                                    cur.words[cur.pos - 1])
        cur.end()
        return SetupStmt(line=cur.number, text=cur.line.text, word="variant",
                         col=col, key=key, value=value, number=number)

    # ------------------------------------------------------------------ actions
    def verb(self, cur: Cur, verb: Word) -> Parts[Spec]:
        match verb.text:
            case word if word in SIMPLE_VERBS:
                cur.end()
                return Parts()
            case "meld":
                return self.cards_as(cur)
            case "attach":
                return self.card_ref(cur, "to")
            case "move":
                return self.move(cur)
            case "swap":
                return self.swap(cur)
        hint = " (a Machiavelox verb)" if verb.text in MACHIAVELOX_VERBS else ""
        raise cur.error(f"unknown verb {verb.text!r}{hint}", verb)

    def swap(self, cur: Cur) -> Parts[Spec]:
        """`swap CARD for JK in REF` (cards: the hand card, then the joker)."""
        card_word = cur.next("card")
        card = parse_spec(card_word, cur.number)
        if card.face is None:
            raise cur.error("swap a natural card for a joker (a joker for a joker means "
                            "nothing)", card_word)
        cur.keyword("for")
        joker_word = cur.next("joker (JK)")
        joker = parse_spec(joker_word, cur.number)
        if joker.face is not None:
            raise cur.error(f"expected a joker (JK or JK#n), found {joker_word.text!r}",
                            joker_word)
        cur.keyword("in")
        src = self.ref(cur)
        cur.end()
        return Parts(cards=(card, joker), src=src)

    # ------------------------------------------------------------------ expectations
    def expectation(self, cur: Cur) -> Stmt:
        word = cur.next("expectation")
        what = word.text
        line, text = cur.number, cur.line.text
        if what == "rejected":
            return expect_rejected(cur, what)
        if what == "hand":
            return expect_cards(cur, what)
        if what == "table":
            return expect_table(cur, what)
        if what in ("meld", "no"):
            return expect_meld(cur, what, (), "classic melds have no status (consolidated, "
                               "confirmed, trial are Machiavelox's)")
        if what == "melds":
            return expect_melds(cur, what)
        if what in ("stock", "time-left"):
            n = cur.integer("number of cards") if what == "stock" else cur.seconds()
            cur.end()
            return ExpectNumber(line=line, text=text, what=what, player=None, number=n)
        if what in ("count", "score", "total"):
            seat = cur.player()
            n = cur.integer("number", signed=what != "count")
            cur.end()
            return ExpectNumber(line=line, text=text, what=what, player=seat, number=n)
        if what in ("turn", "opened", "not", "status"):
            if what == "not":
                cur.keyword("opened")
            seat = cur.player()
            status = cur.keyword(*STATUSES) if what == "status" else ""
            cur.end()
            return ExpectSeat(line=line, text=text, what=what, player=seat, word=status)
        if what in ("winner", "session-winner"):
            players: list[classic.Seat] = []
            if not cur.accept("none"):
                while not cur.at_end() or not players:
                    w = cur.next("player")
                    seat = cur.player_of(w)
                    if seat in players:
                        raise cur.error(f"{seat} named twice", w)
                    players.append(seat)
            cur.end()
            return ExpectWinners(line=line, text=text, session=what == "session-winner",
                                 players=tuple(players))
        if what == "phase":
            return expect_phase(cur, PHASES)
        if what == "event":
            words = [event_kind(cur).text]
            if not cur.at_end():
                words.append(str(cur.player()))
            if not cur.at_end():
                words.append(str(cur.integer("number")))
            cur.end()
            return ExpectEvent(line=line, text=text, words=tuple(words))
        if what in ("pozzetto", "tallone", "calata", "holding", "draw"):
            raise cur.error(f"'expect {what}' is a Machiavelox expectation, not classic", word)
        raise cur.error(f"unknown expectation {what!r}", word)
