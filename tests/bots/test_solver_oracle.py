"""The solver against a brute-force oracle on small random positions, and its plans on the
engine: the same number of cards placed; every action of the plan accepted; every meld
regular afterwards (M5.4), every table card still on the table (M3.6)."""

from __future__ import annotations

import os
from functools import cache
from itertools import combinations

import pytest

from machiavelox.bots.plan import build_plan
from machiavelox.bots.position import position_of
from machiavelox.bots.resolve import to_action
from machiavelox.bots.solver import Rules, solve
from machiavelox.rules import Card, Seat, Table, card, is_regular, view_for
from tests.bots.positions import random_position, table_for

CASES = int(os.environ.get("MACHIAVELOX_SOLVER_CASES", "25"))  # more: a bigger run


@cache
def partitionable(cards: frozenset[Card]) -> bool:
    """Can these cards be split into regular melds (M3)? Exhaustive."""
    if not cards:
        return True
    first = min(cards)
    rest = sorted(c for c in cards - {first} if c.rank == first.rank or c.suit == first.suit)
    for size in range(2, len(rest) + 1):
        for others in combinations(rest, size):
            group = (first, *others)
            if is_regular(group) and partitionable(cards - set(group)):
                return True
    return False


def oracle(table: list[tuple[Card, ...]], hand: list[Card], keep_one: bool = False) -> int:
    """The most hand cards that fit on the table with its cards, rearranged at will."""
    on_table = frozenset(c for m in table for c in m)
    top = len(hand) - 1 if keep_one else len(hand)
    for k in range(top, 0, -1):
        for subset in combinations(hand, k):
            if partitionable(on_table | set(subset)):
                return k
    return 0


def play_plan(table: Table, seat: Seat, rules: Rules) -> int:
    """Solve P1's view, play the plan on the engine; returns the cards placed."""
    view = view_for(table, seat)
    position = position_of(view, seat)
    solution = solve(position, rules)
    plan = build_plan(position, solution)
    if solution.placed == 0:
        assert plan is None
        return 0
    assert plan is not None, solution
    assert plan.placed == solution.placed
    now = 1_000
    for step in plan.steps:
        action = to_action(step, view_for(table, seat), seat, plan.universe)
        assert action is not None, (step, plan.steps)
        table.apply(action, now)  # raises if the engine refuses it
        now += 100
    return solution.placed


@pytest.mark.parametrize("melds,hand", [(1, 3), (2, 3), (2, 4), (3, 4)])
def test_solver_matches_the_oracle_and_the_engine_accepts_its_plans(melds: int,
                                                                     hand: int) -> None:
    rearranged = 0
    for seed in range(CASES):
        table_melds, cards = random_position(seed * 7 + melds * 1000 + hand, melds, hand)
        table = table_for(table_melds, cards)
        on_table = {c for m in table_melds for c in m}
        expected = oracle(table_melds, cards)
        placed = play_plan(table, Seat.P1, Rules(time_limit_s=5.0))
        assert placed == expected, (seed, table_melds, cards)
        view = view_for(table, Seat.P1)
        assert all(m.regular for m in view.table), (seed, view.table)
        now_on_table = {tc.card for m in view.table for tc in m.cards}
        assert on_table <= now_on_table
        assert len(now_on_table - on_table) == placed
        if placed and not view.seats[Seat.P1].calata_open:
            left = len(view.hand) + len(view.seats[Seat.P1].pozzetto)
            assert left == len(cards) - placed or view.result is not None
        rearranged += any(frozenset(tc.card for tc in m.cards) not in
                          {frozenset(t) for t in table_melds} for m in view.table
                          if set(tc.card for tc in m.cards) & on_table)
    assert rearranged > 0  # the cases do exercise rearrangement of table melds


def test_without_the_closing_conditions_a_card_stays_in_hand() -> None:
    """M8.2, M8.4: emptying the hand without having drawn is an invalid closing (-15)."""
    checked = 0
    for seed in range(400):  # bounded: until a few hands that fit whole are found
        if checked >= 5:
            break
        table_melds, cards = random_position(5000 + seed, 2, 3)
        if oracle(table_melds, cards) < len(cards):
            continue
        checked += 1
        table = table_for(table_melds, cards, drawn=False)
        placed = play_plan(table, Seat.P1, Rules(drawn=False, time_limit_s=5.0))
        assert placed == oracle(table_melds, cards, keep_one=True)
        assert table.result is None  # no closing, valid or not
    assert checked > 0


def test_a_direct_meld_still_owed_is_laid_to_close() -> None:
    """M8.2(2): a hand that can close only with a direct meld lays one (the solver's d / g)."""
    hand = [card("5H"), card("6H"), card("7H"), card("9C")]
    table_melds: list[tuple[Card, ...]] = [(card("10C"), card("JC"), card("QC"))]
    table = table_for(table_melds, hand, drawn=True, direct=False)
    placed = play_plan(table, Seat.P1, Rules(drawn=True, has_direct=False, time_limit_s=5.0))
    assert placed == 4
    assert table.result is not None and table.result.winner is Seat.P1  # a valid closing


def test_depth_zero_moves_no_table_card() -> None:
    """Level `easy`: direct melds and attaches only; the table melds only grow."""
    for seed in range(CASES):
        table_melds, cards = random_position(9000 + seed, 2, 4)
        table = table_for(table_melds, cards)
        position = position_of(view_for(table, Seat.P1), Seat.P1)
        solution = solve(position, Rules(depth=0, time_limit_s=5.0))
        plan = build_plan(position, solution)
        if plan is not None:
            assert plan.moves == 0
            assert all(s.kind in ("attach", "declare", "direct", "place", "conclude")
                       for s in plan.steps)


def test_a_long_run_grows_in_place() -> None:
    """Runs of 6 to 10 are candidates only round a kept meld (`candidates.py`): a 7-card run
    and a card that extends it give one attach, no table card moved (the tie-break), and with
    depth 0 too (no meld may be taken apart, so only the long run can hold it)."""
    run = tuple(card(f"{r}H") for r in ("2", "3", "4", "5", "6", "7", "8"))
    for depth in (None, 0):
        table = table_for([run], [card("9H"), card("KS")])
        position = position_of(view_for(table, Seat.P1), Seat.P1)
        solution = solve(position, Rules(depth=depth, time_limit_s=5.0))
        assert solution.placed == 1 and solution.broken == (), solution
        plan = build_plan(position, solution)
        assert plan is not None and [s.kind for s in plan.steps] == ["attach"]
