"""Every hand ends, because the stock is finite (C5, C6, C10), and whole sessions replay.

- Players who never manage a turn (they draw, give up, or let the time run out) with a
  penalty of 1 or 3: every turn takes a card from the stock, so the hand ends by C10 within
  (stock + 1) turns.
- Greedy players (a legal turn when they see one, else a draw), any variants, penalty 0
  included: every hand ends within a bound (each turn puts a natural card on the table for
  good or takes one from the stock; jokers played alone are bounded by the jokers), and the
  whole session ends (open sessions are ended after three hands).
- Replay: the session rebuilt from its first deal and its log is identical, events included.

Penalty 0 with players who give up every turn is not covered on purpose: giving up then costs
nothing and no card leaves the stock, so such a hand only ends when someone plays or draws
(the absence rules of issue 16 part 2 decide about players who stop acting;
docs/rules-decisions.md, "Classic Machiavelli").
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from machiavelox.classic import (
    Draw,
    EndSession,
    Restore,
    Session,
    SessionKind,
    Variants,
    shuffled_deal,
)
from machiavelox.rules import RulesError

from .helpers import (
    GreedyPlayer,
    check_conservation,
    fingerprint,
    first_difference,
    random_variants,
    rich_deal,
)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), penalty=st.sampled_from((1, 3)),
       moves=st.lists(st.sampled_from(("draw", "restore", "timeout")), min_size=1))
def test_a_hand_of_players_who_never_play_ends_by_the_stock(
        seed: int, penalty: int, moves: list[str]) -> None:
    """C6, C10: with a penalty, every turn that plays nothing takes at least one card from the
    stock, so after at most (stock + 1) such turns the hand is over. Fails if a draw, a
    restore or a timeout could end a turn without taking a card."""
    rng = random.Random(seed)
    players = rng.randint(2, 6)
    v = Variants(players=players, decks=3 if players >= 5 else 2, jokers=rng.choice((0, 2, 4)),
                 penalty=penalty, turn_time_ms=30_000)
    s = Session(v, shuffled_deal(v, seed))
    stock = len(s.hand.stock)
    now = 0
    for turn in range(stock + 2):
        if s.phase != "playing":
            break
        move = moves[turn % len(moves)]
        p = s.hand.turn
        if move == "timeout":
            deadline = s.next_deadline()
            assert deadline is not None
            now = deadline
            s.advance(now)
        else:
            s.apply(Draw(p) if move == "draw" else Restore(p), now)
        check_conservation(s)
    assert s.phase != "playing", f"the hand did not end within {stock + 1} turns"
    assert s.hand.result is not None and s.hand.result.ending == "stock"


def play_session(seed: int, max_turns: int = 4000) -> tuple[Session, int]:
    """A whole session of greedy players under random variants (time passing now and then,
    turns running out); returns the session and the final time."""
    rng = random.Random(seed)
    v = random_variants(rng)
    deal = rich_deal(rng, v, stock_size=30) if rng.random() < 0.5 else shuffled_deal(v, seed)
    s = Session(v, deal)
    greedy = GreedyPlayer()
    now = 0
    turns_this_hand = 0
    bound = v.deck_size * 2 + 10
    for _ in range(max_turns):
        if s.phase == "ended":
            break
        if s.phase == "between":
            if v.session is SessionKind.OPEN and len(s.hands) >= 3:
                s.apply(EndSession(s.seats[0]), now)
                continue
            s.deal_next(shuffled_deal(v, rng.randrange(10**6), s.active), now)
            turns_this_hand = 0
            continue
        turns_this_hand += 1
        assert turns_this_hand <= bound, f"hand {len(s.hands)} has not ended in {bound} turns"
        if v.timed and rng.random() < 0.1:
            deadline = s.next_deadline()
            assert deadline is not None
            now = deadline
            s.advance(now)
            continue
        now += rng.randrange(0, 5_000)
        p = s.hand.turn
        for action in greedy.turn(s):
            try:
                s.apply(action, now)
            except RulesError:
                s.apply(Restore(p), now)
                break
        check_conservation(s)
    return s, now


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_greedy_sessions_end_and_replay(seed: int) -> None:
    """Every hand of a session ends within a bound and so does the session (C11); the session
    rebuilt from (first deal, log) is identical. Fails if a hand can go on without cards
    leaving the stock or the hands, or if anything in the engine depends on more than its
    deals and inputs."""
    s, now = play_session(seed)
    assert s.phase == "ended", f"the session did not end ({s.variants.describe()})"
    assert s.result is not None and s.result.winners
    again = Session.replay(s.variants, s.first_deal, s.log, s.start_ms, until_ms=now)
    a, b = fingerprint(again), fingerprint(s)
    assert a == b, first_difference(a, b)
