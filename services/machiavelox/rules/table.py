"""One smazzata at one table: the sequencer's pure core.

`Table.apply(action, now_ms)` applies one action at server time `now_ms` (after firing every
timer due by then) and returns the events it produced; a refused action raises a RulesError and
changes nothing. `Table.advance(now_ms)` only lets time pass. No I/O, no wall clock: the same
deal and the same (time, action) log always give the same table (`Table.replay`).

The rules live in sibling modules: `play` (card play), `lifecycle` (calate, undo), `freeze`
(Stop!), `endings` (closing, inactivity, silence, tiebreak, absence), `pingpong`. This module
holds the state, the guards every action passes, and the dispatch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from . import actions as A
from . import endings, freeze, lifecycle, play
from .board import Board, Op
from .cards import Card
from .deal import Deal
from .errors import illegal, invalid
from .events import Event
from .melds import is_regular
from .pingpong import Episode
from .scoring import SmazzataResult
from .seats import SEATS, Seat
from .state import (
    CONSOLIDATION_MS,
    DORMANT_MS,
    INACTIVITY_MS,
    Calata,
    CalataStatus,
    Phase,
    PlayerState,
)
from .timers import Timer, due_timer

Handler = Callable[["Table", Any], list[Event]]


class Table:
    def __init__(self, deal: Deal, start_ms: int = 0) -> None:
        self.deal = deal
        self.start_ms = start_ms
        self.now_ms = start_ms
        self.removed: tuple[Card, ...] = deal.removed
        self.players: list[PlayerState] = [
            PlayerState(
                seat=s,
                tallone=list(reversed(deal.talloni[s])),
                hand=set(deal.hands[s]),
                drawn=s in deal.drawn,
                direct_meld_given=s in deal.direct_meld,
                last_sign_ms=start_ms,  # M11.5: absence counts from the start
            )
            for s in SEATS
        ]
        self.parents: dict[int, int] = {}
        self.creators: dict[int, int] = {}
        self.base = Board(parents=self.parents, creators=self.creators)
        self._next_meld = 1
        for cards in deal.table:
            self.base.new_meld(self._next_meld, cards)
            self._next_meld += 1
        self.board = self.base.copy()
        self.ops: dict[int, Op] = {}  # live ops by seq
        self.live: list[int] = []  # live op seqs, in arrival order
        self.calate: dict[int, Calata] = {}
        self.unsettled: set[int] = set()  # calate open or confirmed: the ones with timers
        self._next_seq = 1
        self._next_calata = 1
        self.phase = Phase.PLAYING
        self.inactivity_ms = start_ms + INACTIVITY_MS
        self.inactivity_left_ms: int | None = None  # the countdown stopped by a freeze
        # Stop! (M9)
        self.stopper: Seat | None = None
        self.stop_deadline_ms: int | None = None
        self.frozen: tuple[Seat, ...] = ()
        # tiebreak (M10.2)
        self.tiebreak_players: tuple[Seat, ...] = ()
        self.tiebreak_ms: int | None = None
        self.common: set[Card] = set()
        self.common_owner: dict[Card, Seat] = {}
        # ping-pong (M6.5)
        self.episodes: dict[Card, Episode] = {}
        self.reserved: dict[Card, Seat] = {}
        self.result: SmazzataResult | None = None
        self.log: list[tuple[int, A.Action]] = []
        self.events: list[Event] = []
        # The state changes only by an accepted action (the log grows) or a timer firing (this
        # grows): the pair keys the timers' cache (timers.all_timers).
        self.fired = 0
        self.timer_cache: tuple[tuple[int, int], list[Timer], int | None] | None = None

    # ------------------------------------------------------------------ public interface
    def apply(self, action: A.Action, now_ms: int) -> list[Event]:
        """Apply one action at server time `now_ms`; returns timer events then its events."""
        events = self.advance(now_ms)
        handler = self._handlers.get(type(action))
        if handler is None:
            raise invalid("action/unknown", f"unknown action {type(action).__name__}")
        produced = handler(self, action)
        if not isinstance(action, A.Liveness):
            endings.sign_of_life(self, self.players[action.player])  # M11.1 decision
        self.log.append((now_ms, action))
        self.events += produced
        return events + produced

    def advance(self, now_ms: int) -> list[Event]:
        """Let time pass to `now_ms`, firing due timers in deadline order."""
        if now_ms < self.now_ms:
            raise invalid("time/backwards", f"time cannot go back from {self.now_ms} ms to "
                          f"{now_ms} ms")
        out: list[Event] = []
        while (timer := due_timer(self, now_ms)) is not None:
            self.now_ms = max(self.now_ms, timer.at_ms)
            self.fired += 1
            out += self._fire(timer)
        self.now_ms = now_ms
        self.events += out
        return out

    @classmethod
    def replay(cls, deal: Deal, log: Iterable[tuple[int, A.Action]], now_ms: int | None = None,
               start_ms: int = 0) -> Table:
        """Rebuild a table from its deal and action log (and advance it to `now_ms`)."""
        table = cls(deal, start_ms)
        for at, action in log:
            table.apply(action, at)
        if now_ms is not None:
            table.advance(now_ms)
        return table

    # ------------------------------------------------------------------ queries
    def live_ops(self) -> list[Op]:
        return [self.ops[s] for s in self.live]

    def open_calata(self, seat: Seat) -> Calata | None:
        cid = self.players[seat].calata
        return None if cid is None else self.calate[cid]

    def open_calate(self) -> Iterator[Calata]:
        for ps in self.players:
            if ps.calata is not None:
                yield self.calate[ps.calata]

    def held_by(self, card: Card) -> Seat | None:
        for ps in self.players:
            if ps.hold is not None and ps.hold.card is card:
                return ps.seat
        return None

    def pozzetto_of(self, ps: PlayerState) -> set[Card]:
        """The cards a player places from: the pozzetto, or the common one in a tiebreak."""
        if self.phase is Phase.TIEBREAK and ps.seat in self.tiebreak_players:
            return self.common
        return ps.pozzetto

    def table_in_order(self) -> bool:
        """Every meld on the table regular (the stopper's duty, M9.4)."""
        return all(is_regular(cards) for cards in self.board.melds.values())

    def is_dormant(self, seat: Seat) -> bool:
        """M11.1 decision: shown dormant 10 s after the last sign of life."""
        ps = self.players[seat]
        return ps.in_play and ps.silent and self.now_ms - ps.last_sign_ms >= DORMANT_MS

    def status_word(self, seat: Seat) -> str:
        """active | dormant | frozen | eliminated | abandoned | out (scenario format)."""
        ps = self.players[seat]
        if not ps.in_play:
            return ps.status.value
        if self.phase is Phase.FROZEN and seat in self.frozen:
            return "frozen"
        return "dormant" if self.is_dormant(seat) else "active"

    # ------------------------------------------------------------------ ids
    def reserve_meld_ids(self) -> tuple[int, int, int]:
        ids = (self._next_meld, self._next_meld + 1, self._next_meld + 2)
        self._next_meld += 3
        return ids

    def next_op_seq(self) -> int:
        self._next_seq += 1
        return self._next_seq - 1

    def next_calata_id(self) -> int:
        self._next_calata += 1
        return self._next_calata - 1

    # ------------------------------------------------------------------ guards
    def actor(self, seat: Seat) -> PlayerState:
        """The player acting now, if they may act at all."""
        if self.phase in (Phase.ENDED, Phase.PAUSE):
            raise illegal("smazzata/ended", "the smazzata is over")
        ps = self.players[seat]
        if not ps.in_play:
            raise illegal("player/out", f"{seat} is {ps.status.value} and cannot play")
        if self.phase is Phase.FROZEN and seat != self.stopper:
            raise illegal("phase/frozen", f"the game is frozen by {self.stopper}'s Stop! (M9.2)")
        if self.phase is Phase.TIEBREAK and seat not in self.tiebreak_players:
            raise illegal("tiebreak/not-tied", f"{seat} is not in the tiebreak (M10.2)")
        return ps

    # ------------------------------------------------------------------ timers
    def _fire(self, timer: Timer) -> list[Event]:
        if timer.kind == "hold":  # M6.3
            return [lifecycle.release_hold(self, self.players[timer.ref], "hold-expired")]
        if timer.kind == "calata":  # M5.4.6
            return lifecycle.conclude(self, self.calate[timer.ref], "timeout")
        if timer.kind == "stop":  # M9.6
            return freeze.timeout(self)
        if timer.kind == "consolidate":  # M5.5.8
            return self._consolidate(self.calate[timer.ref])
        if timer.kind == "absence":  # M11.2
            return endings.abandonment_due(self)
        if timer.kind == "inactivity":  # M7.3
            return endings.inactivity(self)
        if timer.kind == "tiebreak":  # M10.3
            return endings.tiebreak_timeout(self)
        raise AssertionError(timer.kind)

    def _consolidate(self, cal: Calata) -> list[Event]:
        """M5.5.8: a confirmed calata becomes definitive once nothing it needs can still fall.

        The calate it depends on (through needed ops and moved cards, transitively) become
        definitive with it, all at once, when the last of them has been concluded for 40 s;
        while one of them is still open, it waits."""
        group = self._dependency_group(cal)
        waiting = [c for c in group if c.status is CalataStatus.OPEN]
        if waiting:
            ends = [c.deadline_ms if c.deadline_ms is not None else self.now_ms for c in waiting]
            cal.consolidate_ms = max(max(ends) + CONSOLIDATION_MS, self.now_ms + 1)
            return []
        due = max((c.concluded_ms or 0) + CONSOLIDATION_MS for c in group)
        if due > self.now_ms:
            cal.consolidate_ms = due
            return []
        out: list[Event] = []
        for c in sorted(group, key=lambda c: (c.concluded_ms or 0, c.id)):
            c.status = CalataStatus.CONSOLIDATED
            self.unsettled.discard(c.id)
            c.consolidate_ms = None
            out.append(Event("consolidated", self.now_ms, c.player))
        while self.live and self.calate[self.ops[self.live[0]].calata].status is \
                CalataStatus.CONSOLIDATED:
            op = self.ops.pop(self.live.pop(0))
            self.base.apply(op)
        return out

    def _dependency_group(self, cal: Calata) -> list[Calata]:
        """`cal` and the not yet definitive calate it depends on, transitively."""
        seen = {cal.id}
        stack = [cal]
        while stack:
            current = stack.pop()
            for seq in current.ops:
                op = self.ops[seq]
                needs = current.needs.get(seq, op.needs) if current.status is \
                    CalataStatus.OPEN else op.needs
                for dep in (*needs, *(p for p in op.prev if p is not None)):
                    dop = self.ops.get(dep)
                    if dop is None or dop.calata in seen:
                        continue
                    other = self.calate[dop.calata]
                    if other.status in (CalataStatus.OPEN, CalataStatus.CONFIRMED):
                        seen.add(other.id)
                        stack.append(other)
        return [self.calate[i] for i in sorted(seen)]

    _handlers: ClassVar[dict[type, Handler]] = {
        A.Draw: play.draw,
        A.Declare: play.declare,
        A.Undeclare: play.undeclare,
        A.Direct: play.direct,
        A.Attach: play.attach,
        A.Place: play.place,
        A.Take: play.take,
        A.Put: play.put,
        A.Move: play.move,
        A.Release: play.release,
        A.Conclude: play.conclude,
        A.Cancel: play.cancel,
        A.Stop: freeze.stop,
        A.GiveUp: freeze.giveup,
        A.Abandon: endings.abandon_action,
        A.Liveness: endings.liveness,
    }


def not_a_table_action(t: Table, a: Any) -> list[Event]:
    raise illegal("match/not-paused", f"{type(a).__name__} belongs to the pause between the "
                  "smazzate of a long match (M13.4, M13.5)")


Table._handlers[A.Ready] = not_a_table_action
Table._handlers[A.Leave] = not_a_table_action
