"""One smazzata at one table: the sequencer's pure core.

`Table.apply(action, now_ms)` applies one action at server time `now_ms` (after firing every
timer due by then) and returns the events it produced; a refused action raises a RulesError and
changes nothing. `Table.advance(now_ms)` only lets time pass. No I/O, no wall clock: the same
deal and the same (time, action) log always give the same table (`Table.replay`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from . import actions as A
from .board import Board, Op, OpKind, Zone
from .cards import Card
from .chain import UndoPlan, plan_undo
from .deal import Deal
from .errors import RulesError, conflict, illegal, invalid
from .events import Event
from .judge import judge
from .melds import is_regular
from .scoring import SmazzataResult, score_closing
from .seats import SEATS, Seat
from .state import (
    CALATA_MS,
    CONSOLIDATION_MS,
    HOLD_MS,
    INACTIVITY_MS,
    Calata,
    CalataStatus,
    Hold,
    Phase,
    PlayerState,
    PlayerStatus,
)
from .timers import Timer, due_timers


@dataclass
class _Conclusion:
    cal: Calata
    reason: str  # auto | explicit | timeout | abandon


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
            )
            for s in SEATS
        ]
        self.parents: dict[int, int] = {}
        self.base = Board(parents=self.parents)
        self._next_meld = 1
        for cards in deal.table:
            self.base.new_meld(self._alloc_meld(), cards)
        self.board = self.base.copy()
        self.ops: dict[int, Op] = {}
        self.live: list[int] = []
        self.calate: dict[int, Calata] = {}
        self._next_seq = 1
        self._next_calata = 1
        self.phase = Phase.PLAYING
        self.inactivity_ms = start_ms + INACTIVITY_MS
        self.result: SmazzataResult | None = None
        self.log: list[tuple[int, A.Action]] = []
        self.events: list[Event] = []

    # ------------------------------------------------------------------ public interface
    def apply(self, action: A.Action, now_ms: int) -> list[Event]:
        """Apply one action at server time `now_ms`; returns timer events then its events."""
        events = self.advance(now_ms)
        handler = self._handlers[type(action)]
        produced = handler(self, action)
        self.log.append((now_ms, action))
        self.events += produced
        return events + produced

    def advance(self, now_ms: int) -> list[Event]:
        """Let time pass to `now_ms`, firing due timers in deadline order."""
        if now_ms < self.now_ms:
            raise invalid("time/backwards", f"time cannot go back from {self.now_ms} ms "
                          f"to {now_ms} ms")
        out: list[Event] = []
        while True:
            timer = due_timers(self, now_ms)
            if timer is None:
                break
            self.now_ms = max(self.now_ms, timer.at_ms)
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

    def live_ops(self) -> list[Op]:
        return [self.ops[s] for s in self.live]

    def player(self, seat: Seat) -> PlayerState:
        return self.players[seat]

    def open_calata(self, seat: Seat) -> Calata | None:
        cid = self.players[seat].calata
        return None if cid is None else self.calate[cid]

    def held_by(self, card: Card) -> Seat | None:
        for ps in self.players:
            if ps.hold is not None and ps.hold.card is card:
                return ps.seat
        return None

    # ------------------------------------------------------------------ guards
    def _actor(self, seat: Seat) -> PlayerState:
        if self.phase is Phase.ENDED:
            raise illegal("smazzata/ended", "the smazzata is over")
        ps = self.players[seat]
        if not ps.in_play:
            raise illegal("player/out", f"{seat} is {ps.status.value} and cannot play")
        if ps.silent_since_ms is not None:
            ps.silent_since_ms = self.now_ms  # any action is a sign of life (M11.1 decision)
        return ps

    def _hand_cards(self, ps: PlayerState, cards: tuple[Card, ...], zone: str) -> None:
        pool = ps.hand if zone == "hand" else ps.pozzetto
        if not cards:
            raise invalid("action/no-cards", "name at least one card")
        if len(set(cards)) != len(cards):
            raise invalid("action/repeated-card", "a card is named twice")
        for c in cards:
            if c not in pool:
                raise illegal(f"card/not-in-{zone}", f"{c.face} is not in {ps.seat}'s {zone}")

    def _meld(self, meld_id: int) -> list[Card]:
        cards = self.board.melds.get(meld_id)
        if cards is None:
            raise invalid("meld/unknown", f"there is no meld {meld_id} on the table")
        return cards

    def _table_card(self, ps: PlayerState, card: Card, meld_id: int) -> None:
        """Checks for touching a table card: declared (M6.2), in that meld, not held by another."""
        if not ps.pozzetto:
            raise illegal("take/not-declared", "declare cards into your pozzetto before touching "
                          "table cards (M5.3.1, M6.2)")
        if card not in self._meld(meld_id):
            raise illegal("card/not-in-meld", f"{card.face} is not in meld {meld_id}")
        holder = self.held_by(card)
        if holder is not None and holder != ps.seat:
            raise conflict("card/held", f"{card.face} is held by {holder}: {holder} was faster "
                           "(M6.4)")

    # ------------------------------------------------------------------ actions
    def _draw(self, a: A.Draw) -> list[Event]:
        ps = self._actor(a.player)
        if ps.pozzetto:
            raise illegal("draw/pozzetto", "no drawing while your pozzetto has cards (M4.4)")
        if not ps.tallone:
            raise illegal("draw/empty-tallone", "your tallone is empty (M4.2)")
        card = ps.tallone.pop()
        ps.hand.add(card)
        ps.drawn = True
        self.inactivity_ms = self.now_ms + INACTIVITY_MS  # M7.2
        return [Event("drew", self.now_ms, a.player, cards=(card,), secret_to=a.player)]

    def _declare(self, a: A.Declare) -> list[Event]:
        ps = self._actor(a.player)
        self._hand_cards(ps, a.cards, "hand")
        out = self._open(ps)
        ps.hand.difference_update(a.cards)
        ps.pozzetto.update(a.cards)
        out.append(Event("declared", self.now_ms, a.player, cards=a.cards))
        return out

    def _undeclare(self, a: A.Undeclare) -> list[Event]:
        ps = self._actor(a.player)
        self._hand_cards(ps, a.cards, "pozzetto")
        ps.pozzetto.difference_update(a.cards)
        ps.hand.update(a.cards)
        out = [Event("undeclared", self.now_ms, a.player, cards=a.cards)]
        if not ps.pozzetto and ps.hold is not None:
            out.append(self._release_hold(ps, "released"))  # the right to move ends (M5.3.1)
        cal = self.open_calata(ps.seat)
        if cal is not None and not ps.pozzetto and any(
                self.ops[s].kind is OpKind.MOVE for s in cal.ops):
            # M5.3.2: taking the declared cards back after moving aborts the gesture; judged
            # now, and without an own card placed the moves are void (M5.3.7).
            return out + self._conclude(cal, "aborted")
        return out + self._maybe_auto_conclude(ps)

    def _direct(self, a: A.Direct) -> list[Event]:
        ps = self._actor(a.player)
        self._hand_cards(ps, a.cards, "pozzetto")
        if not is_regular(a.cards):
            raise illegal("meld/irregular", "these cards do not form a regular meld (M5.1, M3)")
        cal = self._calata_of(ps)
        ps.pozzetto.difference_update(a.cards)
        op = self._op(ps, cal, OpKind.DIRECT, a.cards, Zone.POZZETTO, None, None)
        cal.had_direct = True
        ev = Event("direct", self.now_ms, a.player, cards=a.cards, meld=op.dst,
                   melds=tuple(t for t in op.touched))
        return [ev, *self._after_move(ps)]

    def _attach(self, a: A.Attach) -> list[Event]:
        ps = self._actor(a.player)
        self._hand_cards(ps, (a.card,), "hand")
        if ps.pozzetto:
            raise illegal("attach/pozzetto", "while your pozzetto has cards you play from it, not "
                          "from your hand (M5.3.2)")
        self._meld(a.meld)
        out = self._open(ps)
        cal = self._calata_of(ps)
        ps.hand.discard(a.card)
        op = self._op(ps, cal, OpKind.ATTACH, (a.card,), Zone.HAND, None, a.meld)
        out.append(Event("attached", self.now_ms, a.player, cards=(a.card,), meld=op.dst,
                         melds=tuple(op.touched)))
        return out + self._after_move(ps)

    def _place(self, a: A.Place) -> list[Event]:
        ps = self._actor(a.player)
        self._hand_cards(ps, (a.card,), "pozzetto")
        self._meld(a.meld)
        cal = self._calata_of(ps)
        ps.pozzetto.discard(a.card)
        op = self._op(ps, cal, OpKind.PLACE, (a.card,), Zone.POZZETTO, None, a.meld)
        out = [Event("placed", self.now_ms, a.player, cards=(a.card,), meld=op.dst,
                     melds=tuple(op.touched))]
        if not ps.pozzetto and ps.hold is not None:
            out.append(self._release_hold(ps, "released"))  # M5.3.1
        return out + self._after_move(ps)

    def _take(self, a: A.Take) -> list[Event]:
        ps = self._actor(a.player)
        if ps.hold is not None:
            if ps.hold.card is a.card:
                raise illegal("hold/already", f"you already hold {a.card.face}")
            raise illegal("hold/one-only", f"you already hold {ps.hold.card.face}: one table "
                          "card at a time (M6.1)")
        self._table_card(ps, a.card, a.meld)
        ps.hold = Hold(a.card, self.now_ms + HOLD_MS)
        return [Event("took", self.now_ms, a.player, cards=(a.card,), meld=a.meld)]

    def _put(self, a: A.Put) -> list[Event]:
        ps = self._actor(a.player)
        if ps.hold is None:
            raise illegal("hold/none", "you are not holding a table card")
        card = ps.hold.card
        src = self.board.where[card]
        if a.meld is not None:
            self._meld(a.meld)
            if a.meld == src:
                return [self._release_hold(ps, "released")]
        ps.hold = None
        return self._do_move(ps, card, src, a.meld)

    def _move(self, a: A.Move) -> list[Event]:
        ps = self._actor(a.player)
        if ps.hold is not None and ps.hold.card is not a.card:
            raise illegal("hold/one-only", f"you hold {ps.hold.card.face}: put or release it "
                          "first (M6.1)")
        self._table_card(ps, a.card, a.src)
        if a.dst is not None:
            self._meld(a.dst)
            if a.dst == a.src:
                raise invalid("move/same-meld", "source and destination are the same meld")
        ps.hold = None
        return self._do_move(ps, a.card, a.src, a.dst)

    def _do_move(self, ps: PlayerState, card: Card, src: int, dst: int | None) -> list[Event]:
        cal = self._calata_of(ps)
        op = self._op(ps, cal, OpKind.MOVE, (card,), Zone.TABLE, src, dst)
        ev = Event("moved", self.now_ms, ps.seat, cards=(card,), meld=src, to_meld=op.dst,
                   melds=tuple(op.touched))
        return [ev, *self._after_move(ps)]

    def _release(self, a: A.Release) -> list[Event]:
        ps = self._actor(a.player)
        if ps.hold is None:
            raise illegal("hold/none", "you are not holding a table card")
        return [self._release_hold(ps, "released")]

    def _conclude_action(self, a: A.Conclude) -> list[Event]:
        ps = self._actor(a.player)
        cal = self._require_calata(ps)
        return self._conclude(cal, "explicit")

    def _cancel(self, a: A.Cancel) -> list[Event]:
        ps = self._actor(a.player)
        cal = self._require_calata(ps)
        return self._annulla(cal)

    def _liveness(self, a: A.Liveness) -> list[Event]:
        ps = self.players[a.player]
        if not a.alive:
            raise _part2("absence (M11)")
        ps.silent_since_ms = None
        return []

    def _part2_action(self, a: Any) -> list[Event]:
        raise _part2(type(a).__name__)

    # ------------------------------------------------------------------ calata lifecycle
    def _require_calata(self, ps: PlayerState) -> Calata:
        cal = self.open_calata(ps.seat)
        if cal is None:
            raise illegal("calata/none", f"{ps.seat} has no open calata")
        return cal

    def _calata_of(self, ps: PlayerState) -> Calata:
        cal = self.open_calata(ps.seat)
        assert cal is not None, "a move without a calata"
        return cal

    def _open(self, ps: PlayerState) -> list[Event]:
        """Open a calata at the player's first move if none is open (M5.0.1 decision)."""
        if ps.calata is not None:
            return []
        cal = Calata(self._next_calata, ps.seat, self.now_ms, self.now_ms + CALATA_MS)
        self._next_calata += 1
        self.calate[cal.id] = cal
        ps.calata = cal.id
        return [Event("calata-opened", self.now_ms, ps.seat)]

    def _alloc_meld(self) -> int:
        mid = self._next_meld
        self._next_meld += 1
        return mid

    def _op(self, ps: PlayerState, cal: Calata, kind: OpKind, cards: tuple[Card, ...],
            src_zone: Zone, src_meld: int | None, dst: int | None) -> Op:
        ids = (self._next_meld, self._next_meld + 1, self._next_meld + 2)
        self._next_meld += 3
        target = ids[0] if dst is None else dst
        prev = tuple(self.board.last_op.get(c) for c in cards) if src_zone is Zone.TABLE else ()
        op = Op(self._next_seq, ps.seat, cal.id, kind, cards, src_zone, src_meld, target, ids,
                self.now_ms, prev=prev)
        self._next_seq += 1
        if src_meld is not None:
            self.parents[ids[1]] = src_meld
        self.parents[ids[2]] = target
        op.touched = tuple(self.board.apply(op))
        self.ops[op.seq] = op
        self.live.append(op.seq)
        cal.ops.append(op.seq)
        return op

    def _after_move(self, ps: PlayerState) -> list[Event]:
        cal = self._calata_of(ps)
        self._rejudge(cal)
        return self._maybe_auto_conclude(ps)

    def _rejudge(self, cal: Calata) -> None:
        verdict = judge(self, cal)
        cal.fail_ops = verdict.fail_ops
        cal.needs = verdict.needs
        cal.touched_now = verdict.touched

    def _maybe_auto_conclude(self, ps: PlayerState) -> list[Event]:
        """Decision (M5.4): a calata concludes by itself when its work is in order."""
        cal = self.open_calata(ps.seat)
        if cal is None or ps.pozzetto or ps.hold is not None or cal.fail_ops:
            return []
        return self._conclude(cal, "auto")

    def _conclude(self, cal: Calata, reason: str) -> list[Event]:
        ps = self.players[cal.player]
        out: list[Event] = []
        if ps.hold is not None:
            out.append(self._release_hold(ps, "released"))
        if ps.pozzetto:  # M5.3.6: unplaced pozzetto cards go back to the hand
            out.append(Event("undeclared", self.now_ms, ps.seat, cards=_sorted(ps.pozzetto),
                             detail="not placed"))
            ps.hand.update(ps.pozzetto)
            ps.pozzetto.clear()
        ps.calata = None
        own_before = list(cal.ops)
        if not own_before:
            cal.status = CalataStatus.FELL
            out.append(Event("void", self.now_ms, ps.seat, detail=reason))
            return out + self._after_conclusion(ps, cal, confirmed=False)
        first = set(cal.fail_ops) & set(own_before)
        needs_check = bool(first) or not (cal.is_stop or any(
            self.ops[s].own_cards for s in own_before))
        fallen_own: list[Card] = []
        if needs_check:
            plan = plan_undo(self, first, concluding=cal)
            fallen_own = [c for s in sorted(plan.fallen) if self.ops[s].calata == cal.id
                          for c in self.ops[s].cards]
            out += self._commit(plan, cause=cal)
        if cal.ops:
            cal.status = CalataStatus.CONFIRMED
            cal.concluded_ms = self.now_ms
            cal.consolidate_ms = self.now_ms + CONSOLIDATION_MS
            self._rejudge(cal)
            for seq in cal.ops:
                self.ops[seq].needs = cal.needs.get(seq, frozenset())
            cal.had_direct = any(self.ops[s].kind is OpKind.DIRECT for s in cal.ops)
            if cal.had_direct:
                ps.direct_meld_calate.add(cal.id)  # M8.2(2)
        else:
            cal.status = CalataStatus.FELL
        kind = "failed" if fallen_own or not cal.ops else "confirmed"
        out.append(Event(kind, self.now_ms, ps.seat, cards=tuple(fallen_own), detail=reason))
        return out + self._after_conclusion(ps, cal, confirmed=bool(cal.ops))

    def _after_conclusion(self, ps: PlayerState, cal: Calata, confirmed: bool) -> list[Event]:
        out: list[Event] = []
        if confirmed and any(self.ops[s].own_cards for s in cal.ops):
            self.inactivity_ms = self.now_ms + INACTIVITY_MS  # M7.2
        if confirmed and not ps.hand and not ps.pozzetto:
            return self._closing(ps)  # M8.1: the closing is the confirmation itself
        while ps.pending_draws and ps.tallone:  # M7.4
            ps.pending_draws -= 1
            card = ps.tallone.pop()
            ps.hand.add(card)
            out.append(Event("drew", self.now_ms, ps.seat, cards=(card,), secret_to=ps.seat,
                             detail="forced"))
        ps.pending_draws = 0
        return out

    def _annulla(self, cal: Calata) -> list[Event]:
        """ANNULLA (M5.5.6): all own work goes, regular or not; dependents follow (M5.5)."""
        ps = self.players[cal.player]
        out: list[Event] = []
        if ps.hold is not None:
            out.append(self._release_hold(ps, "released"))
        ps.calata = None
        if cal.ops:
            plan = plan_undo(self, set(cal.ops), concluding=cal)
            out += self._commit(plan, cause=cal)
        ps.hand.update(ps.pozzetto)
        ps.pozzetto.clear()
        cal.status = CalataStatus.FELL
        out.append(Event("cancelled", self.now_ms, ps.seat))
        return out + self._after_conclusion(ps, cal, confirmed=False)

    def _commit(self, plan: UndoPlan, cause: Calata) -> list[Event]:
        """Make an undo plan the table: cards go back, calate lose what fell, events."""
        if not plan.fallen:
            return []
        old_where = self.board.where
        self.board = plan.board
        fallen_ops = sorted((self.ops[s] for s in plan.fallen), key=lambda o: o.seq)
        self.live = [op.seq for op in plan.survivors]
        hit: dict[int, list[Op]] = {}
        for op in reversed(fallen_ops):
            del self.ops[op.seq]
            cal = self.calate[op.calata]
            cal.ops.remove(op.seq)
            hit.setdefault(cal.id, []).append(op)
            if op.src_zone is Zone.TABLE:
                continue
            owner = self.players[op.player]
            back_to_pozzetto = (op.src_zone is Zone.POZZETTO and cal.status is CalataStatus.OPEN
                                and cal is not cause)
            (owner.pozzetto if back_to_pozzetto else owner.hand).update(op.cards)
        out: list[Event] = []
        for ps in self.players:
            if ps.hold is not None and self.board.where.get(ps.hold.card) != old_where.get(
                    ps.hold.card):
                out.append(self._release_hold(ps, "released"))
        for cid, ops in hit.items():
            cal = self.calate[cid]
            if cal is cause:
                continue
            cards = tuple(c for op in reversed(ops) for c in op.cards)
            if cal.status is CalataStatus.CONFIRMED:
                cal.status = CalataStatus.FELL  # M5.5.5, M5.5.7: as if it never happened
                self.players[cal.player].direct_meld_calate.discard(cal.id)
            elif cal.status is CalataStatus.OPEN:
                self._rejudge(cal)
            out.append(Event("chain", self.now_ms, cal.player, by=cause.player, cards=cards,
                             detail=f"undone because the calata of {cause.player} failed"))
        return out

    def _release_hold(self, ps: PlayerState, kind: str) -> Event:
        assert ps.hold is not None
        card = ps.hold.card
        ps.hold = None
        return Event(kind, self.now_ms, ps.seat, cards=(card,), meld=self.board.where.get(card))

    # ------------------------------------------------------------------ endings
    def _closing(self, ps: PlayerState) -> list[Event]:
        """M8: the hand is empty at a confirmed calata."""
        if ps.drawn and ps.has_direct_meld:
            out = [Event("closed", self.now_ms, ps.seat)]
            return out + self._end(winner=ps.seat, closed=True)
        return self._eliminate(ps, "invalid closing (M8.4)")

    def _eliminate(self, ps: PlayerState, why: str) -> list[Event]:
        ps.status = PlayerStatus.ELIMINATED
        out = [Event("eliminated", self.now_ms, ps.seat, detail=why)]
        remaining = [p for p in self.players if p.in_play]
        if len(remaining) == 1:  # M9.8: the survivor wins
            out += self._end(winner=remaining[0].seat, closed=False)
        elif not remaining:
            out += self._end(winner=None, closed=False)
        return out

    def _end(self, winner: Seat | None, closed: bool) -> list[Event]:
        self.phase = Phase.ENDED
        self.result = score_closing(self, winner, closed)
        return [Event("ended", self.now_ms, winner, detail=self.result.summary())]

    # ------------------------------------------------------------------ timers
    def _fire(self, timer: Timer) -> list[Event]:
        if timer.kind == "hold":
            ps = self.players[timer.ref]
            return [self._release_hold(ps, "hold-expired")]  # M6.3
        if timer.kind == "calata":
            return self._conclude(self.calate[timer.ref], "timeout")  # M5.4.6
        if timer.kind == "consolidate":
            return self._consolidate(self.calate[timer.ref])
        if timer.kind == "inactivity":
            return self._inactivity()
        raise AssertionError(timer.kind)

    def _consolidate(self, cal: Calata) -> list[Event]:
        """M5.5.8: a confirmed calata becomes definitive once nothing it needs can still fall."""
        blocking = self._blocking(cal)
        if blocking:
            cal.consolidate_ms = max(blocking)
            return []
        cal.status = CalataStatus.CONSOLIDATED
        cal.consolidate_ms = None
        while self.live and self.calate[self.ops[self.live[0]].calata].status is \
                CalataStatus.CONSOLIDATED:
            op = self.ops.pop(self.live.pop(0))
            self.base.apply(op)
        return [Event("consolidated", self.now_ms, cal.player)]

    def _blocking(self, cal: Calata) -> list[int]:
        """When the calata's dependencies can be reached no more (empty: now)."""
        times: list[int] = []
        for seq in cal.ops:
            op = self.ops[seq]
            for dep in (*op.needs, *(p for p in op.prev if p is not None)):
                dop = self.ops.get(dep)
                if dop is None or dop.calata == cal.id:
                    continue
                other = self.calate[dop.calata]
                if other.status is CalataStatus.OPEN:
                    end = other.deadline_ms if other.deadline_ms is not None else self.now_ms
                    times.append(max(end + CONSOLIDATION_MS, self.now_ms + 1))
                elif other.status is CalataStatus.CONFIRMED:
                    assert other.consolidate_ms is not None
                    times.append(max(other.consolidate_ms, self.now_ms + 1))
        return times

    def _inactivity(self) -> list[Event]:
        """M7.3: nobody drew or put own cards down for 2 minutes."""
        active = [p for p in self.players if p.in_play]
        if not any(p.tallone for p in active):
            raise _part2("the ending by count (M10)")
        out = [Event("forced-draw", self.now_ms)]
        for ps in active:
            if not ps.tallone:
                continue
            if ps.pozzetto:
                ps.pending_draws += 1  # M7.4
                continue
            card = ps.tallone.pop()
            ps.hand.add(card)
            ps.drawn = True
            out.append(Event("drew", self.now_ms, ps.seat, cards=(card,), secret_to=ps.seat,
                             detail="forced"))
        self.inactivity_ms = self.now_ms + INACTIVITY_MS
        return out

    _handlers: ClassVar[dict[type, Callable[[Table, Any], list[Event]]]] = {
        A.Draw: _draw,
        A.Declare: _declare,
        A.Undeclare: _undeclare,
        A.Direct: _direct,
        A.Attach: _attach,
        A.Place: _place,
        A.Take: _take,
        A.Put: _put,
        A.Move: _move,
        A.Release: _release,
        A.Conclude: _conclude_action,
        A.Cancel: _cancel,
        A.Liveness: _liveness,
        A.Stop: _part2_action,
        A.GiveUp: _part2_action,
        A.Abandon: _part2_action,
        A.Ready: _part2_action,
        A.Leave: _part2_action,
    }


def _part2(what: str) -> RulesError:
    from .errors import NotImplementedRuleError
    return NotImplementedRuleError("rules/not-implemented", f"not implemented yet: {what}")


def _sorted(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.suit, c.rank, c.copy)))
