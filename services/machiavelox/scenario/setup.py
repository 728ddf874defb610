"""A block of setup statements to a `rules.Deal` (SCENARIO-FORMAT.md "Setup").

Either `seed N` (a shuffled deal) or an explicit deal (`removed`, `tallone`, `hand`, `table`);
`drawn` and `direct-meld` go with both. In an explicit deal a bare card takes the lowest copy
not yet used anywhere in the block, `7H#2` takes exactly that copy; a card used twice is an
error at its column. Everything here is static, so its errors are parse errors.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from machiavelox import rules

from .errors import ScenarioSyntaxError
from .syntax import SetupStmt, Start

EXPLICIT = ("removed", "tallone", "hand", "table")


class Worded(Protocol):
    @property
    def word(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def col(self) -> int: ...


def mix_error(st: Worded, other: Worded) -> ScenarioSyntaxError:
    """A seeded and an explicit deal in one block (both rulesets)."""
    return ScenarioSyntaxError(
        st.line, st.col, f"'{st.word}' cannot be mixed with '{other.word}' (line "
        f"{other.line}): use either seed or an explicit deal")


class DealBuilder:
    def __init__(self) -> None:
        self.stmts: list[SetupStmt] = []
        self.used: set[rules.Card] = set()
        self.seed: SetupStmt | None = None
        self.explicit: SetupStmt | None = None  # the first explicit-deal statement
        self.removed: list[rules.Card] = []
        self.talloni: dict[rules.Seat, list[rules.Card]] = {}
        self.hands: dict[rules.Seat, list[rules.Card]] = {}
        self.table: list[tuple[rules.Card, ...]] = []
        self.names: dict[str, int] = {}
        self.drawn: set[rules.Seat] = set()
        self.direct_meld: set[rules.Seat] = set()
        self.seen: set[tuple[str, rules.Seat | None]] = set()

    @property
    def empty(self) -> bool:
        return not self.stmts

    def add(self, st: SetupStmt) -> None:
        self.stmts.append(st)
        if st.word in EXPLICIT:
            if self.seed is not None:
                raise mix_error(st, self.seed)
            self.explicit = self.explicit or st
        if st.word == "seed":
            if self.explicit is not None:
                raise mix_error(st, self.explicit)
            if self.seed is not None:
                raise ScenarioSyntaxError(st.line, st.col, "seed given twice")
            self.seed = st
            return
        key = (st.word, st.player)
        if st.word != "table" and key in self.seen:
            who = f" {st.player}" if st.player is not None else ""
            raise ScenarioSyntaxError(st.line, st.col, f"{st.word}{who} given twice")
        self.seen.add(key)
        if st.word == "drawn":
            assert st.player is not None
            self.drawn.add(st.player)
        elif st.word == "direct-meld":
            assert st.player is not None
            self.direct_meld.add(st.player)
        else:
            self._cards(st)

    def _cards(self, st: SetupStmt) -> None:
        cards: list[rules.Card] = []
        for spec, col in st.cards:
            free = [c for c in spec.copies if c not in self.used]
            if spec.copy is not None:
                chosen = spec.exact()
                if chosen in self.used:
                    raise ScenarioSyntaxError(st.line, col, f"{chosen} is already dealt")
            elif free:
                chosen = free[0]
            else:
                raise ScenarioSyntaxError(st.line, col, f"both copies of {spec.face} are "
                                          "already dealt")
            self.used.add(chosen)
            cards.append(chosen)
        if st.word == "removed":
            self.removed = cards
        elif st.word == "tallone":
            assert st.player is not None
            self.talloni[st.player] = cards
        elif st.word == "hand":
            assert st.player is not None
            self.hands[st.player] = cards
        else:
            if st.name is not None:
                if st.name in self.names:
                    raise ScenarioSyntaxError(st.line, st.name_col, f"meld name {st.name} "
                                              "given twice")
                self.names[st.name] = len(self.table)
            self.table.append(tuple(cards))

    def deal(self) -> rules.Deal:
        if self.seed is not None:
            assert self.seed.seed is not None
            deal = rules.shuffled_deal(self.seed.seed)
        else:
            seats = rules.SEATS
            deal = rules.Deal(
                removed=tuple(self.removed),
                talloni=(tuple(self.talloni.get(seats[0], ())),
                         tuple(self.talloni.get(seats[1], ())),
                         tuple(self.talloni.get(seats[2], ()))),
                hands=(tuple(self.hands.get(seats[0], ())), tuple(self.hands.get(seats[1], ())),
                       tuple(self.hands.get(seats[2], ()))),
                table=tuple(self.table),
            )
        return dataclasses.replace(deal, drawn=frozenset(self.drawn),
                                   direct_meld=frozenset(self.direct_meld))

    def start(self, line: int, text: str) -> Start:
        return Start(line=line, text=text, deal=self.deal(), names=dict(self.names),
                     setup=tuple(self.stmts))
