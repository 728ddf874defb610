"""Classic expectations on the live session, and the card matching the runner resolves with.

A written list matches cards as a multiset: `7H#2` / `JK#1` must be exactly that card, a bare
`7H` matches any copy and `JK` any joker. Melds are shown in display order (a run from its low
end, each joker where it stands), faces only, with the copy for the faces the expectation
named exactly.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from machiavelox import classic

from ..errors import ScenarioFailure
from ..syntax import Expect, ExpectMeldCount
from .syntax import (
    ExpectCards,
    ExpectEvent,
    ExpectMeld,
    ExpectNumber,
    ExpectPhase,
    ExpectSeat,
    ExpectTable,
    ExpectWinners,
    Spec,
)

EventKey = tuple[str, int]  # ("hand" | "session", index in that event list)


# ---------------------------------------------------------------------- matching and showing
def same_cards(specs: Sequence[Spec], cards: Collection[classic.ClassicCard]) -> bool:
    if len(specs) != len(cards):
        return False
    rest = Counter(cards)
    for spec in specs:
        if spec.copy is not None:
            exact = spec.exact()
            if rest[exact] == 0:
                return False
            rest[exact] -= 1
    faces = Counter(c.face for c, n in rest.items() for _ in range(n))
    return faces == Counter(s.text for s in specs if s.copy is None)


def same_melds(expected: Sequence[Sequence[Spec]],
               melds: Sequence[Collection[classic.ClassicCard]]) -> bool:
    if len(expected) != len(melds):
        return False
    used = [False] * len(melds)

    def assign(i: int) -> bool:
        if i == len(expected):
            return True
        for j, meld in enumerate(melds):
            if not used[j] and same_cards(expected[i], meld):
                used[j] = True
                if assign(i + 1):
                    return True
                used[j] = False
        return False

    return assign(0)


def exact_faces(specs: Iterable[Spec]) -> set[str]:
    return {s.text for s in specs if s.copy is not None}


def show_card(c: classic.ClassicCard, exact: Collection[str] = ()) -> str:
    return str(c) if c.face in exact else c.face


def show_cards(cards: Iterable[classic.ClassicCard], exact: Collection[str] = ()) -> str:
    return " ".join(show_card(c, exact) for c in classic.cards.sorted_cards(cards)) or "-"


def show_specs(specs: Iterable[Spec]) -> str:
    return " ".join(str(s) for s in specs) or "-"


def show_meld(cards: Collection[classic.ClassicCard], aces: classic.Aces,
              exact: Collection[str] = ()) -> str:
    return "[" + " ".join(show_card(c, exact) for c, _ in classic.arrange(cards, aces)) + "]"


def show_table(hand: classic.Hand, exact: Collection[str] = ()) -> str:
    return " ".join(show_meld(m, hand.aces, exact) for m in hand.melds.values()) or "-"


# ---------------------------------------------------------------------- expectations
def check(session: classic.Session, exp: Expect, matched: set[EventKey]) -> None:
    """Raise ScenarioFailure(expected, found) unless `exp` holds on the live session."""
    hand = session.hand
    match exp:
        case ExpectCards(player=p, cards=specs):
            cards = hand.hands.get(p, set())
            if not same_cards(specs, cards):
                raise ScenarioFailure(f"hand {p}: {show_specs(specs)}",
                                      f"hand {p}: {show_cards(cards, exact_faces(specs))}")
        case ExpectTable(melds=expected):
            if not same_melds(expected, list(hand.melds.values())):
                exact = exact_faces(s for m in expected for s in m)
                want = " ".join(f"[{show_specs(m)}]" for m in expected) or "-"
                raise ScenarioFailure(f"table: {want}", f"table: {show_table(hand, exact)}")
        case ExpectMeld(cards=specs, absent=absent):
            found = [m for m in hand.melds.values() if same_cards(specs, m)]
            want = f"[{show_specs(specs)}]"
            if absent and found:
                raise ScenarioFailure(f"no meld {want}", show_meld(found[0], hand.aces))
            if not absent and not found:
                raise ScenarioFailure(f"meld {want}",
                                      f"table: {show_table(hand, exact_faces(specs))}")
        case ExpectMeldCount(count=n):
            if len(hand.melds) != n:
                raise ScenarioFailure(f"melds {n}", f"melds {len(hand.melds)}: "
                                      f"{show_table(hand)}")
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
    events: list[tuple[EventKey, classic.ClassicEvent]] = [
        *((("hand", i), e) for i, e in enumerate(session.hand.events)),
        *((("session", i), e) for i, e in enumerate(session.events)),
    ]
    for key, event in events:
        if key not in matched and event.words()[:len(words)] == words:
            matched.add(key)
            return
    unmatched = [" ".join(e.words()) for key, e in events if key not in matched]
    shown = ", ".join(unmatched[-12:]) or "none"
    more = f"{len(unmatched) - 12} more, then " if len(unmatched) > 12 else ""
    raise ScenarioFailure(f"event {' '.join(words)}",
                          f"no such event; events not yet matched: {more}{shown}")
