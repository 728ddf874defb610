"""Expectations evaluated on the live match: `check(match, expectation, matched_events)`.

Each check returns nothing when the expectation holds and raises ScenarioFailure(expected,
found) otherwise. `expect rejected` is not here: it belongs to the action before it (runner).
The checks both rulesets have (hand, table, meld, melds, event) are generic, given the
ruleset's way of showing cards and melds; classic's `check` uses them too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol, TypeVar

from machiavelox import rules

from .cardsets import (
    Physical,
    Written,
    exact_faces,
    same_cards,
    same_melds,
    show_card,
    show_cards,
    show_melds,
)
from .cardsets import show_specs as specs_text
from .errors import ScenarioFailure
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
    ExpectStatus,
    ExpectTable,
    ExpectTallone,
    ExpectWinner,
)

EventKey = tuple[str, int]  # (which event list: "table" | "match", classic "hand" | "session";
#                             index in that list)
K = TypeVar("K", bound=Physical)


class Worded(Protocol):
    def words(self) -> list[str]: ...


# ---------------------------------------------------------------------- shared by both rulesets
def check_cards(label: str, specs: Sequence[Written[K]], cards: Collection[K],
                show: Callable[[Collection[K], set[str]], str]) -> None:
    """`expect hand P: ...` (`label` = "hand P"): exactly these cards."""
    if not same_cards(specs, cards):
        raise ScenarioFailure(f"{label}: {specs_text(specs)}",
                              f"{label}: {show(cards, exact_faces(specs))}")


def check_table(expected: Sequence[Sequence[Written[K]]], melds: Sequence[Collection[K]],
                show: Callable[[set[str]], str]) -> None:
    """`expect table: [...] ...`: exactly these melds; `show(exact)` shows the table."""
    if not same_melds(expected, melds):
        exact = exact_faces(s for m in expected for s in m)
        want = " ".join(f"[{specs_text(m)}]" for m in expected) or "-"
        raise ScenarioFailure(f"table: {want}", f"table: {show(exact)}")


def check_meld_count(n: int, melds: Collection[object], show: Callable[[], str]) -> None:
    if len(melds) != n:
        raise ScenarioFailure(f"melds {n}", f"melds {len(melds)}: {show()}")


def find_meld(specs: Sequence[Written[K]], absent: bool, melds: Mapping[int, Collection[K]],
              show_found: Callable[[Collection[K], set[str]], str],
              show_table: Callable[[set[str]], str]) -> list[int]:
    """`expect meld [...]` / `expect no meld [...]`: the ids of the melds that are exactly
    `specs` (some, or none when `absent`)."""
    want = f"[{specs_text(specs)}]"
    exact = exact_faces(specs)
    ids = [mid for mid, cards in melds.items() if same_cards(specs, cards)]
    if absent and ids:
        raise ScenarioFailure(f"no meld {want}", show_found(melds[ids[0]], exact))
    if not absent and not ids:
        raise ScenarioFailure(f"meld {want}", f"table: {show_table(exact)}")
    return ids


def match_event(events: Sequence[tuple[EventKey, Worded]], words: list[str],
                matched: set[EventKey]) -> None:
    """`expect event KIND ...`: claim the earliest event with these words no earlier
    `expect event` claimed."""
    for key, event in events:
        if key not in matched and event.words()[:len(words)] == words:
            matched.add(key)
            return
    unmatched = [" ".join(e.words()) for key, e in events if key not in matched]
    shown = ", ".join(unmatched[-12:]) or "none"
    more = f"{len(unmatched) - 12} more, then " if len(unmatched) > 12 else ""
    raise ScenarioFailure(f"event {' '.join(words)}",
                          f"no such event; events not yet matched: {more}{shown}")


# ---------------------------------------------------------------------- Machiavelox


def check(game: rules.Match, exp: Expect, matched: set[EventKey]) -> None:
    """Raise ScenarioFailure unless `exp` holds; `matched` are the events already claimed by
    earlier `expect event` statements (updated when this one matches)."""
    table = game.table
    match exp:
        case ExpectCards(zone=zone, player=p, cards=specs):
            ps = table.players[p]
            check_cards(f"{zone} {p}", specs, ps.hand if zone == "hand" else ps.pozzetto,
                        show_cards)
        case ExpectTallone(player=p, count=n):
            found = len(table.players[p].tallone)
            if found != n:
                raise ScenarioFailure(f"tallone {p}: {n}", f"tallone {p}: {found}")
        case ExpectTable(melds=expected):
            melds = list(table.board.melds.values())
            check_table(expected, melds, lambda exact: show_melds(melds, exact))
        case ExpectMeld():
            _check_meld(table, exp)
        case ExpectMeldCount(count=n):
            check_meld_count(n, table.board.melds, lambda: show_melds(table.board.melds.values()))
        case ExpectCalata(player=p, open=want_open):
            is_open = table.open_calata(p) is not None
            if is_open != want_open:
                raise ScenarioFailure(f"calata {p} {_open(want_open)}",
                                      f"calata {p} {_open(is_open)}")
        case ExpectHolding(player=p, card=spec):
            hold = table.players[p].hold
            held = hold.card if hold is not None else None
            ok = held is None if spec is None else held is not None and spec.matches(held)
            if not ok:
                exact = exact_faces([spec]) if spec is not None else set()
                raise ScenarioFailure(
                    f"holding {p} {spec if spec is not None else 'none'}",
                    f"holding {p} {show_card(held, exact) if held is not None else 'none'}")
        case ExpectPhase(phase=phase):
            if game.phase != phase:
                raise ScenarioFailure(f"phase {phase}", f"phase {game.phase}")
        case ExpectStatus(player=p, status=status):
            word = status_word(game, p)
            if word != status:
                raise ScenarioFailure(f"status {p} {status}", f"status {p} {word}")
        case ExpectWinner() | ExpectDraw() | ExpectPoints():
            _check_result(game, exp)
        case ExpectEvent(words=words):
            _check_event(game, list(words), matched)
        case _:
            raise AssertionError(f"unknown expectation {exp!r}")


def _open(is_open: bool) -> str:
    return "open" if is_open else "none"


def _check_meld(table: rules.Table, exp: ExpectMeld[CardSpec]) -> None:
    melds = table.board.melds
    ids = find_meld(exp.cards, exp.absent, melds, lambda m, exact: show_melds([m], exact),
                    lambda exact: show_melds(melds.values(), exact))
    if exp.absent or exp.status is None:
        return
    want = f"[{specs_text(exp.cards)}]"
    statuses = [rules.meld_status(table, mid).name.lower() for mid in ids]
    if exp.status not in statuses:
        raise ScenarioFailure(f"meld {want} {exp.status}", f"{want} {' / '.join(statuses)}")


def status_word(game: rules.Match, seat: rules.Seat) -> str:
    """active | dormant | frozen | eliminated | abandoned | out (SCENARIO-FORMAT.md)."""
    if seat in game.out:
        return "out"
    return game.table.status_word(seat)


def _check_result(game: rules.Match, exp: ExpectWinner | ExpectDraw | ExpectPoints) -> None:
    """Scores are the last smazzata's; totals, and the winner or draw once a long match has
    ended, are the match's (M13)."""
    table = game.table
    if isinstance(exp, ExpectPoints) and exp.total:
        if game.totals[exp.player] != exp.points:
            raise ScenarioFailure(f"total {exp.player} {exp.points}",
                                  f"total {exp.player} {game.totals[exp.player]}")
        return
    outcome: rules.MatchResult | rules.SmazzataResult | None = table.result
    if game.kind is rules.MatchKind.LONG and game.result is not None \
            and not isinstance(exp, ExpectPoints):
        outcome = game.result
    if outcome is None:
        raise ScenarioFailure(exp.text.removeprefix("expect ").strip(),
                              f"the smazzata has not ended (phase {game.phase})")
    summary = outcome.summary() if isinstance(outcome, rules.SmazzataResult) else str(outcome)
    if isinstance(exp, ExpectWinner):
        if outcome.winner != exp.player:
            raise ScenarioFailure(f"winner {_who(exp.player)}",
                                  f"winner {_who(outcome.winner)} ({summary})")
    elif isinstance(exp, ExpectDraw):
        if set(outcome.draw) != set(exp.players):
            found = " ".join(str(p) for p in outcome.draw) or "none"
            raise ScenarioFailure(f"draw {' '.join(str(p) for p in exp.players)}",
                                  f"draw {found} ({summary})")
    else:
        assert table.result is not None
        found_pts = table.result.scores[exp.player]
        if found_pts != exp.points:
            raise ScenarioFailure(f"score {exp.player} {exp.points}",
                                  f"score {exp.player} {found_pts} ({summary})")


def _who(seat: rules.Seat | None) -> str:
    return "none" if seat is None else str(seat)


def _check_event(game: rules.Match, words: list[str], matched: set[EventKey]) -> None:
    match_event([*((("table", i), e) for i, e in enumerate(game.table.events)),
                 *((("match", i), e) for i, e in enumerate(game.events))], words, matched)
