"""Conversions between the classic engine's values and the contract (classic.proto, and the
classic fields of common.proto's `Event`).

Like `codec.py` (whose refusals and card lists it shares), decoding validates: a malformed
message raises a ServiceError (INVALID_ARGUMENT) with a reason and never reaches the engine; a
variant set no table can play is refused with the engine's own `variant/...` code as reason.
"""

from __future__ import annotations

from typing import TypeVar

from machiavelox import classic
from machiavelox._gen.v1 import classic_pb2 as cpb
from machiavelox._gen.v1 import common_pb2 as pb
from machiavelox.classic import Aces, Scoring, Seat, SessionKind, VariantError, Variants
from machiavelox.platform.errors import invalid_argument
from machiavelox.rules import Card, MeldKind

_E = TypeVar("_E")

_ACES = {Aces.LOW: cpb.CLASSIC_ACES_LOW, Aces.LOW_HIGH: cpb.CLASSIC_ACES_LOW_HIGH,
         Aces.CIRCULAR: cpb.CLASSIC_ACES_CIRCULAR}
_SCORING = {Scoring.FACE: cpb.CLASSIC_SCORING_FACE, Scoring.SCALA40: cpb.CLASSIC_SCORING_SCALA40}
_SESSION = {SessionKind.SINGLE: cpb.CLASSIC_SESSION_KIND_SINGLE,
            SessionKind.THRESHOLD: cpb.CLASSIC_SESSION_KIND_THRESHOLD,
            SessionKind.HANDS: cpb.CLASSIC_SESSION_KIND_HANDS,
            SessionKind.ELIMINATION: cpb.CLASSIC_SESSION_KIND_ELIMINATION,
            SessionKind.OPEN: cpb.CLASSIC_SESSION_KIND_OPEN}
_ACES_OF: dict[int, Aces] = {int(w): a for a, w in _ACES.items()}
_SCORING_OF: dict[int, Scoring] = {int(w): s for s, w in _SCORING.items()}
_SESSION_OF: dict[int, SessionKind] = {int(w): k for k, w in _SESSION.items()}
_PHASE = {"playing": cpb.CLASSIC_PHASE_PLAYING, "between": cpb.CLASSIC_PHASE_BETWEEN,
          "ended": cpb.CLASSIC_PHASE_ENDED}
_PHASE_OF: dict[int, str] = {int(w): p for p, w in _PHASE.items()}
_KIND: dict[str, pb.ClassicEventKind.ValueType] = {
    name[len("CLASSIC_EVENT_KIND_"):].lower().replace("_", "-"): value
    for name, value in pb.ClassicEventKind.items() if value}


# ---------------------------------------------------------------------------- small values
def seat_to_pb(seat: Seat | None) -> pb.Seat.ValueType:
    """p1..p6 are SEAT_P1..SEAT_P6 (the wire's Machiavelox seats are the first three)."""
    return pb.SEAT_UNSPECIFIED if seat is None else pb.Seat.ValueType(seat.value + 1)


def seat_from_pb(value: int) -> Seat:
    if not pb.SEAT_P1 <= value <= pb.SEAT_P6:
        raise invalid_argument("request/bad-seat", f"unknown seat {value}")
    return Seat(value - 1)


def card_from_pb(msg: pb.Card) -> classic.ClassicCard:
    if not 0 <= msg.index < len(classic.ALL_CLASSIC):
        raise invalid_argument("request/bad-card", f"card index {msg.index} is not 0..159")
    return classic.ALL_CLASSIC[msg.index]


def cards_to_pb(cards: tuple[classic.ClassicCard, ...]) -> list[pb.Card]:
    return [pb.Card(index=c.index) for c in cards]


def _cards_from_pb(msgs: object) -> tuple[classic.ClassicCard, ...]:
    return tuple(card_from_pb(m) for m in msgs)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- variants
def variants_from_pb(msg: cpb.ClassicVariants) -> Variants:
    """The engine's variant set; INVALID_ARGUMENT with the engine's code (``variant/...``)
    when no table can play it, or an enum value unknown to this contract."""
    aces = _known(_ACES_OF, msg.aces, Aces.LOW, "aces")
    scoring = _known(_SCORING_OF, msg.scoring, Scoring.FACE, "scoring")
    session = _known(_SESSION_OF, msg.session, SessionKind.SINGLE, "session")
    try:
        return Variants(
            players=msg.players or 4, decks=msg.decks or 2, jokers=msg.jokers, aces=aces,
            opening=msg.opening, turn_time_ms=msg.turn_time_ms,
            penalty=msg.penalty if msg.HasField("penalty") else 1, scoring=scoring,
            session=session, session_n=msg.session_n if msg.HasField("session_n") else None)
    except VariantError as err:
        raise invalid_argument(err.code, err.message) from None


