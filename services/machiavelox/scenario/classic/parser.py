"""Classic scenario text to typed statements, with line and column in every error.

A scenario is classic when its first statement (after an optional `title`) is `rules classic`
(`is_classic`). Lexing is Machiavelox's (`..lexer`: words, comments, `[ ] :`, the `Cursor`);
cards add jokers (`JK`, `JK#1`..`JK#4`) and a third copy (`7H#3`), players go up to `p6`.
"""

from __future__ import annotations

import re

from machiavelox import classic

from ..errors import ScenarioSyntaxError
from ..lexer import Cursor, Line, Word, split_text
from ..syntax import At, ExpectMeldCount, ExpectRejected, NameRef, Stmt, Title
from .setup import Builder, SetupStmt
from .syntax import (
    Act,
    CardRef,
    ExpectCards,
    ExpectEvent,
    ExpectMeld,
    ExpectNumber,
    ExpectPhase,
    ExpectSeat,
    ExpectTable,
    ExpectWinners,
    ListRef,
    Ref,
    Scenario,
    Spec,
)

SETUP_WORDS = ("players", "variant", "seed", "hand", "stock", "table", "first", "opened",
               "total")
SIMPLE_VERBS = ("end", "draw", "restore", "end-session", "silent", "alive")
VERBS = (*SIMPLE_VERBS, "meld", "attach", "move", "swap")
MACHIAVELOX_ONLY = ("removed", "tallone", "drawn", "direct-meld", "match")
PHASES = ("playing", "between", "ended")
STATUSES = ("active", "eliminated")
_PLAYERISH = re.compile(r"[pP][0-9]+")
_CARD = re.compile(r"(?:(A|[2-9]|10|J|Q|K)([SHDC♠♥♦♣])|JK)(?:#([0-9]+))?")
_EVENT_KIND = re.compile(r"[a-z][a-z-]*")


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
    m = _CARD.fullmatch(word.text)
    if m is None:
        hint = " (cards are written in upper case, e.g. 7H, 10S, QH#2, JK)" \
            if _CARD.fullmatch(word.text.upper()) else " (rank A 2..10 J Q K then suit S H D C, " \
            "or JK for a joker)"
        raise ScenarioSyntaxError(line, word.col, f"bad card {word.text!r}{hint}")
    try:
        face, copy = classic.parse_face(word.text)
    except ValueError as e:
        raise ScenarioSyntaxError(line, word.col, str(e)) from None
    return Spec(face, copy)


class _Cur(Cursor):
    """The Machiavelox cursor with classic cards and players."""

    players = 6

    def seat(self) -> classic.Seat:
        return self.seat_of(self.next("player (p1 .. p6)"))

    def seat_of(self, word: Word) -> classic.Seat:
        try:
            seat = classic.Seat.parse(word.text)
        except ValueError:
            raise self.error(f"bad player {word.text!r}: use p1 .. p{self.players}",
                             word) from None
        if seat >= self.players:
            raise self.error(f"no {seat} at a table of {self.players} players", word)
        return seat

    def spec(self) -> Spec:
        return parse_spec(self.next("card"), self.number)

    def specs(self, allow_empty: bool = True) -> list[tuple[Spec, Word]]:
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
        out: list[tuple[Spec, Word]] = []
        while not self.at_end():
            w = self.next("card")
            out.append((parse_spec(w, self.number), w))
        return out

    def list_ref(self) -> tuple[Spec, ...]:
        self.keyword("[")
        out: list[Spec] = []
        while True:
            word = self.next("']'")
            if word.text == "]":
                break
            out.append(parse_spec(word, self.number))
        if not out:
            raise self.error("a meld has at least one card", self.words[self.pos - 1])
        return tuple(out)


