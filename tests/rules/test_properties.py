"""Property-based tests of the rules engine: a Hypothesis state machine plays random sequences
of actions of the three players and checks the engine's invariants after every step.

Invariants (see `invariants.py`):
- M1.1: each of the 104 physical cards is in exactly one place; `board.where` agrees with
  `board.melds`;
- M3, M5.4, M5.5.4: every meld that no open calata touches is regular;
- a refused action raises a RulesError and changes nothing (errors.py);
- replaying (deal, action log) gives the same table (the engine is replayable);
- the live board is the replay of the live ops on the consolidated base (board.py);
- P5, M4.3, M5.3.8: no view shows an opponent's hand card or a tallone card.

"Touched by an open calata" (M5.4.3, work on trial): a live op of an OPEN calata touched one
of the meld's lineage ids (`board.lineage`), or brought one of its cards.

Two kinds of table: a full shuffled deal (M1.2-M1.3), after a few opening draws, and small
explicit positions with consolidated melds on the table and hand cards that fit them (some
set up for a rearrangement), so that attaches, moves, placements, direct melds, dependencies on
cards on trial and chains happen often. The rules mix single actions (valid-looking and
invalid), plans carried out over several steps (declare-move-place), the random players of the
simulation (`sim.agents.HURRIED`) and time passing (to deadlines exactly, or 0-45 s).

Stop!, GiveUp, Abandon, Ready, Leave and Liveness(False) are not generated (the seeded
smazzate of test_random_smazzate.py play those). The positions and the players are those of
the simulation harness (`sim/`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import pytest
from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from machiavelox.rules import (
    ALL_CARDS,
    SEATS,
    Action,
    Attach,
    Cancel,
    Card,
    Conclude,
    Deal,
    Declare,
    Direct,
    Draw,
    Move,
    Phase,
    Place,
    Put,
    Release,
    RulesError,
    Seat,
    Table,
    Take,
    Undeclare,
    shuffled_deal,
)

from .sim.agents import HURRIED, Agents, every_action
from .sim.engine import PlayerState, calata_is_open, deadlines, live_ops
from .sim.exploration import exploring
from .sim.finders import Step, fits, leans, melds_among, rearrangements
from .sim.invariants import assert_refusal_changed_nothing, check_all, snapshot
from .sim.positions import explicit_deals

T = TypeVar("T")

SETTINGS = exploring(stateful_step_count=60)  # (sim/exploration.py: CI's fixed set)

# Passing takes seconds; a failure is then shrunk by Hypothesis for up to 5 minutes, which must
# not be cut short by the suite's 300 s per-test timeout (the report would lose the example).
pytestmark = pytest.mark.timeout(900)


# --------------------------------------------------------------------------- the machine
def _has_hand(p: PlayerState) -> bool:
    return bool(p.hand)


def _has_pozzetto(p: PlayerState) -> bool:
    return bool(p.pozzetto)


def _holds(p: PlayerState) -> bool:
    return p.hold is not None


def _in_calata(p: PlayerState) -> bool:
    return p.calata is not None


def _can_attach(p: PlayerState) -> bool:
    return bool(p.hand) and not p.pozzetto


class TableMachine(RuleBasedStateMachine):
    """Three players acting at random on one table; invariants after every step."""

    def __init__(self) -> None:
        super().__init__()
        self._table: Table | None = None
        self._players: Agents | None = None
        self.plans: dict[Seat, list[Step]] = {}  # intentions being carried out, per player

    @property
    def table(self) -> Table:
        assert self._table is not None
        return self._table

    # -- set-up ---------------------------------------------------------------------------
    def start(self, deal: Deal) -> None:
        self._table = Table(deal)
        self._players = Agents(random.Random(0), self._table, HURRIED)

    # -- helpers --------------------------------------------------------------------------
    def pick(self, data: st.DataObject, options: Sequence[T]) -> T:
        return data.draw(st.sampled_from(list(options)))

    def act(self, action: Action) -> bool:
        """Apply at the current time; a refusal must be a RulesError that changes nothing.
        Returns whether the action was accepted."""
        t = self.table
        before = snapshot(t)
        note(f"at {t.now_ms} ms: {action}")  # shown with a failing example
        try:
            t.apply(action, t.now_ms)
        except RulesError as err:
            assert_refusal_changed_nothing(before, t, action)
            event(f"refused {type(action).__name__} {err.code}")
            return False
        else:
            event(f"accepted {type(action).__name__}")
            for e in t.events[len(before.events):]:
                if e.kind in ("direct", "chain", "failed", "confirmed", "closed", "eliminated",
                              "consolidated", "hold-expired", "forced-draw"):
                    event(f"event {e.kind}")
            return True

    def advance_to(self, at_ms: int) -> None:
        if at_ms > self.table.now_ms:
            note(f"time passes to {at_ms} ms")
        self.table.advance(at_ms)

    def someone(self, wanted: Callable[[PlayerState], bool]) -> bool:
        """Precondition: some player for whom the action makes sense, in a live game."""
        if self._table is None or self.table.phase is not Phase.PLAYING:
            return False
        return any(wanted(p) for p in self.table.players)

    def seat(self, data: st.DataObject,
             wanted: Callable[[PlayerState], bool] | None = None) -> Seat:
        """A player for whom the action makes sense (`wanted`), if any; else anyone. Players
        carrying out a plan are left alone three times in four, so that plans get done."""
        good = [p.seat for p in self.table.players if wanted is None or wanted(p)]
        free = [s for s in good if not self.plans.get(s)]
        if free and (len(free) == len(good) or not self.rare(data, 4)):
            return self.pick(data, free)
        return self.pick(data, good or SEATS)

    def meld_id(self, data: st.DataObject) -> int:
        """Mostly a meld on the table; sometimes an id that does not exist (any more)."""
        board = self.table.board
        ids = sorted(board.melds)
        if ids and not self.rare(data, 8):
            return self.pick(data, ids)
        gone = sorted(board.born - set(ids))
        return self.pick(data, [0, -1, max(board.born, default=0) + 1, *gone[-3:]])

    def some_cards(self, data: st.DataObject, pool: Sequence[Card], hi: int) -> tuple[Card, ...]:
        """1..hi cards of `pool`; sometimes junk: cards from anywhere, repeats, or none."""
        if not pool or self.rare(data, 10):
            return tuple(data.draw(st.lists(st.sampled_from(ALL_CARDS), max_size=3)))
        return tuple(data.draw(st.lists(st.sampled_from(sorted(pool)), min_size=1,
                                        max_size=min(hi, len(pool)), unique=True)))

    def rare(self, data: st.DataObject, n: int) -> bool:
        """True once in `n`. The common branch is Hypothesis's simplest choice (0), which it
        also falls back to when mutating a run, so simple runs stay meaningful."""
        return data.draw(st.integers(0, n - 1)) == n - 1

    def one_card(self, data: st.DataObject, pool: Sequence[Card]) -> Card:
        if not pool or self.rare(data, 10):
            return self.pick(data, ALL_CARDS)
        return self.pick(data, sorted(pool))

    def fits(self, cards: Collection[Card]) -> list[tuple[Card, int]]:
        return fits(self.table, cards, partial=True)

    def pick_fit(self, data: st.DataObject, spots: list[tuple[Card, int]],
                 p: Seat) -> tuple[Card, int]:
        """A fitting (card, meld), preferring work that leans on another player's cards on
        trial (M5.4.3, M5.4.4) or melds in another player's open calata zone (M6.6), so that
        dependencies and chains (M5.5) happen."""
        t = self.table
        leaning = leans(t, p, {c for c, _ in spots})
        if leaning and not data.draw(st.booleans()):
            return self.pick(data, leaning)
        zone = {mid for s in SEATS if s != p and (cal := t.open_calata(s)) is not None
                for mid in cal.touched_now}
        hot = [f for f in spots if f[1] in zone]
        return self.pick(data, hot if hot and not data.draw(st.booleans()) else spots)

    # -- rules ----------------------------------------------------------------------------
    @rule(data=st.data())
    def draw(self, data: st.DataObject) -> None:
        """M4.2, M4.4."""
        self.act(Draw(self.seat(data)))

    @precondition(lambda self: self.someone(_has_hand))
    @rule(data=st.data())
    def declare(self, data: st.DataObject) -> None:
        """M5.3 DECLARE (M5.3.4: also into an open calata)."""
        p = self.seat(data, _has_hand)
        hand = sorted(self.table.players[p].hand)
        triples = [m for m in melds_among(hand) if len(m) == 3]
        if triples and not data.draw(st.booleans()):
            self.act(Declare(p, self.pick(data, triples)))  # ready for a direct meld
        else:
            self.act(Declare(p, self.some_cards(data, hand, 3)))

    @precondition(lambda self: self.someone(_has_pozzetto))
    @rule(data=st.data())
    def undeclare(self, data: st.DataObject) -> None:
        p = self.seat(data, _has_pozzetto)
        self.act(Undeclare(p, self.some_cards(data, sorted(self.table.players[p].pozzetto), 3)))

    @precondition(lambda self: self.someone(_has_pozzetto))
    @rule(data=st.data())
    def direct(self, data: st.DataObject) -> None:
        """M5.1: pozzetto subsets, regular (when there is one) or not."""
        p = self.seat(data, _has_pozzetto)
        pozzetto = sorted(self.table.players[p].pozzetto)
        regular = melds_among(pozzetto)
        if regular and not self.rare(data, 4):
            self.act(Direct(p, self.pick(data, regular[:30])))
        else:
            self.act(Direct(p, self.some_cards(data, pozzetto, 5)))

    @precondition(lambda self: self.someone(_can_attach))
    @rule(data=st.data())
    def plan_rearrangement(self, data: st.DataObject) -> None:
        """M5.3: start a declare-move-place plan (carried out by `follow_plan`, one action a
        step, while the others play); sometimes the plan stops after the move, leaving work on
        trial for the others to lean on and for the timeout or a conclusion to judge."""
        t = self.table
        rng = data.draw(st.randoms(use_true_random=False))
        options = [(s, plan) for s in SEATS if _can_attach(t.players[s])
                   for plan in rearrangements(t, s, rng, limit=8)]
        if not options:
            return
        p, plan = self.pick(data, options)
        if self.rare(data, 4):
            plan = plan[:2]
        self.plans[p] = plan
        self.follow(p)

    def work_on_trial(self) -> bool:
        t = self.table
        return self.someone(_in_calata) and any(
            calata_is_open(t, op.calata) for op in live_ops(t))

    @precondition(lambda self: self.work_on_trial())
    @rule(data=st.data())
    def lean_on_trial(self, data: st.DataObject) -> None:
        """M5.4.4: attach (or place) a card that fits only thanks to another player's cards on
        trial; if those fall, the chain (M5.5) takes this card too."""
        t = self.table
        options: list[Action] = []
        for s in SEATS:
            ps = t.players[s]
            if _can_attach(ps):
                options += [Attach(s, c, mid) for c, mid in leans(t, s, ps.hand)]
            options += [Place(s, c, mid) for c, mid in leans(t, s, ps.pozzetto)]
        if options:
            self.act(self.pick(data, options))

    @precondition(lambda self: any(self.plans.values()))
    @rule(data=st.data())
    def follow_plan(self, data: st.DataObject) -> None:
        self.follow(self.pick(data, sorted(s for s, plan in self.plans.items() if plan)))

    def follow(self, p: Seat) -> None:
        """The next action of `p`'s plan; a refusal (the table changed) drops the plan."""
        plan = self.plans.get(p, [])
        if not plan:
            return
        action = plan.pop(0)(self.table)  # None: the plan went stale
        if action is None or not self.act(action):
            plan.clear()

    @precondition(lambda self: self.someone(_has_hand))
    @rule(data=st.data())
    def declare_then_direct(self, data: st.DataObject) -> None:
        """M5.1 in one breath: compose a regular meld of hand cards in the pozzetto, put it
        down (other players would otherwise often get in between)."""
        p = self.seat(data, _has_hand)
        ps = self.table.players[p]
        options = melds_among(ps.hand)
        if not options:
            return
        chosen = self.pick(data, options)
        self.act(Declare(p, chosen))
        self.act(Direct(p, chosen))

    @precondition(lambda self: self.someone(_can_attach))
    @rule(data=st.data())
    def attach(self, data: st.DataObject) -> None:
        """M5.2: a hand card onto a meld (a fitting one, a random one, or no meld at all)."""
        p = self.seat(data, _can_attach)
        hand = sorted(self.table.players[p].hand)
        spots = self.fits(hand)
        if spots and not self.rare(data, 3):
            c, mid = self.pick_fit(data, spots, p)
        else:
            c, mid = self.one_card(data, hand), self.meld_id(data)
        self.act(Attach(p, c, mid))

    @precondition(lambda self: self.someone(_has_pozzetto))
    @rule(data=st.data())
    def place(self, data: st.DataObject) -> None:
        """M5.3 PLACE: a pozzetto card into a meld."""
        p = self.seat(data, _has_pozzetto)
        pozzetto = sorted(self.table.players[p].pozzetto)
        spots = self.fits(pozzetto)
        if spots and not self.rare(data, 3):
            c, mid = self.pick_fit(data, spots, p)
        else:
            c, mid = self.one_card(data, pozzetto), self.meld_id(data)
        self.act(Place(p, c, mid))

    def table_card(self, data: st.DataObject) -> tuple[Card, int]:
        """A table card and its meld, or (sometimes) a wrong meld, or any card at all."""
        where = self.table.board.where
        if not where or self.rare(data, 10):
            return self.pick(data, ALL_CARDS), self.meld_id(data)
        c = self.pick(data, sorted(where))
        return c, (self.meld_id(data) if self.rare(data, 6) else where[c])

    @precondition(lambda self: self.someone(_has_pozzetto))
    @rule(data=st.data())
    def take(self, data: st.DataObject) -> None:
        """M6.1-M6.4."""
        c, mid = self.table_card(data)
        self.act(Take(self.seat(data, _has_pozzetto), c, mid))

    @precondition(lambda self: self.someone(_holds))
    @rule(data=st.data())
    def put(self, data: st.DataObject) -> None:
        p = self.seat(data, _holds)
        hold = self.table.players[p].hold
        spots = self.fits([hold.card]) if hold is not None else []
        choice = data.draw(st.integers(0, 3))
        if spots and choice < 2:
            self.act(Put(p, self.pick_fit(data, spots, p)[1]))
        else:
            self.act(Put(p, None if choice == 2 else self.meld_id(data)))

    @precondition(lambda self: self.someone(_has_pozzetto))
    @rule(data=st.data())
    def move(self, data: st.DataObject) -> None:
        """M5.3 MOVE: a table card to a meld where it fits, a new meld, or anywhere."""
        p = self.seat(data, _has_pozzetto)
        board = self.table.board
        spots = [(c, mid) for c, mid in self.fits(board.where) if board.where[c] != mid]
        if spots and not self.rare(data, 3):
            c, dst = self.pick_fit(data, spots, p)
            self.act(Move(p, c, board.where[c], dst))
            return
        c, src = self.table_card(data)
        self.act(Move(p, c, src, None if data.draw(st.booleans()) else self.meld_id(data)))

    @precondition(lambda self: self.someone(_holds))
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        self.act(Release(self.seat(data, _holds)))

    @precondition(lambda self: self.someone(_in_calata))
    @rule(data=st.data())
    def conclude(self, data: st.DataObject) -> None:
        """M5.4."""
        self.act(Conclude(self.seat(data, _in_calata)))

    @precondition(lambda self: self.someone(_in_calata))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        """M5.5.6 ANNULLA."""
        self.act(Cancel(self.seat(data, _in_calata)))

    @rule(data=st.data())
    def random_player(self, data: st.DataObject) -> None:
        """One to eight steps of the random players of the simulations (`sim.agents.HURRIED`:
        sensible moves, plans over several steps, time passing), their dice thrown by
        Hypothesis."""
        players = self._players
        assert players is not None
        players.rng = data.draw(st.randoms(use_true_random=False))
        for _ in range(players.rng.randint(1, 8)):  # a burst, so that long stories happen
            p = players.rng.choice(SEATS)
            action = players.choose(p)
            self.advance_to(players.tick())
            if action is not None and not self.act(action):
                players.plans.pop(p, None)

    @rule(data=st.data())
    def junk(self, data: st.DataObject) -> None:
        """Any action by anyone with arbitrary arguments: mostly refusals (which must change
        nothing), sometimes a lucky valid one."""
        p = self.pick(data, SEATS)
        c = self.pick(data, ALL_CARDS)
        some = tuple(data.draw(st.lists(st.sampled_from(ALL_CARDS), max_size=4)))
        mid = self.meld_id(data)
        maybe: int | None = None if data.draw(st.booleans()) else self.meld_id(data)
        self.act(self.pick(data, every_action(p, c, some, mid, maybe, endgame=False)))

    @rule(data=st.data())
    def clock(self, data: st.DataObject) -> None:
        """Time passes: 0-45 s, or exactly to (or next to) a pending deadline (M5.0.1 calata,
        M5.5.8 consolidation, M6.3 hold, M7.1 inactivity)."""
        t = self.table
        due = deadlines(t)
        mode = data.draw(st.integers(0, 9))
        if mode == 9 and t.now_ms > 0:  # time never goes back: refused, nothing changes
            before = snapshot(t)
            try:
                t.advance(t.now_ms - 1)
            except RulesError:
                assert_refusal_changed_nothing(before, t, "advance backwards")
            else:
                raise AssertionError("advance went back in time")
            return
        if mode >= 5 and due:
            target = self.pick(data, sorted(set(due))) + self.pick(data, (0, 0, -1, 1))
            self.advance_to(max(target, t.now_ms))
        else:
            self.advance_to(t.now_ms + data.draw(st.integers(0, 45_000)))

    # -- invariants -----------------------------------------------------------------------
    @invariant()
    def engine_invariants(self) -> None:
        """M1.1, M3/M5.4, replay, live board = replay of live ops, P5 views."""
        if self._table is None:
            return
        check_all(self.table)


class ShuffledDealMachine(TableMachine):
    """A full deal from a seed (M1.2-M1.4), then a few draws each so there is something to do."""

    @initialize(seed=st.integers(0, 2**32 - 1), draws=st.lists(st.integers(0, 12), min_size=3,
                                                                 max_size=3))
    def setup(self, seed: int, draws: list[int]) -> None:
        self.start(shuffled_deal(seed))
        for p, n in zip(SEATS, draws, strict=True):
            for _ in range(n):
                self.act(Draw(p))


class ExplicitDealMachine(TableMachine):
    """Small explicit positions with consolidated melds and fitting hand cards."""

    @initialize(deal=explicit_deals())
    def setup(self, deal: Deal) -> None:
        self.start(deal)


TestShuffledDeal = ShuffledDealMachine.TestCase
TestShuffledDeal.settings = SETTINGS
TestExplicitDeal = ExplicitDealMachine.TestCase
TestExplicitDeal.settings = SETTINGS
