"""M3.3: runs round the circle (issue 14 item 2). "Una scala può crescere oltre le 13 carte,
proprio perché l'Asso la rende continua. Quando supera le 10 carte, il sistema la sdoppia
automaticamente in due scale il più possibile uguali, entrambe regolari."

A run of more than 13 cards holds both copies of some ranks; it is regular when its cards are
consecutive around the circle, and like every run over 10 it never stays on the table whole.
The scenarios in tests/scenarios/melds/full-circle-*.mxs play the same through the table.
"""

from __future__ import annotations

import pytest

from machiavelox.rules import Declare, Direct, MeldKind, Move, Place, classify, is_regular
from machiavelox.rules.board import EXTRA_SPLIT_IDS, Board
from machiavelox.rules.cards import ALL_CARDS, Card, Suit
from machiavelox.rules.melds import run_order, split_long_run

from .sim.invariants import check_all
from .sim.positions import P1, cards, kinds, melds, position


def _suit(suit: Suit, copy: int) -> list[Card]:
    return [c for c in ALL_CARDS if c.suit == suit and c.copy == copy]


def faces(cs: list[Card]) -> list[str]:
    return [str(c) for c in cs]


@pytest.mark.parametrize("text", [
    "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH#2",  # the Ace twice
    "3D 4D 5D 6D 7D 8D 9D 10D JD QD KD AD 2D 3D#2",  # the 3 twice: 3 ... 2 3
    "QS KS AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS#2 KS#2",  # the Q and the K twice
])
def test_a_run_round_the_circle_is_regular(text: str) -> None:
    """M3.1-M3.3: consecutive around the circle, more than 13 cards. (Before: refused, as
    `classify` wanted distinct ranks and at most 13.)"""
    assert classify(cards(text)) is MeldKind.RUN


def test_both_whole_suits_are_one_run() -> None:
    """26 cards, every rank twice: the circle twice round."""
    assert classify([*_suit(Suit.C, 1), *_suit(Suit.C, 2)]) is MeldKind.RUN


@pytest.mark.parametrize("text", [
    "AD 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD 3D#2 7D#2",  # no King: a gap
    "AD 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD KD 3D#2 7D#2",  # twice: 3 and 7, not in a row
    "AD 2D 3D 4D 5D 6D 7D 8D 9D 10D JD QD KD 3D#2 5S",  # another suit
])
def test_not_runs_round_the_circle(text: str) -> None:
    assert not is_regular(cards(text))


def test_order_round_the_circle_starts_at_the_first_rank_held_twice() -> None:
    """Decision (docs/rules-decisions.md, M3.3): the low end is the first of the ranks held
    twice, with its lower copy; the run ends with the other copies."""
    order = run_order(cards("KS#2 QS#2 QS KS AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS"))
    assert faces(order) == ["QS#1", "KS#1", "AS#1", "2S#1", "3S#1", "4S#1", "5S#1", "6S#1",
                            "7S#1", "8S#1", "9S#1", "10S#1", "JS#1", "QS#2", "KS#2"]
    assert faces(run_order([*_suit(Suit.H, 2), *_suit(Suit.H, 1)]))[:2] == ["AH#1", "2H#1"]


@pytest.mark.parametrize("n", [14, 15, 19, 20])
def test_over_10_splits_in_two_regular_runs_as_equal_as_possible(n: int) -> None:
    """M3.3: n // 2 + the rest, each half with each rank once (both regular)."""
    run = [*_suit(Suit.D, 1), *_suit(Suit.D, 2)[:n - 13]]
    halves = split_long_run(run)
    assert halves is not None
    low, high = halves
    assert (len(low), len(high)) == (n // 2, n - n // 2)
    assert is_regular(low) and is_regular(high)
    assert sorted(low + high) == sorted(run)


def test_a_direct_meld_round_the_circle_splits_at_once() -> None:
    """M5.1 + M3.3 through the table: 14 hearts put down at once are two melds of 7, both
    the player's work, confirmed."""
    hearts = "AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH#2"
    t = position(hands=(hearts + " 2C", "", ""))
    t.apply(Declare(P1, cards(hearts)), 1000)
    ev = t.apply(Direct(P1, cards(hearts)), 1000)
    assert "confirmed p1" in kinds(ev)
    assert sorted(len(m) for m in t.board.melds.values()) == [7, 7]
    assert all(is_regular(m) for m in t.board.melds.values())
    check_all(t)


def test_21_or_more_split_again_with_ids_of_their_own() -> None:
    """M3.3 applied to the halves: a direct meld of 22 makes halves of 11, each over 10, so
    each splits again: four runs (5, 6, 5, 6). The further halves get ids derived from the
    op's split id (board.extra_split_id), stable across replays (check_all replays the log)."""
    run = [*_suit(Suit.H, 1), *_suit(Suit.H, 2)[:9]]
    t = position(hands=(" ".join(str(c) for c in run) + " 2C", "", ""))
    t.apply(Declare(P1, tuple(run)), 1000)
    ev = t.apply(Direct(P1, tuple(run)), 1000)
    assert "confirmed p1" in kinds(ev)
    assert sorted(len(m) for m in t.board.melds.values()) == [5, 5, 6, 6]
    assert all(is_regular(m) for m in t.board.melds.values())
    assert sum(1 for mid in t.board.melds if mid >= EXTRA_SPLIT_IDS) == 2
    check_all(t)


def test_taking_a_stray_out_of_an_irregular_meld_splits_what_is_left() -> None:
    """Board.remove (M3.3): an irregular meld never splits, so 14 hearts and a stray 5♠ stay
    one meld; taking the 5♠ out leaves a regular run of 14, split at once with the op's
    removal split id. (Before: left whole, a run of 14 on the table.)"""
    board = Board()
    meld = [*_suit(Suit.H, 1), cards("AH#2")[0], cards("5S")[0]]
    board.new_meld(1, meld)
    touched = board.remove(cards("5S")[0], 2)
    assert touched == [1, 2]
    assert sorted(len(m) for m in board.melds.values()) == [7, 7]


def test_the_table_shows_only_regular_melds_after_such_moves() -> None:
    """The same through the table (a move from the irregular meld): see
    tests/scenarios/melds/full-circle-by-a-move.mxs."""
    table = ("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH#2 5S", "5C 5D 5H#2", "KC KD KS")
    t = position(table=table, hands=("KH#2", "", ""))
    t.apply(Declare(P1, cards("KH#2")), 1000)
    hearts = t.board.where[cards("AH")[0]]
    t.apply(Move(P1, cards("5S")[0], hearts, t.board.where[cards("5C")[0]]), 1000)
    ev = t.apply(Place(P1, cards("KH#2")[0], t.board.where[cards("KC")[0]]), 1000)
    assert "confirmed p1" in kinds(ev)
    want = [["AH#1", "2H#1", "3H#1", "4H#1", "5H#1", "6H#1", "7H#1"],
            ["8H#1", "9H#1", "10H#1", "JH#1", "QH#1", "KH#1", "AH#2"],
            ["5C#1", "5D#1", "5H#2", "5S#1"], ["KC#1", "KD#1", "KH#2", "KS#1"]]
    assert melds(t) == sorted(sorted(m) for m in want)
    check_all(t)