def _known(table: dict[int, _E], value: int, default: _E, what: str) -> _E:
    if value == 0:
        return default
    if value not in table:
        raise invalid_argument("variant/unknown", f"unknown {what} {value}")
    return table[value]


def variants_to_pb(v: Variants) -> cpb.ClassicVariants:
    msg = cpb.ClassicVariants(players=v.players, decks=v.decks, jokers=v.jokers,
                              aces=_ACES[v.aces], opening=v.opening,
                              turn_time_ms=v.turn_time_ms, penalty=v.penalty,
                              scoring=_SCORING[v.scoring], session=_SESSION[v.session])
    if v.session_n is not None:
        msg.session_n = v.session_n
    return msg


# ---------------------------------------------------------------------------- actions
def action_from_pb(seat: Seat, msg: cpb.ClassicAction) -> classic.ClassicAction:
    """The engine action for a wire classic action by `seat`; INVALID_ARGUMENT when
    malformed (the engine judges the rest, changing nothing when it refuses)."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        raise invalid_argument("request/no-action", "the action has no verb")
    if kind == "meld":
        return classic.Meld(seat, _cards_from_pb(msg.meld.cards))
    if kind == "attach":
        if not msg.attach.HasField("card"):
            raise invalid_argument("request/no-card", "attach needs a card")
        return classic.Attach(seat, card_from_pb(msg.attach.card), int(msg.attach.meld))
    if kind == "move":
        if not msg.move.HasField("card"):
            raise invalid_argument("request/no-card", "move needs a card")
        dst = None if msg.move.to.new_meld else int(msg.move.to.meld)
        return classic.Move(seat, card_from_pb(msg.move.card), int(msg.move.from_meld), dst)
    if kind == "swap":
        card, joker = card_from_pb(msg.swap.card), card_from_pb(msg.swap.joker)
        if not isinstance(card, Card):
            raise invalid_argument("request/bad-swap", "a swap puts a natural card in")
        if not isinstance(joker, classic.Joker):
            raise invalid_argument("request/bad-swap", "a swap takes a joker (156..159) out")
        return classic.Swap(seat, card, joker, int(msg.swap.meld))
    simple = _SIMPLE.get(kind)
    if simple is None:
        raise invalid_argument("request/unknown-action", f"unknown action {kind}")
    return simple(seat)


_SIMPLE: dict[str, type[classic.End | classic.Draw | classic.Restore | classic.EndSession]] = {
    "end": classic.End, "draw": classic.Draw, "restore": classic.Restore,
    "end_session": classic.EndSession}


def action_to_pb(action: classic.ClassicAction) -> cpb.ClassicAction:
    """The wire form of a classic action (clients, bots, tests)."""
    empty = pb.Empty()
    match action:
        case classic.Meld(cards=cards):
            return cpb.ClassicAction(meld=pb.Cards(cards=cards_to_pb(cards)))
        case classic.Attach(card=card, meld=meld):
            return cpb.ClassicAction(attach=pb.CardToMeld(card=pb.Card(index=card.index),
                                                          meld=meld))
        case classic.Move(card=card, src=src, dst=dst):
            to = pb.MeldTarget(new_meld=True) if dst is None else pb.MeldTarget(meld=dst)
            return cpb.ClassicAction(move=pb.MoveCard(card=pb.Card(index=card.index),
                                                      from_meld=src, to=to))
        case classic.Swap(card=card, joker=joker, meld=meld):
            return cpb.ClassicAction(swap=cpb.ClassicSwap(card=pb.Card(index=card.index),
                                                          joker=pb.Card(index=joker.index),
                                                          meld=meld))
        case classic.End():
            return cpb.ClassicAction(end=empty)
        case classic.Draw():
            return cpb.ClassicAction(draw=empty)
        case classic.Restore():
            return cpb.ClassicAction(restore=empty)
        case classic.EndSession():
            return cpb.ClassicAction(end_session=empty)
    raise ValueError(f"no wire form for {action!r}")


# ---------------------------------------------------------------------------- events
def fill_event(msg: pb.Event, event: classic.ClassicEvent, seq: int, arrival: int = 0
               ) -> pb.Event:
    """`msg` (empty) made the wire form of a classic `event` (already redacted for its
    viewer: `ClassicEvent.for_viewer`)."""
    msg.seq = seq
    msg.at_ms = event.at_ms
    msg.kind = event.kind
    msg.classic_kind = _KIND.get(event.kind, pb.CLASSIC_EVENT_KIND_UNSPECIFIED)
    if arrival:
        msg.arrival_index = arrival
    if event.player is not None:
        msg.player = seat_to_pb(event.player)
    if event.cards:
        msg.cards.extend(cards_to_pb(event.cards))
    if event.meld:
        msg.meld = event.meld
    if event.to_meld:
        msg.to_meld = event.to_meld
    if event.count is not None:
        msg.count = event.count
    if event.detail:
        msg.detail = event.detail
    return msg


def event_to_pb(event: classic.ClassicEvent, seq: int, arrival: int = 0) -> pb.Event:
    return fill_event(pb.Event(), event, seq, arrival)


# ---------------------------------------------------------------------------- views
def view_to_pb(view: classic.ClassicView, table_id: str, variants: Variants) -> cpb.ClassicView:
    """A player's classic view on the wire: exactly what `classic.view_for` lets them see."""
    msg = cpb.ClassicView(
        table_id=table_id, viewer=seat_to_pb(view.viewer), now_ms=view.now_ms,
        phase=_PHASE[view.phase], variants=variants_to_pb(variants),
        hand_number=view.hand_number, hand=cards_to_pb(view.hand),
        seats=[cpb.ClassicSeat(seat=seat_to_pb(s.seat), eliminated=s.status == "eliminated",
                               playing=s.playing, hand_count=s.hand_count, opened=s.opened,
                               total=s.total) for s in view.seats],
        table=[cpb.ClassicMeld(id=m.id, cards=cards_to_pb(m.cards),
                               stands_for=[f or "" for f in m.stands_for],
                               kind=m.kind.value if m.kind is not None else "")
               for m in view.table],
        stock_count=view.stock_count, turn=seat_to_pb(view.turn),
        turn_started_ms=view.turn_started_ms or 0, turn_ends_ms=view.turn_ends_ms or 0,
        time_left_ms=view.time_left_ms or 0, timed=variants.timed,
        turn_changed=view.turn_changed, standings=[seat_to_pb(s) for s in view.standings])
    if view.last_hand is not None:
        msg.last_hand.CopyFrom(hand_result_to_pb(view.last_hand))
    if view.result is not None:
        msg.result.CopyFrom(session_result_to_pb(view.result))
    return msg


