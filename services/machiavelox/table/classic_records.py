"""A classic table's journal records (journal.proto): its opening (variants and first deal),
the next hands' deals, and its inputs. The framing and the records both rulesets share
(advanced, interrupted, closed) are `records.py`'s.
"""

from __future__ import annotations

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, journal_pb2
from machiavelox.classic import ClassicDeal, Seat, Variants

from .records import JournalCorruptError, input_record


def _cards(cards: tuple[classic.ClassicCard, ...]) -> journal_pb2.CardList:
    return journal_pb2.CardList(cards=[c.index for c in cards])


def _card_tuple(cards: journal_pb2.CardList) -> tuple[classic.ClassicCard, ...]:
    try:
        return tuple(classic.card_at(i) for i in cards.cards)
    except ValueError as err:
        raise JournalCorruptError(str(err)) from None


def deal_to_record(deal: ClassicDeal) -> journal_pb2.ClassicDealRecord:
    return journal_pb2.ClassicDealRecord(
        hands=[_cards(h) for h in deal.hands], stock=_cards(deal.stock),
        table=[_cards(m) for m in deal.table], first=classic_codec.seat_to_pb(deal.first),
        opened=[classic_codec.seat_to_pb(s) for s in sorted(deal.opened)],
        totals=[journal_pb2.ClassicTotal(seat=classic_codec.seat_to_pb(s), points=p)
                for s, p in deal.totals])


def deal_from_record(msg: journal_pb2.ClassicDealRecord) -> ClassicDeal:
    try:
        return ClassicDeal(
            hands=tuple(_card_tuple(h) for h in msg.hands), stock=_card_tuple(msg.stock),
            table=tuple(_card_tuple(m) for m in msg.table), first=_seat(msg.first),
            opened=frozenset(_seat(s) for s in msg.opened),
            totals=tuple((_seat(t.seat), t.points) for t in msg.totals))
    except ValueError as err:
        raise JournalCorruptError(f"a classic deal does not decode: {err}") from None


def _seat(value: int) -> Seat:
    if not 1 <= value <= len(classic.ALL_SEATS):
        raise JournalCorruptError(f"unknown seat {value}")
    return Seat(value - 1)


def opened(players: list[str], variants: Variants, competitive: bool, origin_ms: int,
           time_scale: float, deal: ClassicDeal) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(opened=journal_pb2.TableOpened(
        player_ids=players, competitive=competitive, origin_ms=origin_ms,
        time_scale=time_scale, ruleset=classic_pb2.RULESET_CLASSIC,
        classic=classic_codec.variants_to_pb(variants), classic_deal=deal_to_record(deal)))


def variants_from_record(msg: classic_pb2.ClassicVariants) -> Variants:
    try:
        return classic_codec.variants_from_pb(msg)
    except Exception as err:  # (a ServiceError: the variants this shard wrote are valid)
        raise JournalCorruptError(f"the journaled variants do not make a table: {err}") from None


def next_deal(deal: ClassicDeal) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(classic_deal=deal_to_record(deal))


def action_input(arrival: int, at_ms: int, action: classic.ClassicAction, seq: int,
                 wire: classic_pb2.ClassicAction | None = None, action_id: str = "",
                 refused: bool = False) -> journal_pb2.JournalRecord:
    """As `records.action_input`, for a classic action or presence change."""
    record, entry = input_record(arrival, at_ms, seq, classic_codec.seat_to_pb(action.player),
                                 action_id, refused)
    if isinstance(action, classic.Liveness):
        entry.liveness.alive = action.alive
        if action.unknown:
            entry.liveness.unknown = True
    else:
        entry.classic_action.CopyFrom(wire if wire is not None
                                      else classic_codec.action_to_pb(action))
    return record


def action_from_record(entry: journal_pb2.InputRecord) -> classic.ClassicAction:
    seat = _seat(entry.seat)
    kind = entry.WhichOneof("kind")
    if kind == "liveness":
        return classic.Liveness(seat, entry.liveness.alive, entry.liveness.unknown)
    if kind != "classic_action":
        raise JournalCorruptError(f"a classic table's input is {kind}")
    try:
        return classic_codec.action_from_pb(seat, entry.classic_action)
    except Exception as err:  # (a ServiceError: what this shard wrote decodes)
        raise JournalCorruptError(f"a journaled classic action does not decode: {err}") \
            from None
