"""Property-based tests of the classic engine: a Hypothesis state machine plays random legal
and illegal turns of 2 to 6 players under random variants, and checks after every step:

- C1: every card of the table's deck is in exactly one place (hands, melds, stock, out of
  play) and `where` agrees with the melds (`check_conservation`);
- C5: while the player on turn has changed nothing, every meld on the table is valid;
- a refused action raises a RulesError and changes nothing at all (`fingerprint`: every
  attribute of the session and of its hands);
- C6, C7: a turn given up, or run out, leaves the table exactly as it was at the turn's start
  (meld ids, order and cards), the player's hand as it was plus the penalty cards;
- P5: no view shows an opponent's card or a stock card; drawn cards reach only the drawer;
- replay: the session rebuilt from its first deal and its log is the same, events included.

Deals are full shuffled ones (few melds to make, mostly draws and refusals) and rich explicit
positions (valid melds on the table, some with jokers, short hands) where attaches, moves,
swaps and splits happen often. Steps mix random gestures by any player (the one on turn most
of the time), a greedy legal turn, a rearrangement given up, time passing (to a deadline
exactly, or 0-90 s), the next hand of a session, and ending an open session.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from hypothesis import event, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from machiavelox.classic import (
    Attach,
    ClassicAction,
    ClassicCard,
    Draw,
    End,
    EndSession,
    Joker,
    Meld,
    Move,
    Restore,
    Seat,
    Session,
    SessionKind,
    Swap,
    is_valid,
    shuffled_deal,
)
from machiavelox.rules import Card, RulesError

from .helpers import (
    GreedyPlayer,
    check_conservation,
    check_turn_start_valid,
    check_views,
    fingerprint,
    first_difference,
    random_variants,
    rich_deal,
    table_of,
)

DERANDOMIZE = os.environ.get("CI") == "true" and not os.environ.get("MACHIAVELOX_HYPOTHESIS_RANDOM")
SETTINGS = settings(max_examples=100, stateful_step_count=50, deadline=None,
                    derandomize=DERANDOMIZE, database=None if DERANDOMIZE else settings().database)
pytestmark = pytest.mark.timeout(900)  # shrinking a failure may take minutes

GESTURES = ("meld", "attach", "move", "swap", "end", "draw", "restore", "end-session")


class ClassicMachine(RuleBasedStateMachine):
    session: Session
    rng: random.Random
    now: int
    turn_key: Any
    turn_table: Any
    turn_hand: frozenset[ClassicCard]
    acted_in: tuple[Any, frozenset[ClassicCard]]

    @initialize(seed=st.integers(0, 2**32 - 1), rich=st.booleans())
    def deal(self, seed: int, rich: bool) -> None:
        self.rng = random.Random(seed)
        v = random_variants(self.rng)
        deal = rich_deal(self.rng, v) if rich else shuffled_deal(v, seed, first=Seat.P1)
        note(f"variants: {v.describe()}; rich={rich}")
        self.session = Session(v, deal)
        self.now = 0
        self._record_turn()

    # ------------------------------------------------------------------ helpers
    def _record_turn(self) -> None:
        """Remember the table and the hand of the player on turn when a turn begins."""
        hand = self.session.hand
        key = (len(self.session.hands), sum(1 for e in hand.events if e.kind == "turn"))
        if getattr(self, "turn_key", None) != key and not hand.over:
            self.turn_key = key
            self.turn_table = table_of(hand)
            self.turn_hand = frozenset(hand.hands[hand.turn])

    def _try(self, action: ClassicAction) -> bool:
        self.session.advance(self.now)
        self._record_turn()
        self.acted_in = (self.turn_table, self.turn_hand)  # the turn this action belongs to
        before = fingerprint(self.session)
        try:
            self.session.apply(action, self.now)
        except RulesError as e:
            after = fingerprint(self.session)
            assert after == before, \
                f"refused {e.code} changed the state: {first_difference(before, after)}"
            event(f"refused {e.code}")
            return False
        event(f"accepted {type(action).__name__}")
        self._record_turn()
        return True

    def _check_restored(self, seat: Seat, kind: str) -> None:
        """C6: after `kind` (restored at a restore, timeout at a deadline) of `seat`'s turn."""
        hand = self.session.hand
        evs = hand.events
        i = max(k for k, e in enumerate(evs) if e.kind == "restored" and e.player == seat)
        penalty = evs[i + 1]
        assert penalty.kind == "penalty" and penalty.player == seat
        start_table, start_hand = self.acted_in
        assert table_of(hand) == start_table, "the restored table is not the turn's start"
        assert hand.hands[seat] == set(start_hand) | set(penalty.cards), \
            "the hand after a restore is not the turn's start plus the penalty"
        assert penalty.count == len(penalty.cards) <= self.session.variants.penalty
        event(f"checked {kind}")

    def _in_play(self) -> bool:
        return self.session.phase == "playing"

    def _pick(self, data: st.DataObject, items: list[Any], label: str) -> Any:
        return items[data.draw(st.integers(0, len(items) - 1), label=label)]

    # ------------------------------------------------------------------ rules
    @rule(data=st.data())
    def gesture(self, data: st.DataObject) -> None:
        """Any action, valid-looking or not, mostly by the player on turn."""
        if not self._in_play():
            return
        hand = self.session.hand
        seats = list(self.session.seats)
        p = hand.turn if data.draw(st.integers(0, 9)) < 8 else self._pick(data, seats, "who")
        own = sorted(hand.hands.get(p, set()), key=lambda c: c.index)
        melds = list(hand.melds)
        kind = data.draw(st.sampled_from(GESTURES), label="gesture")
        action: ClassicAction
        if kind == "meld" and own:
            k = data.draw(st.integers(2, min(5, max(2, len(own)))))
            picked = data.draw(st.lists(st.sampled_from(own), min_size=k, max_size=k))
            action = Meld(p, tuple(picked))
        elif kind == "attach" and own and melds:
            action = Attach(p, self._pick(data, own, "card"), self._pick(data, melds, "meld"))
        elif kind == "move" and melds:
            src = self._pick(data, melds, "src")
            card = self._pick(data, list(hand.melds[src]), "card")
            dst = None if data.draw(st.booleans()) else self._pick(data, melds, "dst")
            action = Move(p, card, src, dst)
        elif kind == "swap" and melds:
            naturals = [c for c in own if isinstance(c, Card)]
            mid = self._pick(data, melds, "meld")
            jokers = [c for c in hand.melds[mid] if isinstance(c, Joker)] or [Joker(1)]
            if not naturals:
                return
            action = Swap(p, self._pick(data, naturals, "card"), self._pick(data, jokers, "jk"),
                          mid)
        elif kind == "end":
            action = End(p)
        elif kind == "restore":
            action = Restore(p)
        elif kind == "end-session":
            action = EndSession(p)
        else:
            action = Draw(p)
        on_turn = p == hand.turn
        if self._try(action) and isinstance(action, Restore) and on_turn:
            self._check_restored(p, "restore")

    @rule()
    def greedy_turn(self) -> None:
        """A legal turn when one is seen (melds, attaches, end), else a draw: progress. A
        turn already touched by random gestures is given up first."""
        if not self._in_play():
            return
        p = self.session.hand.turn
        if self.session.hand._snap is not None:
            assert self._try(Restore(p))
            return
        for action in GreedyPlayer().turn(self.session):
            if not self._try(action):
                assert isinstance(action, End), f"greedy {action} refused"
                self._try(Restore(p))
                return

    @rule()
    def swap_a_joker(self) -> None:
        """C2: the player on turn swaps the card a joker stands for, when holding it, then
        ends the turn (the swap played a card)."""
        hand = self.session.hand
        p = hand.turn
        if not self._in_play() or hand._snap is not None:
            return
        for mid, cards in hand.melds.items():
            for joker in (c for c in cards if isinstance(c, Joker)):
                for c in sorted(hand.hands[p], key=lambda c: c.index):
                    swapped = [c if x == joker else x for x in cards]
                    if isinstance(c, Card) and is_valid(swapped, hand.aces):
                        assert self._try(Swap(p, c, joker, mid)), "a valid swap was refused"
                        assert joker in hand.hands[p]
                        if p in hand.opened:
                            assert self._try(End(p)), "the end after a swap was refused"
                        return

    @rule(data=st.data())
    def rearrange_then_give_up(self, data: st.DataObject) -> None:
        """Several moves and attaches by the player on turn, then restore: exactly back."""
        if not self._in_play():
            return
        hand = self.session.hand
        p = hand.turn
        for _ in range(data.draw(st.integers(1, 6), label="gestures")):
            melds = list(hand.melds)
            own = sorted(hand.hands[p], key=lambda c: c.index)
            if melds and (not own or data.draw(st.booleans())):
                src = self._pick(data, melds, "src")
                card = self._pick(data, list(hand.melds[src]), "card")
                dst = None if data.draw(st.booleans()) else self._pick(data, melds, "dst")
                self._try(Move(p, card, src, dst))
            elif own:
                if bool(melds) and data.draw(st.booleans()):
                    self._try(Attach(p, self._pick(data, own, "card"),
                                     self._pick(data, melds, "meld")))
                elif len(own) >= 3:
                    self._try(Meld(p, tuple(own[:3])))
        assert self._try(Restore(p))
        self._check_restored(p, "restore")

    @rule(data=st.data())
    def time_passes(self, data: st.DataObject) -> None:
        hand = self.session.hand
        deadline = self.session.next_deadline()
        if deadline is not None and data.draw(st.booleans(), label="to the deadline"):
            p = hand.turn
            self._record_turn()
            self.acted_in = (self.turn_table, self.turn_hand)
            self.now = max(self.now, deadline)
            self.session.advance(self.now)
            self._check_restored(p, "timeout")
        else:
            self.now += data.draw(st.integers(0, 90_000), label="ms")
            self.session.advance(self.now)
        self._record_turn()

    @rule(seed=st.integers(0, 2**16), rich=st.booleans())
    def next_hand(self, seed: int, rich: bool) -> None:
        s = self.session
        if s.phase != "between":
            return
        playing = s.active
        deal = (rich_deal(random.Random(seed), s.variants, playing) if rich
                else shuffled_deal(s.variants, seed, playing))
        s.deal_next(deal, self.now)
        self._record_turn()

    @rule()
    def end_open_session(self) -> None:
        if self.session.phase != "between" or self.session.variants.session is not \
                SessionKind.OPEN:
            return
        assert self._try(EndSession(self.session.seats[0]))
        assert self.session.phase == "ended"

    # ------------------------------------------------------------------ invariants
    @invariant()
    def cards_conserved(self) -> None:
        check_conservation(self.session)

    @invariant()
    def table_in_order_at_turn_start(self) -> None:
        check_turn_start_valid(self.session)

    @invariant()
    def views_are_strict(self) -> None:
        check_views(self.session)

    def teardown(self) -> None:
        s = getattr(self, "session", None)
        if s is None:
            return
        again = Session.replay(s.variants, s.first_deal, s.log, s.start_ms, until_ms=self.now)
        a, b = fingerprint(again), fingerprint(s)
        assert a == b, f"replay from (deal, log) differs: {first_difference(a, b)}"


TestClassicMachine = ClassicMachine.TestCase
TestClassicMachine.settings = SETTINGS
