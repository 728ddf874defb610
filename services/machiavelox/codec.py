"""Conversions between the rules engine's values and the protobuf contract (common.proto).

The only module besides the services' own codecs that imports generated code. Decoding
validates: a malformed message raises a ServiceError (INVALID_ARGUMENT) with a reason, never
a crash, and never reaches the engine.
"""

from __future__ import annotations

from typing import TypeVar

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2 as pb
from machiavelox.platform.errors import ServiceError, invalid_argument
from machiavelox.rules import CardStatus, MeldView, PlayerView, SeatView, TableCard

_SEAT_TO_PB = {rules.Seat.P1: pb.SEAT_P1, rules.Seat.P2: pb.SEAT_P2, rules.Seat.P3: pb.SEAT_P3}
_PHASE_TO_PB = {"playing": pb.PHASE_PLAYING, "frozen": pb.PHASE_FROZEN,
                "tiebreak": pb.PHASE_TIEBREAK, "pause": pb.PHASE_PAUSE, "ended": pb.PHASE_ENDED}
_STATUS_TO_PB = {"active": pb.PLAYER_STATUS_ACTIVE, "dormant": pb.PLAYER_STATUS_DORMANT,
                 "frozen": pb.PLAYER_STATUS_FROZEN, "eliminated": pb.PLAYER_STATUS_ELIMINATED,
                 "abandoned": pb.PLAYER_STATUS_ABANDONED, "out": pb.PLAYER_STATUS_OUT}
_CARD_STATUS_TO_PB = {CardStatus.TRIAL: pb.CARD_STATUS_TRIAL,
                      CardStatus.CONFIRMED: pb.CARD_STATUS_CONFIRMED,
                      CardStatus.CONSOLIDATED: pb.CARD_STATUS_CONSOLIDATED}


# ---------------------------------------------------------------------------- small values
def seat_to_pb(seat: rules.Seat | None) -> pb.Seat.ValueType:
    return pb.SEAT_UNSPECIFIED if seat is None else _SEAT_TO_PB[seat]


def seat_from_pb(value: int) -> rules.Seat:
    for seat, wire in _SEAT_TO_PB.items():
        if wire == value:
            return seat
    raise invalid_argument("request/bad-seat", f"unknown seat {value}")


def card_to_pb(card: rules.Card) -> pb.Card:
    return pb.Card(index=card.index)


def card_from_pb(msg: pb.Card) -> rules.Card:
    if not 0 <= msg.index < len(rules.ALL_CARDS):
        raise invalid_argument("request/bad-card", f"card index {msg.index} is not 0..103")
    return rules.ALL_CARDS[msg.index]


def cards_from_pb(msgs: object) -> tuple[rules.Card, ...]:
    try:  # (indexes are unsigned on the wire: only too large ones are wrong)
        return tuple([rules.ALL_CARDS[m.index] for m in msgs])  # type: ignore[attr-defined]
    except IndexError:
        return tuple([card_from_pb(m) for m in msgs])  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- actions
_SIMPLE: dict[str, type[rules.Action]] = {
    "draw": rules.Draw, "release": rules.Release, "conclude": rules.Conclude,
    "cancel": rules.Cancel, "stop": rules.Stop, "give_up": rules.GiveUp,
    "abandon": rules.Abandon, "ready": rules.Ready, "leave": rules.Leave,
}
_WITH_CARDS: dict[str, type[rules.Declare | rules.Undeclare | rules.Direct]] = {
    "declare": rules.Declare, "undeclare": rules.Undeclare, "direct": rules.Direct,
}


