"""Classic Machiavelli bots (issue 16, part 2), in-process on the engine.

- Seeded sessions between `ClassicBot`s (2, 4 and 6 players; with and without jokers; the
  36-point opening; the three ace rules; a multi-hand session) played to their end: every
  action accepted (in-process any refusal would be predictable: nothing else moves between
  a view and its action), every solution the planner found played (no fallback), cards
  conserved after every action (the arena asserts it), every hand won by a player melding out
  (C9): a bot that only draws never does (`test_drawing_bots_never_meld_out`).
- The planner against a brute-force oracle on small positions (every subset of the hand,
  every partition into valid classic melds, jokers included, C2, C3): the same number of hand
  cards placed, the plan played on the engine with every action accepted; before the opening
  (C8) the same against an oracle of new melds from the hand worth the threshold.
  MACHIAVELOX_CLASSIC_CASES / MACHIAVELOX_CLASSIC_GAMES for more.
"""

from __future__ import annotations

import os
import random
from functools import cache
from itertools import combinations

import pytest

from machiavelox import classic
from machiavelox.bots.classic_arena import ClassicOutcome, play_session
from machiavelox.bots.classic_mind import ClassicBot
from machiavelox.bots.classic_plan import DRAW_STEP, ClassicStep
from machiavelox.classic import (
    Aces,
    ClassicCard,
    ClassicDeal,
    Joker,
    Seat,
    Session,
    SessionKind,
    Variants,
    view_for,
)
from machiavelox.rules import Card, Suit

CASES = int(os.environ.get("MACHIAVELOX_CLASSIC_CASES", "30"))
GAMES = int(os.environ.get("MACHIAVELOX_CLASSIC_GAMES", "2"))


def melded_out(outcome: ClassicOutcome) -> bool:
    """Every hand of the session won by a player who played their last card (C9)."""
    return bool(outcome.hands) and all(h.ending == "out" for h in outcome.hands)


def check_session(outcome: ClassicOutcome) -> None:
    assert outcome.result is not None, (outcome.seed, outcome.actions)  # the session ended
    assert outcome.refused == [], (outcome.seed, outcome.refused)
    assert not [d for d in outcome.decisions if d.kind == "fallback"], outcome.seed
    assert melded_out(outcome), (outcome.seed, outcome.hands)


@pytest.mark.parametrize("players,jokers,opening,aces", [
    (2, 0, 0, Aces.LOW), (2, 2, 36, Aces.LOW_HIGH), (4, 0, 36, Aces.LOW),
    (4, 2, 36, Aces.LOW), (4, 4, 0, Aces.CIRCULAR), (6, 0, 36, Aces.LOW),
    (6, 4, 36, Aces.LOW_HIGH)])
def test_bots_play_classic_sessions_to_their_end(players: int, jokers: int, opening: int,
                                                  aces: Aces) -> None:
    variants = Variants(players=players, decks=3 if players > 5 else 2, jokers=jokers,
                        opening=opening, aces=aces)
    for seed in range(GAMES):
        check_session(play_session(variants, seed))


def test_bots_play_a_session_of_several_hands() -> None:
    variants = Variants(players=4, jokers=2, opening=36, session=SessionKind.HANDS,
                        session_n=3, scoring=classic.Scoring.SCALA40)
    outcome = play_session(variants, 11)
    check_session(outcome)
    assert len(outcome.hands) == 3 and outcome.result is not None
    assert outcome.result.reason == "hands"


class DrawingBot(ClassicBot):
    """Without the planner: every turn a draw."""

    def plan(self, view: classic.ClassicView) -> list[ClassicStep]:
        return [DRAW_STEP]


def test_drawing_bots_never_meld_out() -> None:
    """The sessions' check fails without the planner: the stock runs out (C10)."""
    variants = Variants(players=4, jokers=2, opening=36)
    outcome = play_session(variants, 0, bots=[DrawingBot(s, variants) for s in variants.seats])
    assert outcome.result is not None and outcome.refused == []
    assert not melded_out(outcome)
    assert outcome.hands[0].ending == "stock"


