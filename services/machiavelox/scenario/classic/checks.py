"""Classic expectations on the live session, and how classic shows cards and melds.

Card matching is `..cardsets`' (a written list matches cards as a multiset: `7H#2` / `JK#1`
exactly that card, a bare `7H` any copy, `JK` any joker) and the checks both rulesets have are
`..checks`'; here are classic's own expectations (turn, stock, count, opened, score, total,
status, winners) and its way of showing: hands sorted as the engine sorts them, melds in
display order (a run from its low end, each joker where it stands), faces only, with the copy
for the faces the expectation named exactly.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from machiavelox import classic

from ..cardsets import show_in_brackets, show_list
from ..checks import (
    EventKey,
    check_cards,
    check_meld_count,
    check_table,
    find_meld,
    match_event,
)
from ..errors import ScenarioFailure
from ..syntax import (
    Expect,
    ExpectCards,
    ExpectEvent,
    ExpectMeld,
    ExpectMeldCount,
    ExpectPhase,
    ExpectTable,
)
from .syntax import ExpectNumber, ExpectSeat, ExpectWinners

# EventKey: ("hand" | "session", index in that event list)


# ---------------------------------------------------------------------- showing
def show_cards(cards: Iterable[classic.ClassicCard], exact: Collection[str] = ()) -> str:
    return show_list(classic.cards.sorted_cards(cards), exact)


def show_meld(cards: Collection[classic.ClassicCard], aces: classic.Aces,
              exact: Collection[str] = ()) -> str:
    return show_in_brackets((c for c, _ in classic.arrange(cards, aces)), exact)


def show_table(hand: classic.Hand, exact: Collection[str] = ()) -> str:
    return " ".join(show_meld(m, hand.aces, exact) for m in hand.melds.values()) or "-"


# ---------------------------------------------------------------------- expectations
def check(session: classic.Session, exp: Expect, matched: set[EventKey]) -> None:
    """Raise ScenarioFailure(expected, found) unless `exp` holds on the live session."""
    hand = session.hand
    match exp:
        case ExpectCards(player=p, cards=specs):
            check_cards(f"hand {p}", specs, hand.hands.get(p, set()), show_cards)
        case ExpectTable(melds=expected):
            check_table(expected, list(hand.melds.values()),
                        lambda exact: show_table(hand, exact))
        case ExpectMeld(cards=specs, absent=absent):
            find_meld(specs, absent, hand.melds, lambda m, _: show_meld(m, hand.aces),
                      lambda exact: show_table(hand, exact))
        case ExpectMeldCount(count=n):
            check_meld_count(n, hand.melds, lambda: show_table(hand))
        case ExpectNumber():
            _check_number(session, exp)
        case ExpectSeat():
            _check_seat(session, exp)
        case ExpectWinners():
            _check_winners(session, exp)
        case ExpectPhase(phase=phase):
            if session.phase != phase:
                raise ScenarioFailure(f"phase {phase}", f"phase {session.phase}")
        case ExpectEvent(words=words):
            _check_event(session, list(words), matched)
        case _:
            raise AssertionError(f"unknown expectation {exp!r}")


def _hand_result(session: classic.Session, what: str) -> classic.HandResult:
    res = session.hand.result
    if res is None:
        raise ScenarioFailure(what, f"the hand has not ended (phase {session.phase})")
    return res


def _check_number(session: classic.Session, exp: ExpectNumber) -> None:
    hand = session.hand
    p = exp.player
    want = exp.text.removeprefix("expect ").strip()
    found: int
    if exp.what == "stock":
        found = len(hand.stock)
    elif exp.what == "time-left":
        left = hand.time_left_ms()
        if left is None:
            raise ScenarioFailure(want, "no turn clock runs (untimed, or no hand in play)")
        if left != exp.number:
            raise ScenarioFailure(want, f"time-left {left / 1000:g}")
        return
    elif exp.what == "count":
        assert p is not None
        found = len(hand.hands.get(p, ()))
    elif exp.what == "total":
        assert p is not None
        found = session.totals[p]
    else:
        assert p is not None
        res = _hand_result(session, want)
        found = res.scores[p]
        if found != exp.number:
            raise ScenarioFailure(want, f"score {p} {found} ({res.summary()})")
        return
    if found != exp.number:
        where = f" {p}" if p is not None else ""
        raise ScenarioFailure(want, f"{exp.what}{where} {found}")


def _check_seat(session: classic.Session, exp: ExpectSeat) -> None:
    hand = session.hand
    p = exp.player
    if exp.what == "turn":
        if hand.over or session.result is not None:
            raise ScenarioFailure(f"turn {p}", f"no turn: phase {session.phase}")
        if hand.turn != p:
            raise ScenarioFailure(f"turn {p}", f"turn {hand.turn}")
    elif exp.what in ("opened", "not"):
        want = exp.what == "opened"
        if (p in hand.opened) != want:
            found = "opened" if p in hand.opened else "not opened"
            raise ScenarioFailure(f"{'opened' if want else 'not opened'} {p}", f"{found} {p}")
    else:
        status = session.status(p)
        if status != exp.word:
            raise ScenarioFailure(f"status {p} {exp.word}", f"status {p} {status}")


def _who(seats: Iterable[classic.Seat]) -> str:
    return " ".join(str(s) for s in seats) or "none"


def _check_winners(session: classic.Session, exp: ExpectWinners) -> None:
    want = set(exp.players)
    label = "session-winner" if exp.session else "winner"
    if exp.session:
        res = session.result
        if res is None:
            if want:
                raise ScenarioFailure(f"{label} {_who(exp.players)}",
                                      f"the session is not over (phase {session.phase})")
            return
        found, summary = res.winners, res.summary()
    else:
        hand_res = session.hand.result
        if hand_res is None:
            if want:
                raise ScenarioFailure(f"{label} {_who(exp.players)}",
                                      f"the hand has not ended (phase {session.phase})")
            return
        found, summary = hand_res.winners, hand_res.summary()
    if set(found) != want:
        raise ScenarioFailure(f"{label} {_who(exp.players)}", f"{label} {_who(found)} "
                              f"({summary})")


def _check_event(session: classic.Session, words: list[str], matched: set[EventKey]) -> None:
    match_event([*((("hand", i), e) for i, e in enumerate(session.hand.events)),
                 *((("session", i), e) for i, e in enumerate(session.events))], words, matched)