def action_from_pb(seat: rules.Seat, msg: pb.Action) -> rules.Action:
    """The engine action for a wire action by `seat`; INVALID_ARGUMENT when malformed."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        raise invalid_argument("request/no-action", "the action has no verb")
    simple = _SIMPLE.get(kind)
    if simple is not None:
        return simple(seat)  # type: ignore[call-arg]
    with_cards = _WITH_CARDS.get(kind)
    if with_cards is not None:
        cards = cards_from_pb(getattr(msg, kind).cards)
        if not cards:
            raise invalid_argument("request/no-cards", f"{kind} needs at least one card")
        return with_cards(seat, cards)
    if kind in ("attach", "place", "take"):
        arg = getattr(msg, kind)
        if not arg.HasField("card"):
            raise invalid_argument("request/no-card", f"{kind} needs a card")
        card = card_from_pb(arg.card)
        meld = int(arg.meld)
        if kind == "attach":
            return rules.Attach(seat, card, meld)
        if kind == "place":
            return rules.Place(seat, card, meld)
        return rules.Take(seat, card, meld)
    if kind == "put":
        return rules.Put(seat, None if msg.put.new_meld else int(msg.put.meld))
    if kind == "move":
        if not msg.move.HasField("card"):
            raise invalid_argument("request/no-card", "move needs a card")
        dst = None if msg.move.to.new_meld else int(msg.move.to.meld)
        return rules.Move(seat, card_from_pb(msg.move.card), int(msg.move.from_meld), dst)
    raise invalid_argument("request/unknown-action", f"unknown action {kind}")


def action_to_pb(action: rules.Action) -> pb.Action:
    """The wire form of an engine action (clients, bots, tests)."""
    empty = pb.Empty()
    match action:
        case rules.Draw():
            return pb.Action(draw=empty)
        case rules.Release():
            return pb.Action(release=empty)
        case rules.Conclude():
            return pb.Action(conclude=empty)
        case rules.Cancel():
            return pb.Action(cancel=empty)
        case rules.Stop():
            return pb.Action(stop=empty)
        case rules.GiveUp():
            return pb.Action(give_up=empty)
        case rules.Abandon():
            return pb.Action(abandon=empty)
        case rules.Ready():
            return pb.Action(ready=empty)
        case rules.Leave():
            return pb.Action(leave=empty)
        case rules.Declare(cards=cards):
            return pb.Action(declare=pb.Cards(cards=[card_to_pb(c) for c in cards]))
        case rules.Undeclare(cards=cards):
            return pb.Action(undeclare=pb.Cards(cards=[card_to_pb(c) for c in cards]))
        case rules.Direct(cards=cards):
            return pb.Action(direct=pb.Cards(cards=[card_to_pb(c) for c in cards]))
        case rules.Attach(card=card, meld=meld):
            return pb.Action(attach=pb.CardToMeld(card=card_to_pb(card), meld=meld))
        case rules.Place(card=card, meld=meld):
            return pb.Action(place=pb.CardToMeld(card=card_to_pb(card), meld=meld))
        case rules.Take(card=card, meld=meld):
            return pb.Action(take=pb.CardToMeld(card=card_to_pb(card), meld=meld))
        case rules.Put(meld=meld):
            return pb.Action(put=_target(meld))
        case rules.Move(card=card, src=src, dst=dst):
            return pb.Action(move=pb.MoveCard(card=card_to_pb(card), from_meld=src,
                                              to=_target(dst)))
    raise ValueError(f"no wire form for {action!r}")


def _target(meld: int | None) -> pb.MeldTarget:
    return pb.MeldTarget(new_meld=True) if meld is None else pb.MeldTarget(meld=meld)


def refusal_to_pb(err: rules.RulesError | ServiceError) -> pb.Refusal:
    code = err.code if isinstance(err, rules.RulesError) else err.reason
    return pb.Refusal(code=code, message=err.message)


# ---------------------------------------------------------------------------- events, views
_KIND_TO_PB: dict[rules.EventKind, pb.EventKind.ValueType] = {
    kind: pb.EventKind.Value(f"EVENT_KIND_{kind.name}") for kind in rules.EventKind}


def event_to_pb(event: rules.Event, seq: int, arrival: int = 0) -> pb.Event:
    return fill_event(pb.Event(), event, seq, arrival)


def fill_event(msg: pb.Event, event: rules.Event, seq: int, arrival: int = 0) -> pb.Event:
    """`msg` (empty) made the wire form of `event`. On every action's path: only the fields
    the event has are set (the message is the same)."""
    msg.seq = seq
    msg.at_ms = event.at_ms
    msg.kind = event.kind
    msg.kind_code = _KIND_TO_PB[event.kind]
    if arrival:
        msg.arrival_index = arrival
    if event.player is not None:
        msg.player = _SEAT_TO_PB[event.player]
    if event.by is not None:
        msg.by = _SEAT_TO_PB[event.by]
    if event.cards:
        add = msg.cards.add
        for card in event.cards:
            add(index=card.index)
    if event.meld:
        msg.meld = event.meld
    if event.to_meld:
        msg.to_meld = event.to_meld
    if event.melds:
        msg.melds.extend(event.melds)
    if event.detail:
        msg.detail = event.detail
    return msg


def result_to_pb(result: rules.SmazzataResult | None) -> pb.SmazzataResult | None:
    if result is None:
        return None
    return pb.SmazzataResult(winner=seat_to_pb(result.winner), scores=list(result.scores),
                             ending=result.ending, draw=[seat_to_pb(s) for s in result.draw])


def view_to_pb(view: PlayerView, table_id: str, phase: str, statuses: list[str]) -> pb.PlayerView:
    """A player's view on the wire; `phase` and `statuses` come from the match (pause, out)."""
    seats = [
        pb.SeatView(
            seat=seat_to_pb(s.seat),
            status=_STATUS_TO_PB[statuses[s.seat]],
            hand_count=s.hand_count,
            pozzetto=[card_to_pb(c) for c in s.pozzetto],
            tallone_count=s.tallone_count,
            calata_open=s.calata_open,
            calata_deadline_ms=s.calata_deadline_ms or 0,
            zone=list(s.zone),
            holding=card_to_pb(s.holding) if s.holding is not None else None,
            abandon_at_ms=s.abandon_at_ms or 0,
            said_stop=s.said_stop,
        )
        for s in view.seats
    ]
    melds = [
        pb.Meld(
            id=m.id,
            cards=[pb.TableCard(card=card_to_pb(tc.card), status=_CARD_STATUS_TO_PB[tc.status],
                                trial_by=seat_to_pb(tc.trial_by),
                                held_by=seat_to_pb(tc.held_by)) for tc in m.cards],
            regular=m.regular,
            status=_CARD_STATUS_TO_PB[m.status],
        )
        for m in view.table
    ]
    return pb.PlayerView(
        table_id=table_id,
        viewer=seat_to_pb(view.viewer),
        now_ms=view.now_ms,
        phase=_PHASE_TO_PB[phase],
        removed=[card_to_pb(c) for c in view.removed],
        hand=[card_to_pb(c) for c in view.hand],
        seats=seats,
        table=melds,
        stopper=seat_to_pb(view.stopper),
        common=[card_to_pb(c) for c in view.common],
        inactivity_ms=view.inactivity_ms or 0,
        result=result_to_pb(view.result),
        stop_ends_ms=view.stop_ends_ms or 0,
        tiebreak=[seat_to_pb(s) for s in view.tiebreak],
        tiebreak_ends_ms=view.tiebreak_ends_ms or 0,
        reserved=[pb.Reservation(card=card_to_pb(c), owner=seat_to_pb(s))
                  for c, s in view.reserved],
    )


