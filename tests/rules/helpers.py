"""Small builders for rules tests: explicit positions and card lists."""

from __future__ import annotations

from collections.abc import Sequence

from machiavelox.rules import Card, Deal, Event, Seat, Table, card

P1, P2, P3 = Seat.P1, Seat.P2, Seat.P3


def cards(text: str) -> tuple[Card, ...]:
    """``"4C 5C 6C#2"`` -> cards (bare = copy 1)."""
    return tuple(card(t) for t in text.split())


def position(
    *,
    table: tuple[str, ...] = (),
    hands: tuple[str, str, str] = ("", "", ""),
    talloni: tuple[str, str, str] = ("", "", ""),
    removed: str = "",
    drawn: tuple[Seat, ...] = (P1, P2, P3),
    direct: tuple[Seat, ...] = (),
) -> Table:
    """A table from an explicit position (like a scenario's setup)."""
    deal = Deal(
        removed=cards(removed),
        talloni=(cards(talloni[0]), cards(talloni[1]), cards(talloni[2])),
        hands=(cards(hands[0]), cards(hands[1]), cards(hands[2])),
        table=tuple(cards(m) for m in table),
        drawn=frozenset(drawn),
        direct_meld=frozenset(direct),
    )
    return Table(deal)


def meld_with(t: Table, text: str) -> int:
    """The id of the meld holding this exact card."""
    return t.board.where[card(text)]


def melds(t: Table) -> list[list[str]]:
    """The table as sorted lists of card names, sorted, for comparisons."""
    return sorted(sorted(str(c) for c in m) for m in t.board.melds.values())


def kinds(events: Sequence[Event]) -> list[str]:
    return [" ".join(e.words()) for e in events]
