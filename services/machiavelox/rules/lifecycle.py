"""The calata lifecycle (M5.0-M5.5): open, record ops, judge, conclude, give up, undo,
consolidate.

Free functions over a `TableState`, the mechanism of the calata only: concluding returns a
`Conclusion` (what happened) and the end-of-game policy acts on it (`endings.conclude`, through
which the action handlers, the freeze and the timers conclude, so there is one conclusion
procedure); nothing here decides how a smazzata ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import pingpong
from .board import Op, OpKind, Zone
from .cards import Card
from .chain import UndoPlan, plan_undo
from .deps import dependency_group
from .events import Event, EventKind
from .judge import judge
from .melds import is_regular
from .state import CALATA_MS, CONSOLIDATION_MS, Calata, CalataStatus, Phase

if TYPE_CHECKING:
    from .state import PlayerState
    from .tablestate import TableState


@dataclass(frozen=True)
class Conclusion:
    """What concluding or cancelling a calata did: its events, and whether its work stands
    (`confirmed`), for the end-of-game policy to act on (endings.after_conclusion)."""

    events: list[Event]
    calata: Calata
    confirmed: bool


def open_calata(t: TableState, ps: PlayerState) -> list[Event]:
    """Open a calata at the player's first move if none is open (M5.0.1 decision).

    During a freeze the stopper's calata has no 40 s limit (M9.3)."""
    if ps.calata is not None:
        return []
    stop = t.phase is Phase.FROZEN and t.stopper == ps.seat
    deadline = None if stop else t.now_ms + CALATA_MS
    cal = Calata(t.next_calata_id(), ps.seat, t.now_ms, deadline, is_stop=stop)
    t.calate[cal.id] = cal
    t.unsettled.add(cal.id)
    ps.calata = cal.id
    return [Event(EventKind.CALATA_OPENED, t.now_ms, ps.seat)]


def calata_of(t: TableState, ps: PlayerState) -> Calata:
    cal = t.open_calata(ps.seat)
    assert cal is not None, "a move without a calata"
    return cal


def record_op(t: TableState, ps: PlayerState, kind: OpKind, cards: tuple[Card, ...], src_zone: Zone,
              src_meld: int | None, dst: int | None, from_common: bool = False) -> Op:
    """Make an op, apply it to the live board and append it to the calata and the live log."""
    cal = calata_of(t, ps)
    ids = t.reserve_meld_ids()
    target = ids.new if dst is None else dst
    prev = tuple(t.board.last_op.get(c) for c in cards) if src_zone is Zone.TABLE else ()
    op = Op(t.next_op_seq(), ps.seat, cal.id, kind, cards, src_zone, src_meld, target, ids,
            t.now_ms, prev=prev, from_common=from_common,
            bundle=pingpong.bundle_of(t, ps, cards[0]) if src_zone is Zone.TABLE else None)
    if src_meld is not None:
        t.parents[ids.removal_split] = src_meld
        t.creators[ids.removal_split] = op.seq
    t.parents[ids.long_split] = target
    t.creators[ids.long_split] = op.seq
    op.touched = tuple(t.board.apply(op))
    t.ops[op.seq] = op
    t.live.append(op.seq)
    cal.ops.append(op.seq)
    return op


def rejudge(t: TableState, cal: Calata) -> None:
    verdict = judge(t, cal)
    cal.fail_ops = verdict.fail_ops
    cal.needs = verdict.needs
    cal.touched_now = verdict.touched


def return_pozzetto(t: TableState, ps: PlayerState) -> list[Event]:
    """M5.3.6: unplaced pozzetto cards go back to the hand."""
    if not ps.pozzetto:
        return []
    ev = Event(EventKind.UNDECLARED, t.now_ms, ps.seat, cards=sorted_cards(ps.pozzetto),
               detail="not placed")
    ps.hand.update(ps.pozzetto)
    ps.pozzetto.clear()
    return [ev]


