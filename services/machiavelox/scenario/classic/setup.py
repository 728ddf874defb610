"""A block of classic setup statements to a `Start` (SCENARIO-FORMAT.md, "Classic", Setup).

The first block also sets the table: `players N` and `variant KEY VALUE`, checked together at
its `start` (a `VariantError` becomes a parse error at the line of the variant it is about).
A deal is either `seed N` or explicit (`hand`, `stock`, `table`); `first`, `opened` and
`total` go with both. In an explicit deal a bare card takes the lowest copy still free (`JK`
the lowest joker), `7H#3` exactly that copy; cards named nowhere are out of play.
"""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox import classic

from ..errors import ScenarioSyntaxError
from ..setup import mix_error
from ..syntax import Stmt
from .syntax import Spec, Start

EXPLICIT = ("hand", "stock", "table")


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupStmt(Stmt):
    word: str
    col: int = 1
    player: classic.Seat | None = None
    cards: tuple[tuple[Spec, int], ...] = ()  # with each card's column
    name: str | None = None
    name_col: int = 1
    number: int | None = None  # seed, players, total; a variant's number (turn-time: ms)
    key: str = ""  # variant key
    value: str = ""  # a variant's word (aces, scoring, session)


# which setup line a variant error code is about (the first word of the statement)
_CODE_KEYS = {"variant/players": "players", "variant/decks": "decks",
              "variant/players-decks": "decks", "variant/jokers": "jokers",
              "variant/opening": "opening", "variant/turn-time": "turn-time",
              "variant/penalty": "penalty", "variant/session": "session"}


class Builder:
    def __init__(self, variants: classic.Variants | None) -> None:
        self.variants = variants  # None: this is the first block (it sets them)
        self.stmts: list[SetupStmt] = []
        self.lines: dict[str, SetupStmt] = {}  # variant key (or "players") -> its statement

    @property
    def empty(self) -> bool:
        return not self.stmts

    def add(self, st: SetupStmt) -> None:
        if st.word in ("players", "variant"):
            if self.variants is not None:
                raise ScenarioSyntaxError(st.line, st.col, "the variants are the table's: set "
                                          "them before the first 'start'")
            key = "players" if st.word == "players" else st.key
            if key in self.lines:
                raise ScenarioSyntaxError(st.line, st.col, f"{key} given twice")
            self.lines[key] = st
        seen = [s for s in self.stmts if s.word == st.word and s.player == st.player
                and st.word in ("seed", "hand", "stock", "first", "total")]
        if seen:
            who = f" {st.player}" if st.player is not None else ""
            raise ScenarioSyntaxError(st.line, st.col, f"{st.word}{who} given twice")
        seed = next((s for s in self.stmts if s.word == "seed"), None)
        explicit = next((s for s in self.stmts if s.word in EXPLICIT), None)
        if st.word == "seed" and explicit is not None:
            raise mix_error(st, explicit)
        if st.word in EXPLICIT and seed is not None:
            raise mix_error(st, seed)
        self.stmts.append(st)

    # ------------------------------------------------------------------ start
    def start(self, line: int, text: str) -> Start:
        variants = self.variants if self.variants is not None else self._variants(line)
        seats = variants.seats
        for st in self.stmts:
            if st.player is not None and st.player not in seats:
                raise ScenarioSyntaxError(st.line, st.col, f"no {st.player} at a table of "
                                          f"{variants.players} players")
        used: set[classic.ClassicCard] = set()
        hands: dict[classic.Seat, tuple[classic.ClassicCard, ...]] = {}
        stock: tuple[classic.ClassicCard, ...] = ()
        table: list[tuple[classic.ClassicCard, ...]] = []
        names: dict[str, int] = {}
        for st in self.stmts:
            if st.word not in EXPLICIT:
                continue
            cards = self._cards(st, variants, used)
            if st.word == "hand":
                assert st.player is not None
                hands[st.player] = cards
            elif st.word == "stock":
                stock = cards
            else:
                if st.name is not None:
                    if st.name in names:
                        raise ScenarioSyntaxError(st.line, st.name_col, f"meld name {st.name} "
                                                  "given twice")
                    names[st.name] = len(table)
                table.append(cards)
        seed = next((st.number for st in self.stmts if st.word == "seed"), None)
        first = next((st.player for st in self.stmts if st.word == "first"), None)
        opened = frozenset(st.player for st in self.stmts
                           if st.word == "opened" and st.player is not None)
        totals = tuple((st.player, st.number) for st in self.stmts
                       if st.word == "total" and st.player is not None and st.number is not None)
        return Start(line=line, text=text, variants=variants, seed=seed, hands=hands,
                     stock=stock, table=tuple(table), first=first, opened=opened, totals=totals,
                     names=names, setup=tuple(self.stmts))

    def _variants(self, line: int) -> classic.Variants:
        def number(key: str, default: int) -> int:
            st = self.lines.get(key)
            return st.number if st is not None and st.number is not None else default

        def word(key: str, default: str) -> str:
            st = self.lines.get(key)
            return st.value if st is not None else default

        session = self.lines.get("session")
        try:
            return classic.Variants(
                players=number("players", 4), decks=number("decks", 2),
                jokers=number("jokers", 0), aces=classic.Aces(word("aces", "low")),
                opening=number("opening", 0), turn_time_ms=number("turn-time", 0),
                penalty=number("penalty", 1), scoring=classic.Scoring(word("scoring", "face")),
                session=classic.SessionKind(word("session", "single")),
                session_n=session.number if session is not None else None)
        except classic.VariantError as e:
            st_or_none = self.lines.get(_CODE_KEYS.get(e.code, ""))
            if st_or_none is None and e.code == "variant/players-decks":
                st_or_none = self.lines.get("players")
            where = (st_or_none.line, st_or_none.col) if st_or_none is not None else (line, 1)
            raise ScenarioSyntaxError(*where, f"{e.message} [{e.code}]") from e

    @staticmethod
    def _cards(st: SetupStmt, variants: classic.Variants, used: set[classic.ClassicCard]
               ) -> tuple[classic.ClassicCard, ...]:
        out: list[classic.ClassicCard] = []
        for spec, col in st.cards:
            options = spec.copies(variants.decks, variants.jokers)
            if spec.copy is not None:
                chosen = spec.exact()
                if chosen not in options:
                    what = (f"there are {variants.jokers} jokers" if spec.face is None
                            else f"there are {variants.decks} decks")
                    raise ScenarioSyntaxError(st.line, col, f"no {spec} at this table: {what}")
                if chosen in used:
                    raise ScenarioSyntaxError(st.line, col, f"{spec} is already dealt")
            else:
                free = [c for c in options if c not in used]
                if not free:
                    what = (f"no joker left: this table has {variants.jokers} (variant "
                            "jokers)" if spec.face is None
                            else f"every copy of {spec} is already dealt")
                    raise ScenarioSyntaxError(st.line, col, what)
                chosen = free[0]
            used.add(chosen)
            out.append(chosen)
        return tuple(out)
