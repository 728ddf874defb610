"""Classic bots at three strengths (`bots/classic_levels.py`; docs/bots.md, "Classic levels"),
in-process on the engine (`classic_arena.py`), seeded and bounded.

- Each level, and the three at one table, plays seeded sessions to their end: no refusal (in
  the arena any refusal would be predictable: nothing moves between a view and its action),
  no solution the check refused, cards conserved after every action (the arena asserts it).
- On the actions each bot sends, turn by turn (meld ids as at the turn's start): `easy` sends
  only Meld, Attach, End and Draw (no Move: no table meld taken apart or rearranged, C3; no
  Swap, C2), and never attaches a natural card to a meld one of whose jokers stood for it
  (a joker displaced); `medium` takes cards from, moves table cards into or swaps a joker of
  at most 2 table melds (its `depth`). Not vacuous: the games hold easy attaches, medium
  reworks, and a hard turn that reworks more than 2 melds (the bound is a real one).
- Positions where the levels differ, solved without a time limit's cut: two cards that fit
  only by reworking four melds (hard places both, medium one on two melds, easy none and
  draws); a joker a hand card can take the place of (hard and medium swap, easy draws, C2);
  a hand card a joker stands for (hard attaches it and the joker moves on, easy does not).
- A ladder of 40 seeded two-player hands, hard against easy, seats alternated: hard wins at
  least 30 (the figures of every pair: tests/bench/classic_bots_bench.py --ladder).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from machiavelox import classic
from machiavelox.bots import classic_levels
from machiavelox.bots.classic_arena import ClassicOutcome, play_session
from machiavelox.bots.classic_levels import EASY, HARD, MEDIUM, ClassicLevel
from machiavelox.bots.classic_mind import ClassicBot
from machiavelox.classic import (
    Aces,
    Attach,
    ClassicAction,
    ClassicView,
    Draw,
    End,
    Meld,
    Move,
    Seat,
    Swap,
    Variants,
    view_for,
)
from machiavelox.rules import Card
from tests.bots.test_classic_bots import session_for

GAMES = int(os.environ.get("MACHIAVELOX_CLASSIC_GAMES", "1"))
LADDER = int(os.environ.get("MACHIAVELOX_CLASSIC_LADDER", "40"))
CONFIGS = [(2, 2, 36, Aces.LOW_HIGH), (4, 4, 0, Aces.CIRCULAR), (6, 0, 36, Aces.LOW)]


@dataclass
class Turn:
    key: tuple[int, int | None]  # (hand, the turn's start)
    start: ClassicView  # the bot's view at its first decision of the turn
    actions: list[ClassicAction] = field(default_factory=list)

    def reworked(self) -> set[int]:
        """Table melds (as at the turn's start) a card left or a table card entered, or
        whose joker was swapped; hand cards attached do not count."""
        ids = {m.id for m in self.start.table}
        out: set[int] = set()
        for a in self.actions:
            if isinstance(a, Move):
                out |= {a.src} | ({a.dst} if a.dst is not None else set())
            elif isinstance(a, Swap):
                out.add(a.meld)
        return out & ids

    def displaced(self) -> list[Attach]:
        """Attaches of a natural card a joker of its meld stood for at the turn's start."""
        jokers = {m.id: {f for f in m.stands_for if f} for m in self.start.table}
        return [a for a in self.actions if isinstance(a, Attach) and isinstance(a.card, Card)
                and a.card.face in jokers.get(a.meld, set())]


@dataclass
class RecordingBot(ClassicBot):
    """A `ClassicBot` that keeps every action it sends, turn by turn."""
    turns: list[Turn] = field(default_factory=list)

    def decide(self, view: ClassicView) -> ClassicAction | None:
        action = super().decide(view)
        if action is not None:
            key = (view.hand_number, view.turn_started_ms)
            if not self.turns or self.turns[-1].key != key:
                self.turns.append(Turn(key, view))
            self.turns[-1].actions.append(action)
        return action


def play(variants: Variants, seed: int, levels: list[ClassicLevel]
         ) -> tuple[ClassicOutcome, list[RecordingBot]]:
    bots = [RecordingBot(s, variants, lv) for s, lv in zip(variants.seats, levels, strict=True)]
    outcome = play_session(variants, seed, bots=[*bots])
    assert outcome.result is not None, (seed, outcome.actions)  # the session ended
    assert outcome.refused == [], (seed, outcome.refused)
    assert not [d for d in outcome.decisions if d.kind == "fallback" or d.unplayable], seed
    for bot in bots:
        check_level(bot)
    return outcome, bots


# what each level may do, written here (not read from the levels: a level that drifts fails)
DEPTH: dict[str, int | None] = {"easy": 0, "medium": 2, "hard": None}
SWAPS = {"easy": False, "medium": True, "hard": True}


def check_level(bot: RecordingBot) -> None:
    """The level's bounds, on the actions it sent."""
    depth, swaps = DEPTH[bot.level.name], SWAPS[bot.level.name]
    for turn in bot.turns:
        if depth == 0:
            kinds = {type(a) for a in turn.actions}
            assert kinds <= {Meld, Attach, End, Draw}, (bot.seat, turn.actions)
            assert not turn.displaced(), (bot.seat, turn.actions)
        if not swaps:
            assert not any(isinstance(a, Swap) for a in turn.actions), turn.actions
        if depth is not None:
            assert len(turn.reworked()) <= depth, (bot.seat, turn.actions)


def most_reworked(bots: list[RecordingBot]) -> int:
    return max((len(t.reworked()) for b in bots for t in b.turns), default=0)


@pytest.mark.parametrize("level", [EASY, MEDIUM, HARD], ids=lambda lv: lv.name)
@pytest.mark.parametrize("players,jokers,opening,aces", CONFIGS)
def test_each_level_plays_sessions_to_their_end(level: ClassicLevel, players: int,
                                                jokers: int, opening: int, aces: Aces) -> None:
    variants = Variants(players=players, decks=3 if players > 5 else 2, jokers=jokers,
                        opening=opening, aces=aces)
    for seed in range(GAMES):
        outcome, bots = play(variants, seed, [level] * players)
        assert all(h.ending in ("out", "stock") for h in outcome.hands)
        if level is EASY:
            assert outcome.kinds["Attach"] > 0  # (easy does attach to table melds)
        if level is MEDIUM:
            assert most_reworked(bots) > 0  # (medium does rework: its bound was checked)


def test_three_levels_at_one_table() -> None:
    variants = Variants(players=3, jokers=2)
    for seed in range(GAMES):
        play(variants, seed + 100, [EASY, MEDIUM, HARD])


# ---------------------------------------------------------------------------- positions
def cards(text: str) -> list[classic.ClassicCard]:
    return [classic.parse(t) for t in text.split()]


def turn(level: ClassicLevel, table: list[str], hand: str, jokers: int = 0
         ) -> tuple[str, int, set[int]]:
    """P1's turn at `level` on this opened position, played on the engine (every action
    accepted): (the decision's kind, hand cards placed, melds reworked)."""
    variants = Variants(players=2, jokers=jokers)
    session = session_for([tuple(cards(m)) for m in table], cards(hand), variants, opened=True)
    bot = RecordingBot(Seat.P1, variants, level, time_limit_s=5.0)
    before = len(session.hand.hands[Seat.P1])
    now = 1_000
    for _ in range(50):
        action = bot.decide(view_for(session, Seat.P1))
        if action is None:
            break
        session.apply(action, now)  # raises if the engine refuses it
        bot.accepted(action)
        now += 100
    check_level(bot)
    (decision,) = bot.decisions
    return decision.kind, before - len(session.hand.hands[Seat.P1]), bot.turns[0].reworked()


FOUR = ["7H 8H 9H 10H", "7D 8D 9D 10D", "8C 9C 10C JC#2", "JH JD JC JS"]


def test_two_cards_that_need_four_melds() -> None:
    """7♠ fits only in a set with the 7♥ and 7♦ of two runs, J♠#2 only with the J♣ of a run
    and a J of the set of four: hard reworks all four, medium two, easy none (it draws)."""
    hand = "7S JS#2"
    assert turn(HARD, FOUR, hand) == ("play", 2, {1, 2, 3, 4})
    kind, placed, melds = turn(MEDIUM, FOUR, hand)
    assert (kind, placed, len(melds)) == ("play", 1, 2)
    assert turn(EASY, FOUR, hand) == ("draw", -1, set())


def test_a_joker_swap() -> None:
    """C2: 5♦ takes the joker's place in 5♥ 5♠ 5♣ JK (it fits nowhere else): hard and
    medium swap (the hand keeps its size, the joker in it), easy draws."""
    table, hand = ["5H 5S 5C JK"], "5D KC"
    assert turn(HARD, table, hand, jokers=2) == ("swap", 0, {1})
    assert turn(MEDIUM, table, hand, jokers=2) == ("swap", 0, {1})
    assert turn(EASY, table, hand, jokers=2) == ("draw", -1, set())


def test_easy_attaches_but_displaces_no_joker() -> None:
    """6♥ onto 5♥ JK(6♥) 7♥ is an attach the joker moves on for (hard, medium); easy only
    attaches Q♠ to 9♠ 10♠ J♠."""
    table, hand = ["5H JK 7H", "9S 10S JS"], "6H QS KC"
    assert turn(HARD, table, hand, jokers=2) == ("play", 2, set())
    assert turn(MEDIUM, table, hand, jokers=2) == ("play", 2, set())
    assert turn(EASY, table, hand, jokers=2) == ("play", 1, set())


# ---------------------------------------------------------------------------- the ladder
def test_hard_beats_easy() -> None:
    """Two-player single hands, seeds 0..LADDER-1, hard in P1 on even seeds and in P2 on
    odd ones: hard wins three quarters of them at least (40 of 40 when written)."""
    variants = Variants(players=2)
    wins = 0
    for seed in range(LADDER):
        levels = [HARD, EASY] if seed % 2 == 0 else [EASY, HARD]
        outcome, _ = play(variants, seed, levels)
        winners = outcome.hands[-1].winners
        wins += len(winners) == 1 and levels[variants.seats.index(winners[0])] is HARD
    assert wins >= LADDER * 3 // 4, (wins, LADDER)


def test_levels_by_name() -> None:
    """A practice table's `basic` is easy; a bot nobody gave a level (`basic`) is hard, the
    classic bot as it was; the arena wants one level per seat."""
    assert classic_levels.practice_level("basic") is EASY
    assert classic_levels.practice_level("medium") is MEDIUM
    assert ClassicBot.named(Seat.P1, Variants(), "basic").level is HARD
    assert ClassicBot.named(Seat.P1, Variants(), "easy").level is EASY
    assert ClassicBot(Seat.P1, Variants()).level is HARD
    with pytest.raises(ValueError):
        play_session(Variants(players=2), 0, levels=[EASY])