def conclude(t: TableState, cal: Calata, reason: str, whole: bool = False) -> Conclusion:
    """Conclude `cal` (M5.4): its judgement at the last move decides what falls (M5.4.5).

    `whole`: when anything is irregular, all of its work falls (the stopper's failed freeze,
    M9.7) instead of the irregular part only."""
    ps = t.players[cal.player]
    out: list[Event] = []
    if ps.hold is not None:
        out.append(release_hold(t, ps, EventKind.RELEASED))
    out += return_pozzetto(t, ps)
    ps.calata = None
    pingpong.calata_ended(t, cal)
    if not cal.ops:
        cal.status = CalataStatus.FELL
        t.unsettled.discard(cal.id)
        out.append(Event(EventKind.VOID, t.now_ms, ps.seat, detail=reason))
        return Conclusion(out, cal, confirmed=False)
    own_before = list(cal.ops)
    first = set(cal.fail_ops) & set(own_before)
    if whole and first:
        first = set(own_before)
    needs_check = bool(first) or not (cal.is_stop or any(t.ops[s].own_cards for s in own_before))
    fallen_own: list[Card] = []
    if needs_check:
        plan = plan_undo(t, first, concluding=cal)
        fallen_own = [c for s in sorted(plan.fallen) if t.ops[s].calata == cal.id
                      for c in t.ops[s].cards]
        out += commit(t, plan, cause=cal)
    if cal.ops:
        cal.status = CalataStatus.CONFIRMED
        cal.concluded_ms = t.now_ms
        cal.consolidate_ms = t.now_ms + CONSOLIDATION_MS
        if t.phase is Phase.FROZEN:
            cal.consolidate_ms = None  # its clock starts when the freeze ends
            cal.consolidate_left_ms = CONSOLIDATION_MS
        if needs_check:  # the table changed since the last judgement: judge what is left
            rejudge(t, cal)
        for seq in cal.ops:
            t.ops[seq].needs = cal.needs.get(seq, frozenset())
        if any(t.ops[s].kind is OpKind.DIRECT for s in cal.ops):
            ps.direct_meld_calate.add(cal.id)  # M8.2(2)
    else:
        cal.status = CalataStatus.FELL
        t.unsettled.discard(cal.id)
    kind = EventKind.FAILED if fallen_own or not cal.ops else EventKind.CONFIRMED
    out.append(Event(kind, t.now_ms, ps.seat, cards=tuple(fallen_own), detail=reason))
    if cal.ops:
        out += _settle_races(t, cal)
    return Conclusion(out, cal, confirmed=bool(cal.ops))


def _settle_races(t: TableState, cal: Calata) -> list[Event]:
    """Two calate confirmed for the same place (two 8♦ for one slot, two cards taken out of
    one set of four) leave a meld irregular although each was judged in order, the other's
    work being on trial (M5.4.3). The first to arrive keeps it: fastest wins (M6.4); the later
    confirmed calata touching the meld was beaten on time and falls (M5.5.4 wound rule)."""
    touched = t.board.melds_touched(t.ops[s] for s in cal.ops)
    if all(is_regular(t.board.melds[m]) for m in touched):
        return []
    plan = plan_undo(t, set(), concluding=None)
    why = f"beaten on time: the calata of {cal.player} came first to the same place (M6.4)"
    if not plan.fallen:
        return []
    return commit(t, plan, cause=cal, why=why, cause_reported=False)


def annulla(t: TableState, cal: Calata) -> Conclusion:
    """ANNULLA (M5.5.6): all own work goes, regular or not; dependents follow (M5.5)."""
    ps = t.players[cal.player]
    out: list[Event] = []
    if ps.hold is not None:
        out.append(release_hold(t, ps, EventKind.RELEASED))
    ps.calata = None
    pingpong.calata_ended(t, cal)
    if cal.ops:
        plan = plan_undo(t, set(cal.ops), concluding=cal)
        out += commit(t, plan, cause=cal)
    out += return_pozzetto(t, ps)
    cal.status = CalataStatus.FELL
    t.unsettled.discard(cal.id)
    out.append(Event(EventKind.CANCELLED, t.now_ms, ps.seat))
    return Conclusion(out, cal, confirmed=False)