def view_from_pb(msg: cpb.ClassicView) -> classic.ClassicView:
    """The engine's view of a wire `ClassicView` (the inverse of `view_to_pb`, as an app or a
    bot reads it back)."""
    def seats(values: object) -> tuple[Seat, ...]:
        return tuple(seat_from_pb(v) for v in values)  # type: ignore[attr-defined]

    hand_result = None
    if msg.HasField("last_hand"):
        h = msg.last_hand
        hand_result = classic.HandResult(seats(h.winners), h.ending, tuple(h.points),
                                         tuple(h.scores))
    result = None
    if msg.HasField("result"):
        r = msg.result
        result = classic.SessionResult(seats(r.winners), tuple(r.totals), seats(r.standings),
                                       r.reason)
    turn = None if msg.turn == 0 else seat_from_pb(msg.turn)
    return classic.ClassicView(
        viewer=seat_from_pb(msg.viewer), now_ms=msg.now_ms,
        phase=_PHASE_OF.get(msg.phase, "playing"), rules="", hand_number=msg.hand_number,
        hand=_cards_from_pb(msg.hand),
        seats=tuple(classic.SeatView(seat_from_pb(s.seat),
                                     "eliminated" if s.eliminated else "active", s.playing,
                                     s.hand_count, s.opened, s.total) for s in msg.seats),
        table=tuple(classic.MeldView(m.id, _cards_from_pb(m.cards),
                                     tuple(f or None for f in m.stands_for),
                                     MeldKind(m.kind) if m.kind else None) for m in msg.table),
        stock_count=msg.stock_count, turn=turn,
        turn_started_ms=msg.turn_started_ms if turn is not None else None,
        turn_ends_ms=msg.turn_ends_ms or None, time_left_ms=msg.time_left_ms or None,
        turn_changed=msg.turn_changed, standings=seats(msg.standings),
        last_hand=hand_result, result=result)


def hand_result_to_pb(h: classic.HandResult) -> cpb.ClassicHandResult:
    return cpb.ClassicHandResult(winners=[seat_to_pb(s) for s in h.winners], ending=h.ending,
                                 points=list(h.points), scores=list(h.scores))


def session_result_to_pb(r: classic.SessionResult) -> cpb.ClassicSessionResult:
    return cpb.ClassicSessionResult(
        winners=[seat_to_pb(s) for s in r.winners], totals=list(r.totals),
        standings=[seat_to_pb(s) for s in r.standings], reason=r.reason)
