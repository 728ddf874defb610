"""M3: meld validity, the circular Ace, splits."""

from __future__ import annotations

import pytest

from machiavelox.rules import MeldKind, classify, is_regular
from machiavelox.rules.melds import run_order, split_long_run, split_on_removal

from .sim.positions import cards


@pytest.mark.parametrize("text", ["5H 6H 7H", "7H 6H 5H", "QS KS AS 2S 3S", "AD 2D 3D",
                                  "JC QC KC AC", "2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH"])
def test_runs_are_regular_in_any_order_and_across_the_ace(text: str) -> None:
    """M3.1 order does not matter; M3.2 the Ace bridges K and 2; M3.3 a run may reach 13."""
    assert classify(cards(text)) is MeldKind.RUN


@pytest.mark.parametrize("text", ["5H 6H", "5H 6H 8H", "5H 6H 7S", "5H 6H 6H#2 7H",
                                  "KS AS 3S", "QS KS 2S 3S"])
def test_not_runs(text: str) -> None:
    """M3.1, M3.5: three or more consecutive cards of one suit, no gaps, no repeats."""
    assert not is_regular(cards(text))


@pytest.mark.parametrize("text", ["7H 7S 7D", "7H 7S 7D 7C", "KH KS#2 KC"])
def test_sets(text: str) -> None:
    """M3.4: 3-4 cards of one rank, all suits different."""
    assert classify(cards(text)) is MeldKind.SET


@pytest.mark.parametrize("text", ["7H 7H#2 7S", "7H 7S", "7H 7S 7D 7C 7H#2"])
def test_not_sets(text: str) -> None:
    """M3.4: 7♥ 7♥ 7♠ is not a set; at most four; M3.5 at least three."""
    assert not is_regular(cards(text))


def test_run_order_starts_after_the_gap() -> None:
    assert [c.face for c in run_order(cards("2S AS KS QS 3S"))] == ["QS", "KS", "AS", "2S", "3S"]


def test_long_run_splits_as_equal_as_possible() -> None:
    """M3.3 and decision: 11 cards split 5 + 6, lower half the smaller, both regular."""
    halves = split_long_run(cards("3H 4H 5H 6H 7H 8H 9H 10H JH QH KH"))
    assert halves is not None
    low, high = halves
    assert [c.face for c in low] == ["3H", "4H", "5H", "6H", "7H"]
    assert [c.face for c in high] == ["8H", "9H", "10H", "JH", "QH", "KH"]
    assert is_regular(low) and is_regular(high)
    assert split_long_run(cards("3H 4H 5H 6H 7H 8H 9H 10H JH QH")) is None


def test_interior_removal_leaves_two_sides() -> None:
    """Decision (interior removal): the cards on each side of the gap become two melds."""
    run = cards("3S 4S 5S 6S 7S 8S 9S")
    halves = split_on_removal(run, run[3])
    assert halves is not None
    assert [[c.face for c in h] for h in halves] == [["3S", "4S", "5S"], ["7S", "8S", "9S"]]
    assert split_on_removal(run, run[0]) is None  # an end: the run just gets shorter
    assert split_on_removal(cards("7H 7S 7D 7C"), cards("7S")[0]) is None  # sets never split