def commit(t: TableState, plan: UndoPlan, cause: Calata, why: str = "",
           cause_reported: bool = True) -> list[Event]:
    """Make an undo plan the table: cards go back, calate lose what fell, events (M5.5.7-8)."""
    if not plan.fallen:
        return []
    old_where = t.board.where
    t.board = plan.board
    fallen_ops = sorted((t.ops[s] for s in plan.fallen), key=lambda o: o.seq)
    t.live = [op.seq for op in plan.survivors]
    for op in plan.survivors:
        op.refresh_ids(plan.touched[op.seq])  # the melds it works on now (halves joined)
    hit: dict[int, list[Op]] = {}
    for op in reversed(fallen_ops):
        del t.ops[op.seq]
        cal = t.calate[op.calata]
        cal.ops.remove(op.seq)
        hit.setdefault(cal.id, []).append(op)
        if op.src_zone is Zone.TABLE:
            continue
        if op.from_common:
            t.common.update(dict.fromkeys(op.cards, t.common_owner[op.cards[0]]))
            continue
        owner = t.players[op.player]
        back_to_pozzetto = (op.src_zone is Zone.POZZETTO and cal.status is CalataStatus.OPEN
                            and cal is not cause)
        (owner.pozzetto if back_to_pozzetto else owner.hand).update(op.cards)
    out: list[Event] = []
    for ps in t.players:
        if ps.hold is not None and t.board.where.get(ps.hold.card) != old_where.get(ps.hold.card):
            out.append(release_hold(t, ps, EventKind.RELEASED))
    for cid, ops in hit.items():
        cal = t.calate[cid]
        if cal is cause and cause_reported:
            continue  # the cause reports its own outcome (failed, cancelled)
        cards = tuple(c for op in reversed(ops) for c in op.cards)
        if cal.status is CalataStatus.CONFIRMED:
            cal.status = CalataStatus.FELL
            t.unsettled.discard(cal.id)  # M5.5.5, M5.5.7: as if it never happened
            t.players[cal.player].direct_meld_calate.discard(cal.id)
        elif cal.status is CalataStatus.OPEN:
            pass  # judged again below, with every open calata
        out.append(Event(EventKind.CHAIN, t.now_ms, cal.player, by=cause.player, cards=cards,
                         detail=why or f"undone because the calata of {cause.player} failed"))
    for other in list(t.open_calate()):  # the table changed under every open calata
        if other is not cause:
            rejudge(t, other)
    return out


def release_hold(t: TableState, ps: PlayerState, kind: EventKind) -> Event:
    assert ps.hold is not None
    card = ps.hold.card
    ps.hold = None
    return Event(kind, t.now_ms, ps.seat, cards=(card,), meld=t.board.where.get(card))


def sorted_cards(cards: set[Card] | tuple[Card, ...]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.suit, c.rank, c.copy)))


def consolidate(t: TableState, cal: Calata) -> list[Event]:
    """M5.5.8: a confirmed calata becomes definitive once nothing it needs can still fall.

    The calate it depends on (through needed ops and moved cards, transitively) become
    definitive with it, all at once, when the last of them has been concluded for 40 s;
    while one of them is still open, it waits."""
    group = dependency_group(t, cal)
    waiting = [c for c in group if c.status is CalataStatus.OPEN]
    if waiting:
        ends = [c.deadline_ms if c.deadline_ms is not None else t.now_ms for c in waiting]
        cal.consolidate_ms = max(max(ends) + CONSOLIDATION_MS, t.now_ms + 1)
        return []
    due = max((c.concluded_ms or 0) + CONSOLIDATION_MS for c in group)
    if due > t.now_ms:
        cal.consolidate_ms = due
        return []
    out: list[Event] = []
    for c in sorted(group, key=lambda c: (c.concluded_ms or 0, c.id)):
        c.status = CalataStatus.CONSOLIDATED
        t.unsettled.discard(c.id)
        c.consolidate_ms = None
        out.append(Event(EventKind.CONSOLIDATED, t.now_ms, c.player))
    while t.live and t.calate[t.ops[t.live[0]].calata].status is \
            CalataStatus.CONSOLIDATED:
        op = t.ops.pop(t.live.pop(0))
        t.base.apply(op)
    return out