# ---------------------------------------------------------------------------- views, read back
_PHASE_FROM_PB: dict[int, str] = {wire: word for word, wire in _PHASE_TO_PB.items()}
_CARD_STATUS_FROM_PB: dict[int, CardStatus] = {
    wire: status for status, wire in _CARD_STATUS_TO_PB.items()}
# the wire's status is the match's word (dormant, frozen: P4, M9.2); the view's is the
# player's own status, dormancy apart (rules.view: `SeatView.dormant`)
_STATUS_FROM_PB: dict[int, str] = {
    pb.PLAYER_STATUS_ACTIVE: "active", pb.PLAYER_STATUS_DORMANT: "active",
    pb.PLAYER_STATUS_FROZEN: "active", pb.PLAYER_STATUS_ELIMINATED: "eliminated",
    pb.PLAYER_STATUS_ABANDONED: "abandoned", pb.PLAYER_STATUS_OUT: "out"}


def _seat_or_none(value: int) -> rules.Seat | None:
    return None if value == pb.SEAT_UNSPECIFIED else seat_from_pb(value)


_T = TypeVar("_T")


def _known(table: dict[int, _T], value: int, what: str) -> _T:
    if value not in table:
        raise invalid_argument("request/bad-view", f"unknown {what} {value}")
    return table[value]