class _Parser:
    def __init__(self) -> None:
        self.title: str | None = None
        self.declared = False
        self.variants: classic.Variants | None = None
        self.builder = Builder(None)
        self.out: list[Stmt] = []
        self.names: set[str] = set()
        self.last: Stmt | None = None
        self.players = 6

    def parse(self, lines: list[Line]) -> Scenario:
        for line in lines:
            cur = _Cur(line)
            cur.players = self.players
            stmt = self.statement(cur)
            if stmt is not None:
                self.out.append(stmt)
            self.last = stmt
        if not self.builder.empty:
            first = self.builder.stmts[0]
            raise ScenarioSyntaxError(first.line, first.col, "setup without a following 'start'")
        if self.variants is None:
            raise ScenarioSyntaxError(lines[-1].number if lines else 1, 1,
                                      "a classic scenario needs a 'start'")
        return Scenario(self.title, tuple(self.out))

    # ------------------------------------------------------------------ dispatch
    def statement(self, cur: _Cur) -> Stmt | None:
        first = cur.next("statement")
        word = first.text
        line, text = cur.number, cur.line.text
        if word == "title":
            if self.title is not None or self.variants is not None:
                raise cur.error("title given twice" if self.title is not None
                                else "'title' belongs before the first 'start'", first)
            rest = text[len("title"):].strip()
            if not rest:
                raise cur.error("missing title text")
            self.title = rest
            return Title(line=line, text=text, title=rest)
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
        if word in SETUP_WORDS:
            self.setup(cur, first)
            return None
        if word == "start":
            cur.end()
            start = self.builder.start(line, text)
            if self.variants is None:
                self.variants = start.variants
                self.players = start.variants.players
            self.builder = Builder(self.variants)
            self.names = set(start.names)
            return start
        if word in ("at", "wait", "expect") or _PLAYERISH.fullmatch(word):
            if self.variants is None:
                raise cur.error(f"'{word}' before 'start': set up the deal, then 'start'", first)
            if not self.builder.empty:
                raise cur.error(f"'{word}' in the middle of a new deal: finish it with 'start'",
                                first)
        if word in ("at", "wait"):
            ms = cur.seconds()
            cur.end()
            return At(line=line, text=text, ms=ms, relative=word == "wait")
        if word == "expect":
            stmt = self.expect(cur)
            if isinstance(stmt, ExpectRejected) and not isinstance(self.last, Act):
                raise cur.error("'expect rejected' must directly follow an action", first)
            return stmt
        if _PLAYERISH.fullmatch(word):
            return self.action(cur, first)
        raise cur.error(f"unknown statement {word!r}", first)

    # ------------------------------------------------------------------ setup
    def setup(self, cur: _Cur, first: Word) -> None:
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
            simple(player=cur.seat())
            return
        if word == "total":
            seat = cur.seat()
            simple(player=seat, number=cur.integer("points", signed=True))
            return
        player: classic.Seat | None = None
        name: str | None = None
        name_col = 1
        if word == "hand":
            player = cur.seat()
            cur.keyword(":")
        elif word == "table":
            if not cur.accept(":"):
                name_word = cur.name()
                name, name_col = name_word.text, name_word.col
                cur.keyword(":")
        else:
            cur.keyword(":")
        cards = cur.specs(allow_empty=word != "table")
        self.builder.add(SetupStmt(
            line=line, text=text, word=word, col=first.col, player=player, name=name,
            name_col=name_col, cards=tuple((s, w.col) for s, w in cards)))

    def variant(self, cur: _Cur, col: int) -> SetupStmt:
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
    def action(self, cur: _Cur, first: Word) -> Act:
        player = cur.seat_of(first)
        verb_word = cur.next("verb")
        verb = verb_word.text
        line, text = cur.number, cur.line.text
        cards: tuple[Spec, ...] = ()
        src: Ref | None = None
        dst: Ref | None = None
        new = False
        name: str | None = None
        if verb in SIMPLE_VERBS:
            cur.end()
        elif verb == "meld":
            specs: list[Spec] = []
            while (word := cur.peek()) is not None and word.text != "as":
                specs.append(cur.spec())
            if not specs:
                raise cur.error("missing cards", word)
            cards = tuple(specs)
            name = self.binding(cur)
        elif verb == "attach":
            cards = (cur.spec(),)
            cur.keyword("to")
            src = self.ref(cur)
            cur.end()
        elif verb == "move":
            cards = (cur.spec(),)
            cur.keyword("from")
            src = self.ref(cur)
            cur.keyword("to")
            new = cur.accept("new")
            if new:
                name = self.binding(cur)
            else:
                dst = self.ref(cur)
                cur.end()
        elif verb == "swap":
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
            cards = (card, joker)
        else:
            hint = " (a Machiavelox verb)" if verb in ("declare", "undeclare", "direct", "place",
                                                       "take", "put", "stop", "conclude") else ""
            raise cur.error(f"unknown verb {verb!r}{hint}", verb_word)
        return Act(line=line, text=text, player=player, verb=verb, cards=cards, src=src,
                   dst=dst, new=new, name=name)

    def binding(self, cur: _Cur) -> str | None:
        if not cur.accept("as"):
            cur.end()
            return None
        word = cur.name()
        cur.end()
        if word.text in self.names:
            raise cur.error(f"meld name {word.text} is already in use", word)
        self.names.add(word.text)
        return word.text

    def ref(self, cur: _Cur) -> Ref:
        word = cur.peek()
        if word is None:
            raise cur.error("missing meld (a name, @CARD or [CARD ...])")
        if word.text == "[":
            return ListRef(cur.list_ref())
        cur.pos += 1
        if word.text.startswith("@"):
            return CardRef(parse_spec(Word(word.text[1:], word.col + 1), cur.number))
        if word.text in ("to", "from", "new", "as", "in", "for") or not word.text[:1].isalnum():
            raise cur.error(f"expected a meld (a name, @CARD or [CARD ...]), found "
                            f"{word.text!r}", word)
        if word.text not in self.names:
            raise cur.error(f"unknown meld name {word.text!r}", word)
        return NameRef(word.text)

    # ------------------------------------------------------------------ expectations
    def expect(self, cur: _Cur) -> Stmt:
        word = cur.next("expectation")
        what = word.text
        line, text = cur.number, cur.line.text
        if what == "rejected":
            reason = cur.peek()
            cur.pos += reason is not None
            cur.end()
            return ExpectRejected(line=line, text=text,
                                  word=reason.text if reason is not None else None)
        if what == "hand":
            seat = cur.seat()
            cur.keyword(":")
            cards = tuple(s for s, _ in cur.specs())
            return ExpectCards(line=line, text=text, player=seat, cards=cards)
        if what == "table":
            cur.keyword(":")
            melds: list[tuple[Spec, ...]] = []
            if not cur.accept("-"):
                if cur.at_end():
                    raise cur.error("missing melds ([CARD ...] ..., or - for none)")
                while not cur.at_end():
                    melds.append(cur.list_ref())
            cur.end()
            return ExpectTable(line=line, text=text, melds=tuple(melds))
        if what in ("meld", "no"):
            absent = what == "no"
            if absent:
                cur.keyword("meld")
            cards = cur.list_ref()
            if not cur.at_end():
                raise cur.error("classic melds have no status (consolidated, confirmed, trial "
                                "are Machiavelox's)", cur.peek())
            return ExpectMeld(line=line, text=text, cards=cards, absent=absent)
        if what == "melds":
            n = cur.integer("number of melds")
            cur.end()
            return ExpectMeldCount(line=line, text=text, count=n)
        if what in ("stock", "time-left"):
            n = cur.integer("number of cards") if what == "stock" else cur.seconds()
            cur.end()
            return ExpectNumber(line=line, text=text, what=what, player=None, number=n)
        if what in ("count", "score", "total"):
            seat = cur.seat()
            n = cur.integer("number", signed=what != "count")
            cur.end()
            return ExpectNumber(line=line, text=text, what=what, player=seat, number=n)
        if what in ("turn", "opened", "not", "status"):
            if what == "not":
                cur.keyword("opened")
            seat = cur.seat()
            status = cur.keyword(*STATUSES) if what == "status" else ""
            cur.end()
            return ExpectSeat(line=line, text=text, what=what, player=seat, word=status)
        if what in ("winner", "session-winner"):
            players: list[classic.Seat] = []
            if not cur.accept("none"):
                while not cur.at_end() or not players:
                    w = cur.next("player")
                    seat = cur.seat_of(w)
                    if seat in players:
                        raise cur.error(f"{seat} named twice", w)
                    players.append(seat)
            cur.end()
            return ExpectWinners(line=line, text=text, session=what == "session-winner",
                                 players=tuple(players))
        if what == "phase":
            phase = cur.keyword(*PHASES)
            cur.end()
            return ExpectPhase(line=line, text=text, phase=phase)
        if what == "event":
            kind = cur.next("event kind")
            if _EVENT_KIND.fullmatch(kind.text) is None:
                raise cur.error(f"bad event kind {kind.text!r}", kind)
            words = [kind.text]
            if not cur.at_end():
                words.append(str(cur.seat()))
            if not cur.at_end():
                words.append(str(cur.integer("number")))
            cur.end()
            return ExpectEvent(line=line, text=text, words=tuple(words))
        if what in ("pozzetto", "tallone", "calata", "holding", "draw"):
            raise cur.error(f"'expect {what}' is a Machiavelox expectation, not classic", word)
        raise cur.error(f"unknown expectation {what!r}", word)
