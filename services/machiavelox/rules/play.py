"""Action handlers for playing cards (M4, M5, M6). Each validates everything, then mutates;
a calata concludes through `endings` (what a conclusion means for the smazzata).

A handler that raises leaves the table exactly as it was: all checks come before the first
change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import actions as A
from . import endings, pingpong
from . import lifecycle as L
from .board import OpKind, Zone
from .cards import Card
from .errors import conflict, illegal, invalid
from .events import Event, EventKind
from .melds import is_regular
from .state import HOLD_MS, INACTIVITY_MS, Hold, Phase

if TYPE_CHECKING:
    from .state import PlayerState
    from .tablestate import TableState


def _cards_in(ps: PlayerState, pool: set[Card], cards: tuple[Card, ...], zone: str) -> None:
    if not cards:
        raise invalid("action/no-cards", "name at least one card")
    if len(set(cards)) != len(cards):
        raise invalid("action/repeated-card", "a card is named twice")
    for c in cards:
        if c not in pool:
            raise illegal(f"card/not-in-{zone}", f"{c.face} is not in {ps.seat}'s {zone}")


def _meld(t: TableState, meld_id: int) -> list[Card]:
    cards = t.board.melds.get(meld_id)
    if cards is None:
        raise invalid("meld/unknown", f"there is no meld {meld_id} on the table")
    return cards


def _may_touch_table(t: TableState, ps: PlayerState) -> None:
    """M5.3.1 / M6.2: declared cards give the right to move; the stopper has dominion (M9.4)."""
    if t.pozzetto_of(ps) or (t.phase is Phase.FROZEN and t.stopper == ps.seat):
        return
    raise illegal("take/not-declared", "declare cards into your pozzetto before touching table "
                  "cards (M5.3.1, M6.2)")


def _table_card(t: TableState, ps: PlayerState, card: Card, meld_id: int) -> None:
    _may_touch_table(t, ps)
    if card not in _meld(t, meld_id):
        raise illegal("card/not-in-meld", f"{card.face} is not in meld {meld_id}")
    holder = t.held_by(card)
    if holder is not None and holder != ps.seat:
        raise conflict("card/held", f"{card.face} is held by {holder}: {holder} was faster "
                       "(M6.4)")
    pingpong.check_reserved(t, ps, card)


def draw(t: TableState, a: A.Draw) -> list[Event]:
    ps = t.actor(a.player)
    if ps.pozzetto:
        raise illegal("draw/pozzetto", "no drawing while your pozzetto has cards (M4.4)")
    if not ps.tallone:
        raise illegal("draw/empty-tallone", "your tallone is empty (M4.2)")
    card = ps.tallone.pop()
    ps.hand.add(card)
    ps.drawn = True
    t.inactivity_ms = t.now_ms + INACTIVITY_MS  # M7.2
    if t.inactivity_left_ms is not None:
        t.inactivity_left_ms = INACTIVITY_MS
    return [Event(EventKind.DREW, t.now_ms, a.player, cards=(card,), secret_to=a.player)]


def declare(t: TableState, a: A.Declare) -> list[Event]:
    ps = t.actor(a.player)
    _cards_in(ps, ps.hand, a.cards, "hand")
    out = L.open_calata(t, ps)
    ps.hand.difference_update(a.cards)
    ps.pozzetto.update(a.cards)
    out.append(Event(EventKind.DECLARED, t.now_ms, a.player, cards=a.cards))
    return out


def undeclare(t: TableState, a: A.Undeclare) -> list[Event]:
    ps = t.actor(a.player)
    if t.phase is Phase.TIEBREAK:
        raise illegal("tiebreak/common", "the common pozzetto stays uncovered (M10.2)")
    _cards_in(ps, ps.pozzetto, a.cards, "pozzetto")
    ps.pozzetto.difference_update(a.cards)
    ps.hand.update(a.cards)
    out = [Event(EventKind.UNDECLARED, t.now_ms, a.player, cards=a.cards)]
    if not ps.pozzetto and ps.hold is not None and t.stopper != ps.seat:
        out.append(L.release_hold(t, ps, EventKind.RELEASED))  # the right to move ends (M5.3.1)
    cal = t.open_calata(ps.seat)
    if cal is not None and not cal.is_stop and not ps.pozzetto and any(
            t.ops[s].kind is OpKind.MOVE for s in cal.ops):
        # M5.3.2: taking the declared cards back after moving aborts the gesture; judged now,
        # and without an own card placed the moves are void (M5.3.7).
        return out + endings.conclude(t, cal, "aborted")
    return out + maybe_auto_conclude(t, ps)


def direct(t: TableState, a: A.Direct) -> list[Event]:
    ps = t.actor(a.player)
    pool = t.pozzetto_of(ps)
    _cards_in(ps, pool, a.cards, "pozzetto")
    if not is_regular(a.cards):
        raise illegal("meld/irregular", "these cards do not form a regular meld (M5.1, M3)")
    out = L.open_calata(t, ps)
    pool.difference_update(a.cards)
    op = L.record_op(t, ps, OpKind.DIRECT, a.cards, Zone.POZZETTO, None, None,
                     from_common=pool is t.common)
    out.append(Event(EventKind.DIRECT, t.now_ms, a.player, cards=a.cards, meld=op.dst,
                     melds=op.touched))
    return out + after_move(t, ps)


def attach(t: TableState, a: A.Attach) -> list[Event]:
    ps = t.actor(a.player)
    _cards_in(ps, ps.hand, (a.card,), "hand")
    if t.pozzetto_of(ps):
        raise illegal("attach/pozzetto", "while your pozzetto has cards you play from it, not "
                      "from your hand (M5.3.2)")
    _meld(t, a.meld)
    out = L.open_calata(t, ps)
    ps.hand.discard(a.card)
    op = L.record_op(t, ps, OpKind.ATTACH, (a.card,), Zone.HAND, None, a.meld)
    out.append(Event(EventKind.ATTACHED, t.now_ms, a.player, cards=(a.card,), meld=op.dst,
                     melds=op.touched))
    return out + after_move(t, ps)


def place(t: TableState, a: A.Place) -> list[Event]:
    ps = t.actor(a.player)
    pool = t.pozzetto_of(ps)
    _cards_in(ps, pool, (a.card,), "pozzetto")
    _meld(t, a.meld)
    out = L.open_calata(t, ps)
    pool.discard(a.card)
    op = L.record_op(t, ps, OpKind.PLACE, (a.card,), Zone.POZZETTO, None, a.meld,
                     from_common=pool is t.common)
    out.append(Event(EventKind.PLACED, t.now_ms, a.player, cards=(a.card,), meld=op.dst,
                     melds=op.touched))
    if not pool and ps.hold is not None and t.stopper != ps.seat:
        out.append(L.release_hold(t, ps, EventKind.RELEASED))  # M5.3.1
    return out + after_move(t, ps)


def take(t: TableState, a: A.Take) -> list[Event]:
    ps = t.actor(a.player)
    if ps.hold is not None:
        if ps.hold.card is a.card:
            raise illegal("hold/already", f"you already hold {a.card.face}")
        raise illegal("hold/one-only", f"you already hold {ps.hold.card.face}: one table card "
                      "at a time (M6.1)")
    _table_card(t, ps, a.card, a.meld)
    out = L.open_calata(t, ps)
    ps.hold = Hold(a.card, t.now_ms + HOLD_MS)
    out.append(Event(EventKind.TOOK, t.now_ms, a.player, cards=(a.card,), meld=a.meld))
    return out


def put(t: TableState, a: A.Put) -> list[Event]:
    ps = t.actor(a.player)
    if ps.hold is None:
        raise illegal("hold/none", "you are not holding a table card")
    card = ps.hold.card
    src = t.board.where[card]
    if a.meld is not None:
        _meld(t, a.meld)
        if a.meld == src:
            return [L.release_hold(t, ps, EventKind.RELEASED)]
    ps.hold = None
    return _do_move(t, ps, card, src, a.meld)


def move(t: TableState, a: A.Move) -> list[Event]:
    ps = t.actor(a.player)
    if ps.hold is not None and ps.hold.card is not a.card:
        raise illegal("hold/one-only", f"you hold {ps.hold.card.face}: put or release it first "
                      "(M6.1)")
    _table_card(t, ps, a.card, a.src)
    if a.dst is not None:
        _meld(t, a.dst)
        if a.dst == a.src:
            raise invalid("move/same-meld", "source and destination are the same meld")
    ps.hold = None
    return L.open_calata(t, ps) + _do_move(t, ps, a.card, a.src, a.dst)


def _do_move(t: TableState, ps: PlayerState, card: Card, src: int, dst: int | None) -> list[Event]:
    op = L.record_op(t, ps, OpKind.MOVE, (card,), Zone.TABLE, src, dst)
    out = [Event(EventKind.MOVED, t.now_ms, ps.seat, cards=(card,), meld=src, to_meld=op.dst,
                 melds=op.touched)]
    reserved, changed = pingpong.moved(t, ps, op.seq, card, src, t.board.where[card])
    for cal in changed:  # M6.5 decision: the card's moves are the reserved player's now
        L.rejudge(t, cal)
    out += reserved
    return out + after_move(t, ps)


def release(t: TableState, a: A.Release) -> list[Event]:
    ps = t.actor(a.player)
    if ps.hold is None:
        raise illegal("hold/none", "you are not holding a table card")
    return [L.release_hold(t, ps, EventKind.RELEASED)]


def conclude(t: TableState, a: A.Conclude) -> list[Event]:
    ps = t.actor(a.player)
    cal = t.open_calata(ps.seat)
    if cal is None:
        raise illegal("calata/none", f"{ps.seat} has no open calata")
    if cal.is_stop and t.phase is Phase.FROZEN and ps.hand:
        # M9.7 decision: the stop-calata is judged once, when the freeze ends (a closing,
        # the 3 minutes, giving up); with cards left, concluding it would be none of those
        raise illegal("stop/one-calata", "during your Stop! all your work is one calata, "
                      "judged when the freeze ends: close, or give up (M9.7)")
    return endings.conclude(t, cal, "explicit")


def cancel(t: TableState, a: A.Cancel) -> list[Event]:
    ps = t.actor(a.player)
    cal = t.open_calata(ps.seat)
    if cal is None:
        raise illegal("calata/none", f"{ps.seat} has no open calata")
    return endings.annulla(t, cal)


def after_move(t: TableState, ps: PlayerState) -> list[Event]:
    """Judge the calata on the state its move produced (M5.4.2), then maybe conclude it."""
    L.rejudge(t, L.calata_of(t, ps))
    return maybe_auto_conclude(t, ps)


def maybe_auto_conclude(t: TableState, ps: PlayerState) -> list[Event]:
    """Decision (M5.4): a calata concludes by itself when its work is in order.

    The stopper's calata (M9.7 decision): all the stopper's work during the freeze is one
    calata, judged once when the freeze ends, so it concludes by itself only as the closing:
    no card left and the whole table in order (M9.4: nobody closes leaving wounds)."""
    cal = t.open_calata(ps.seat)
    if cal is None or ps.pozzetto or ps.hold is not None or cal.fail_ops:
        return []
    if cal.is_stop and t.phase is Phase.FROZEN and (ps.hand or not t.table_in_order()):
        return []  # nothing of it is confirmed before the freeze ends
    return endings.conclude(t, cal, "auto")


def not_a_table_action(t: TableState, a: Any) -> list[Event]:
    raise illegal("match/not-paused", f"{type(a).__name__} belongs to the pause between the "
                  "smazzate of a long match (M13.4, M13.5)")