# ---------------------------------------------------------------------------- the oracle
@cache
def partitionable(cards: frozenset[ClassicCard], aces: Aces) -> bool:
    """Can these cards be split into valid classic melds (C2, C3)? Exhaustive."""
    if not cards:
        return True
    naturals = [c for c in cards if isinstance(c, Card)]
    if not naturals:
        return False  # no lone joker (C2)
    first = min(naturals, key=lambda c: c.index)
    rest = sorted((c for c in cards - {first} if isinstance(c, Joker)
                   or c.rank == first.rank or c.suit == first.suit), key=lambda c: c.index)
    for size in range(2, len(rest) + 1):
        for others in combinations(rest, size):
            group = (first, *others)
            if classic.is_valid(group, aces) and partitionable(cards - set(group), aces):
                return True
    return False


def oracle(table: list[tuple[ClassicCard, ...]], hand: list[ClassicCard], aces: Aces) -> int:
    """The most hand cards that fit on the table with its cards, rearranged at will."""
    on_table = frozenset(c for m in table for c in m)
    for k in range(len(hand), 0, -1):
        for subset in combinations(hand, k):
            if partitionable(on_table | set(subset), aces):
                return k
    return 0


@cache
def best_opening(cards: frozenset[ClassicCard], aces: Aces) -> int:
    """The most points of disjoint valid melds made of exactly these cards (-1: none)."""
    if not cards:
        return 0
    naturals = [c for c in cards if isinstance(c, Card)]
    if not naturals:
        return -1
    first = min(naturals, key=lambda c: c.index)
    rest = sorted(cards - {first}, key=lambda c: c.index)
    best = -1
    for size in range(2, len(rest) + 1):
        for others in combinations(rest, size):
            group = (first, *others)
            if classic.is_valid(group, aces):
                more = best_opening(cards - set(group), aces)
                if more >= 0:
                    best = max(best, classic.opening_value(group, aces) + more)
    return best


def opening_oracle(hand: list[ClassicCard], points: int, aces: Aces) -> int:
    """The most hand cards of new melds worth `points` (C8)."""
    for k in range(len(hand), 2, -1):
        for subset in combinations(hand, k):
            if best_opening(frozenset(subset), aces) >= points:
                return k
    return 0


def random_meld(rng: random.Random, deck: list[ClassicCard], aces: Aces,
                joker: bool) -> tuple[ClassicCard, ...] | None:
    """A valid meld of `deck`'s cards (removed from it), maybe with a joker."""
    if rng.random() < 0.6:
        suit, length = Suit(rng.randrange(4)), rng.randint(3, 5)
        top = 13 if aces is Aces.LOW else 14
        start = rng.randint(1, (13 if aces is Aces.CIRCULAR else top - length + 1))
        faces = [((start + i - 1) % 13 + 1, suit) for i in range(length)]
    else:
        rank = rng.randint(1, 13)
        faces = [(rank, Suit(s)) for s in rng.sample(range(4), rng.choice((3, 4)))]
    cards: list[ClassicCard] = []
    for rank, suit in faces:
        have = [c for c in deck if isinstance(c, Card) and (c.rank, c.suit) == (rank, suit)]
        if not have:
            return None
        cards.append(have[0])
    jokers = [c for c in deck if isinstance(c, Joker)]
    if joker and jokers:
        cards[rng.randrange(len(cards))] = jokers[0]
    if not classic.is_valid(cards, aces):
        return None
    for c in cards:
        deck.remove(c)
    return tuple(cards)