def result_from_pb(msg: pb.SmazzataResult) -> rules.SmazzataResult:
    scores = tuple(msg.scores)
    if len(scores) != 3:
        raise invalid_argument("request/bad-view", f"a result has 3 scores, not {len(scores)}")
    return rules.SmazzataResult(winner=_seat_or_none(msg.winner),
                                scores=(scores[0], scores[1], scores[2]), ending=msg.ending,
                                draw=tuple(seat_from_pb(s) for s in msg.draw))


def view_from_pb(msg: pb.PlayerView, tiebreak: tuple[rules.Seat, ...] | None = None,
                 reserved: tuple[tuple[rules.Card, rules.Seat], ...] = ()) -> PlayerView:
    """The engine's view read back from the wire (the inverse of `view_to_pb`), for clients
    and network bots: exactly what the player was sent, nothing more.

    The wire carries the tied players of a tiebreak, the ping-pong reservations (M6.5) and the
    Stop!'s and the tiebreak's ends; a server older than those fields sends none of them:
    `tiebreak` and `reserved` are then what the caller learnt from the `tiebreak` and
    `reserved` events, and without `tiebreak`, in a tiebreak the tied players are those in
    play with no card of their own (M10.2: they uncovered them all into the common pozzetto).
    When a dormant player fell silent is not on the wire (None)."""
    phase = _known(_PHASE_FROM_PB, msg.phase, "phase")
    if len(msg.seats) != 3:
        raise invalid_argument("request/bad-view", f"a view has 3 seats, not {len(msg.seats)}")
    seats = tuple(
        SeatView(
            seat=seat_from_pb(s.seat),
            status=_known(_STATUS_FROM_PB, s.status, "player status"),
            hand_count=s.hand_count,
            pozzetto=cards_from_pb(s.pozzetto),
            tallone_count=s.tallone_count,
            calata_open=s.calata_open,
            calata_deadline_ms=s.calata_deadline_ms or None,
            zone=tuple(s.zone),
            holding=card_from_pb(s.holding) if s.HasField("holding") else None,
            dormant=s.status == pb.PLAYER_STATUS_DORMANT,
            silent_since_ms=None,
            abandon_at_ms=s.abandon_at_ms or None,
            said_stop=s.said_stop,
        )
        for s in msg.seats)
    table = tuple(
        MeldView(
            id=m.id,
            cards=tuple(TableCard(card_from_pb(tc.card),
                                  _known(_CARD_STATUS_FROM_PB, tc.status, "card status"),
                                  _seat_or_none(tc.trial_by), _seat_or_none(tc.held_by))
                        for tc in m.cards),
            regular=m.regular,
            status=_known(_CARD_STATUS_FROM_PB, m.status, "meld status"),
        )
        for m in msg.table)
    if msg.tiebreak:
        tiebreak = tuple(seat_from_pb(s) for s in msg.tiebreak)
    elif tiebreak is None:  # M10.2: the tied players uncovered all their cards
        tiebreak = tuple(s.seat for s in seats if phase == "tiebreak" and s.status == "active"
                         and s.hand_count == 0 and not s.pozzetto)
    if msg.reserved:
        reserved = tuple((card_from_pb(r.card), seat_from_pb(r.owner)) for r in msg.reserved)
    return PlayerView(
        viewer=_seat_or_none(msg.viewer),
        now_ms=msg.now_ms,
        phase=phase,
        removed=cards_from_pb(msg.removed),
        hand=cards_from_pb(msg.hand),
        seats=(seats[0], seats[1], seats[2]),
        table=table,
        result=result_from_pb(msg.result) if msg.HasField("result") else None,
        stopper=_seat_or_none(msg.stopper),
        stop_ends_ms=msg.stop_ends_ms or None,
        tiebreak=tiebreak,
        common=cards_from_pb(msg.common),
        tiebreak_ends_ms=msg.tiebreak_ends_ms or None,
        inactivity_ms=msg.inactivity_ms or None,
        reserved=reserved,
    )
