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
from machiavelox.bots.mind import RETRIES, SolverBot
from machiavelox.rules import Attach, Draw, Seat, card, view_for
from tests.bots.positions import table_for

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


def test_a_plan_cut_short_again_and_again_is_given_up() -> None:
    """A plan cut short from a position that comes back unchanged (here: refused on a table
    nothing changed; in play: the chain undid our calata and the opponent's that interrupted
    it, M5.5) is replayed at most RETRIES times; then the bot does something else (draws,
    M4.2). Before, the cycle never ended: 3 of 100 medium smazzate were cut by the arena."""
    table = table_for([(card("3H#1"), card("4H#1"), card("5H#1"))],
                      [card("6H#1"), card("KS#1"), card("9C#1")])
    bot = SolverBot(Seat.P1, LEVELS["easy"], seed=1, drew=True, direct_given=True)
    view = view_for(table, Seat.P1)
    attach = bot.decide(view)
    assert attach is not None and isinstance(attach.action, Attach)
    for _ in range(RETRIES - 1):
        bot.refused(attach.action)
        again = bot.decide(view)
        assert again is not None and again.action == attach.action
    bot.refused(attach.action)
    then = bot.decide(view)
    assert then is not None and isinstance(then.action, Draw)