def random_position(seed: int, melds: int, hand: int, aces: Aces
                    ) -> tuple[list[tuple[ClassicCard, ...]], list[ClassicCard]]:
    rng = random.Random(seed)
    deck = list(classic.deck(2, 2))
    table: list[tuple[ClassicCard, ...]] = []
    for _ in range(50):
        if len(table) == melds:
            break
        m = random_meld(rng, deck, aces, joker=rng.random() < 0.3)
        if m is not None:
            table.append(m)
    near = [c for m in table for c in m if isinstance(c, Card)]
    cards: list[ClassicCard] = []
    while len(cards) < hand:
        options: list[ClassicCard]
        if rng.random() < 0.12 and any(isinstance(c, Joker) for c in deck):
            options = [c for c in deck if isinstance(c, Joker)]
        elif near and rng.random() < 0.8:
            base = rng.choice(near)
            options = [c for c in deck if isinstance(c, Card) and (
                c.rank == base.rank or (c.suit == base.suit and abs(c.rank - base.rank) <= 2))]
        else:
            options = deck
        c = rng.choice(options)
        deck.remove(c)
        cards.append(c)
    return table, cards


def session_for(table: list[tuple[ClassicCard, ...]], hand: list[ClassicCard],
                variants: Variants, opened: bool) -> Session:
    """A two-player session: P1 on turn with `hand` and `table`; P2 and the stock a few cards."""
    used = {c for m in table for c in m} | set(hand)
    rest = [c for c in classic.deck(variants.decks, variants.jokers) if c not in used]
    deal = ClassicDeal(hands=(tuple(hand), tuple(rest[:5])), stock=tuple(rest[5:10]),
                       table=tuple(table), first=Seat.P1,
                       opened=frozenset({Seat.P1}) if opened else frozenset())
    return Session(variants, deal)


def play_turn(session: Session, variants: Variants) -> int:
    """P1's bot plays its turn on the engine (every action must be accepted); hand cards
    placed."""
    bot = ClassicBot(Seat.P1, variants, time_limit_s=5.0)
    before = len(session.hand.hands[Seat.P1])
    now = 1_000
    for _ in range(100):
        view = view_for(session, Seat.P1)
        action = bot.decide(view)
        if action is None:
            break
        session.apply(action, now)  # raises if the engine refuses it
        bot.accepted(action)
        now += 100
    assert session.hand.over or session.hand.turn != Seat.P1, "the turn ended"
    decision = bot.decisions[0]
    assert decision.kind != "fallback"
    after = len(session.hand.hands[Seat.P1])
    if decision.kind == "draw":
        assert after == before + 1
        return 0
    if decision.kind == "swap":
        assert after == before
        return 0
    assert before - after == decision.placed
    return decision.placed


@pytest.mark.parametrize("aces", list(Aces))
@pytest.mark.parametrize("melds,hand", [(1, 3), (2, 3), (2, 4)])
def test_planner_matches_the_oracle_and_the_engine_accepts_its_turns(
        aces: Aces, melds: int, hand: int) -> None:
    variants = Variants(players=2, jokers=2, aces=aces)
    for seed in range(CASES):
        table, cards = random_position(seed * 31 + melds * 7 + hand, melds, hand, aces)
        expected = oracle(table, cards, aces)
        session = session_for(table, cards, variants, opened=True)
        assert play_turn(session, variants) == expected, (seed, table, cards)
        assert all(classic.is_valid(m, aces) for m in session.hand.melds.values())


@pytest.mark.parametrize("points", [15, 36])
def test_the_opening_matches_its_oracle(points: int) -> None:
    """C8: before the opening, only new melds of hand cards, worth the threshold."""
    variants = Variants(players=2, jokers=2, opening=points)
    for seed in range(CASES):
        table, cards = random_position(seed + 5_000, 1, 7, Aces.LOW)
        expected = opening_oracle(cards, points, Aces.LOW)
        session = session_for(table, cards, variants, opened=False)
        on_table = dict(session.hand.melds)
        assert play_turn(session, variants) == expected, (seed, cards)
        for mid, meld in on_table.items():  # the table untouched (C8)
            assert session.hand.melds[mid] == meld
