"""Bots of each level play seeded smazzate to their end, in-process on the engine, with no
refused action that their view could have predicted (races lost to faster players are fine:
M6.4, and the bots plan again). A few smazzate by default; MACHIAVELOX_BOT_GAMES=200 for the
issue's count."""

from __future__ import annotations

import os

import pytest

from machiavelox import rules
from machiavelox.bots.arena import BaselineBot, LeveledBot, Outcome, Player, play
from machiavelox.bots.levels import LEVELS

GAMES = int(os.environ.get("MACHIAVELOX_BOT_GAMES", "1"))


def check(outcome: Outcome, leveled: list[int]) -> None:
    assert outcome.ending != "cut", outcome  # ended by the rules, not by the arena's caps
    for seat in leveled:
        assert outcome.predictable[seat] == [], (outcome.seed, seat, outcome.predictable)
        assert outcome.actions[seat] > 0


@pytest.mark.parametrize("level", ["easy", "medium", "hard"])
def test_a_level_against_todays_bots_plays_to_the_end(level: str) -> None:
    for seed in range(100, 100 + GAMES):
        players: list[Player] = [LeveledBot(rules.Seat.P1, LEVELS[level], seed=seed),
                                 BaselineBot(rules.Seat.P2), BaselineBot(rules.Seat.P3)]
        check(play(seed, players), [0])


def test_three_levels_at_one_table_race_and_recompute() -> None:
    """Solver bots at one table rearrange the same melds: their races are real."""
    for seed in range(200, 200 + GAMES):
        players: list[Player] = [LeveledBot(rules.Seat(i), LEVELS[name], seed=seed + i)
                                 for i, name in enumerate(("hard", "medium", "easy"))]
        outcome = play(seed, players)
        check(outcome, [0, 1, 2])


def test_two_hard_bots_race_for_the_same_melds() -> None:
    """Two hard bots (holds of cards, Stop! to close, M9) and one of today's bots."""
    for seed in range(300, 300 + GAMES):
        players: list[Player] = [LeveledBot(rules.Seat.P1, LEVELS["hard"], seed=seed),
                                 LeveledBot(rules.Seat.P2, LEVELS["hard"], seed=seed + 1),
                                 BaselineBot(rules.Seat.P3)]
        check(play(seed, players), [0, 1])
