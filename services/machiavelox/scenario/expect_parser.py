"""The `expect ...` statements (SCENARIO-FORMAT.md "Expectations").

The expectations both rulesets have are generic in the cursor's seats and cards (`rejected`,
`hand`, `table`, `meld`, `no meld`, `melds`, `phase`, the event kind); classic's parser uses
them too. `parse_expect` is Machiavelox's whole set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from machiavelox.rules import Seat

from .lexer import CardCursor, Word
from .syntax import (
    CardSpec,
    Expect,
    ExpectCalata,
    ExpectCards,
    ExpectDraw,
    ExpectEvent,
    ExpectHolding,
    ExpectMeld,
    ExpectMeldCount,
    ExpectPhase,
    ExpectPoints,
    ExpectRejected,
    ExpectStatus,
    ExpectTable,
    ExpectTallone,
    ExpectWinner,
)

PHASES = ("playing", "frozen", "tiebreak", "pause", "ended")
STATUSES = ("active", "dormant", "frozen", "eliminated", "abandoned", "out")
MELD_STATUSES = ("consolidated", "confirmed", "trial")

# The event kinds the format requires, with the most arguments each may take: 0 none,
# 1 a player, 2 `P by Q`. Other kinds the engine emits (drew, attached, moved...) are accepted
# with up to `P by Q` as well: the format lets the project add to it.
EVENT_KINDS = {
    "confirmed": 1, "failed": 1, "cancelled": 1, "chain": 2, "consolidated": 1,
    "forced-draw": 0, "stop": 1, "eliminated": 1, "abandoned": 1, "closed": 1, "tiebreak": 0,
    "ended": 1,
}
_EVENT_KIND = re.compile(r"[a-z][a-z-]*")
S = TypeVar("S")
C = TypeVar("C")
Cur = CardCursor[Seat, CardSpec]


def parse_expect(cur: Cur) -> Expect:
    """The rest of an `expect` line (the cursor stands after `expect`)."""
    word = cur.next("expectation")
    parser = _PARSERS.get(word.text)
    if parser is None:
        raise cur.error(f"unknown expectation {word.text!r}", word)
    return parser(cur, word.text)


# ---------------------------------------------------------------------- shared by both rulesets
def expect_rejected(cur: CardCursor[S, C], _: str) -> Expect:
    word = cur.peek()
    cur.pos += word is not None
    cur.end()
    return ExpectRejected(line=cur.number, text=cur.line.text,
                          word=word.text if word is not None else None)


def expect_cards(cur: CardCursor[S, C], zone: str) -> Expect:
    player = cur.player()
    cur.keyword(":")
    cards = tuple(spec for spec, _ in cur.cards())
    return ExpectCards(line=cur.number, text=cur.line.text, zone=zone, player=player,
                       cards=cards)


def expect_table(cur: CardCursor[S, C], _: str) -> Expect:
    cur.keyword(":")
    melds: list[tuple[C, ...]] = []
    if not cur.accept("-"):
        if cur.at_end():
            raise cur.error("missing melds ([CARD ...] ..., or - for none)")
        while not cur.at_end():
            melds.append(cur.bracketed())
    cur.end()
    return ExpectTable(line=cur.number, text=cur.line.text, melds=tuple(melds))


def expect_meld(cur: CardCursor[S, C], word: str, statuses: tuple[str, ...] = MELD_STATUSES,
                no_status: str = "") -> Expect:
    """`meld [...] [STATUS]`, `no meld [...]`; with no `statuses`, anything after the meld is
    refused with the `no_status` message."""
    absent = word == "no"
    if absent:
        cur.keyword("meld")
    cards = cur.bracketed()
    status: str | None = None
    if not statuses and not cur.at_end():
        raise cur.error(no_status, cur.peek())
    if not absent and not cur.at_end():
        status = cur.keyword(*statuses)
    cur.end()
    return ExpectMeld(line=cur.number, text=cur.line.text, cards=cards, status=status,
                      absent=absent)


def expect_melds(cur: CardCursor[S, C], _: str) -> Expect:
    count = cur.integer("number of melds")
    cur.end()
    return ExpectMeldCount(line=cur.number, text=cur.line.text, count=count)


def expect_phase(cur: CardCursor[S, C], phases: tuple[str, ...]) -> Expect:
    phase = cur.keyword(*phases)
    cur.end()
    return ExpectPhase(line=cur.number, text=cur.line.text, phase=phase)


def event_kind(cur: CardCursor[S, C]) -> Word:
    kind = cur.next("event kind")
    if _EVENT_KIND.fullmatch(kind.text) is None:
        raise cur.error(f"bad event kind {kind.text!r}", kind)
    return kind


# ---------------------------------------------------------------------- Machiavelox's own
def _tallone(cur: Cur, _: str) -> Expect:
    player = cur.player()
    cur.keyword(":")
    count = cur.integer("number of cards")
    cur.end()
    return ExpectTallone(line=cur.number, text=cur.line.text, player=player, count=count)


def _calata(cur: Cur, _: str) -> Expect:
    player = cur.player()
    state = cur.keyword("open", "none")
    cur.end()
    return ExpectCalata(line=cur.number, text=cur.line.text, player=player, open=state == "open")


def _holding(cur: Cur, _: str) -> Expect:
    player = cur.player()
    card = None if cur.accept("none") else cur.card()
    cur.end()
    return ExpectHolding(line=cur.number, text=cur.line.text, player=player, card=card)


def _phase(cur: Cur, _: str) -> Expect:
    return expect_phase(cur, PHASES)


def _status(cur: Cur, _: str) -> Expect:
    player = cur.player()
    status = cur.keyword(*STATUSES)
    cur.end()
    return ExpectStatus(line=cur.number, text=cur.line.text, player=player, status=status)


def _winner(cur: Cur, _: str) -> Expect:
    player = None if cur.accept("none") else cur.player()
    cur.end()
    return ExpectWinner(line=cur.number, text=cur.line.text, player=player)


def _draw(cur: Cur, _: str) -> Expect:
    players: list[Seat] = []
    while not cur.at_end() or len(players) < 2:
        word = cur.next("player (a draw is between two or three players)")
        player = cur.player_of(word)
        if player in players:
            raise cur.error(f"{player} named twice", word)
        players.append(player)
    return ExpectDraw(line=cur.number, text=cur.line.text, players=tuple(players))


def _points(cur: Cur, word: str) -> Expect:
    player = cur.player()
    points = cur.integer("points", signed=True)
    cur.end()
    return ExpectPoints(line=cur.number, text=cur.line.text, total=word == "total",
                        player=player, points=points)


def _event(cur: Cur, _: str) -> Expect:
    kind = event_kind(cur)
    most = EVENT_KINDS.get(kind.text, 2)
    words = [kind.text]
    if not cur.at_end():
        word = cur.next("player")
        if most < 1:
            raise cur.error(f"event {kind.text} has no arguments", word)
        words.append(str(cur.player_of(word)))
    if not cur.at_end():
        word = cur.next("'by'")
        if most < 2 or word.text != "by":
            raise cur.error(f"unexpected {word.text!r} (only `chain P by Q` has 'by')", word)
        words += ["by", str(cur.player())]
    cur.end()
    return ExpectEvent(line=cur.number, text=cur.line.text, words=tuple(words))


_PARSERS: dict[str, Callable[[Cur, str], Expect]] = {
    "rejected": expect_rejected,
    "hand": expect_cards,
    "pozzetto": expect_cards,
    "tallone": _tallone,
    "table": expect_table,
    "meld": expect_meld,
    "no": expect_meld,
    "melds": expect_melds,
    "calata": _calata,
    "holding": _holding,
    "phase": _phase,
    "status": _status,
    "winner": _winner,
    "draw": _draw,
    "score": _points,
    "total": _points,
    "event": _event,
}
