"""Ratings with openskill's Plackett-Luce model: ranks from smazzata scores, ties allowed."""

from __future__ import annotations

import pytest

from machiavelox.platform.ratings import Ratings, ranks_from_scores


def test_ranks_follow_scores_higher_is_better_and_ties_share_a_rank() -> None:
    assert ranks_from_scores([42, -15, 0]) == [1.0, 3.0, 2.0]
    assert ranks_from_scores([0, 55, 0]) == [2.0, 1.0, 2.0]
    assert ranks_from_scores([-5, -5, -15]) == [1.0, 1.0, 3.0]


def test_newcomers_share_the_default_rating() -> None:
    ratings = Ratings()
    assert ratings.ordinal("ann") == ratings.ordinal("bob") == pytest.approx(0.0)
    assert len(ratings) == 0


def test_the_winners_ordinal_rises_and_the_last_ones_falls() -> None:
    ratings = Ratings()
    ratings.record(["ann", "bob", "cy"], [60, 0, -15])
    assert ratings.ordinal("ann") > ratings.ordinal("bob") > ratings.ordinal("cy")
    assert ratings.ordinal("ann") > 0.0 > ratings.ordinal("cy")
    assert ratings.ordinal("dan") == pytest.approx(0.0)


def test_tied_players_move_together() -> None:
    ratings = Ratings()
    ratings.record(["ann", "bob", "cy"], [-5, -5, -15])  # a patta between ann and bob
    assert ratings.ordinal("ann") == pytest.approx(ratings.ordinal("bob"))
    assert ratings.ordinal("ann") > ratings.ordinal("cy")
    before = ratings.ordinal("cy")
    ratings.record(["ann", "bob", "cy"], [0, 0, 0])  # everyone gone: a full tie
    assert ratings.ordinal("ann") == pytest.approx(ratings.ordinal("bob"))
    assert ratings.ordinal("cy") > before  # tying with stronger players is good news


def test_repeated_wins_keep_raising_the_ordinal() -> None:
    ratings = Ratings()
    seen = []
    for _ in range(5):
        ratings.record(["ann", "bob", "cy"], [50, 0, 0])
        seen.append(ratings.ordinal("ann"))
    assert seen == sorted(seen) and seen[-1] > seen[0]


def test_a_malformed_result_is_refused() -> None:
    ratings = Ratings()
    with pytest.raises(ValueError):
        ratings.record(["ann", "bob", "cy"], [1, 2])
    with pytest.raises(ValueError):
        ratings.record(["ann", "ann", "cy"], [1, 2, 3])
    assert len(ratings) == 0
