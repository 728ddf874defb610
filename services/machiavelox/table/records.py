"""A table's journal records (journal.proto), as the bytes a `Recorder` keeps: how each input
of a table is written down and read back. No I/O here: `journal.py` stores the bytes.

A table's journal is a sequence of `JournalRecord`s, each prefixed by its length (a varint).
The recorder keeps a table's whole journal in memory (a few KiB a match), with the offset up
to which it is durable: what follows it is in the write in flight or the next one, and is cut
off if that write fails (`truncate`), so the table can be rebuilt from what is durable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, journal_pb2, table_pb2

KINDS = {rules.MatchKind.SINGLE: table_pb2.MATCH_KIND_SINGLE,
         rules.MatchKind.LONG: table_pb2.MATCH_KIND_LONG}
_KIND_OF: dict[int, rules.MatchKind] = {int(wire): kind for kind, wire in KINDS.items()}


class JournalCorruptError(ValueError):
    """A journal's bytes do not decode (a truncated or foreign record)."""


# ---------------------------------------------------------------------------- framing
def delimited(record: journal_pb2.JournalRecord) -> bytes:
    body = record.SerializeToString()
    return _varint(len(body)) + body


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def iter_records(data: bytes | bytearray | memoryview) -> Iterator[journal_pb2.JournalRecord]:
    """The records of `data` (length-delimited), in order."""
    view = memoryview(data)
    pos, end = 0, len(view)
    while pos < end:
        size = shift = 0
        while True:
            if pos >= end or shift > 63:
                raise JournalCorruptError("a record's length is cut off")
            byte = view[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if pos + size > end:
            raise JournalCorruptError("a record is cut off")
        record = journal_pb2.JournalRecord()
        try:
            record.ParseFromString(view[pos:pos + size].tobytes())
        except Exception as err:  # (protobuf's DecodeError)
            raise JournalCorruptError(f"a record does not decode: {err}") from None
        pos += size
        yield record


class Recorder:
    """One table's journal: its records' bytes, and how much of them is durable."""

    __slots__ = ("data", "durable", "on_record")
    recording = True  # False: records are not kept (callers may skip building them)

    def __init__(self, on_record: Callable[[], None] | None = None) -> None:
        self.data = bytearray()
        self.durable = 0  # bytes of `data` known stored
        self.on_record = on_record  # told (once per record) that the table has new records

    def add(self, record: journal_pb2.JournalRecord) -> None:
        self.data += delimited(record)
        if self.on_record is not None:
            self.on_record()

    @property
    def unwritten(self) -> bool:
        return len(self.data) > self.durable

    def truncate(self) -> None:
        """Forget what is not durable (its write failed)."""
        del self.data[self.durable:]


class NoRecorder(Recorder):
    """The journal turned off (benchmarks), or a table being replayed: nothing is kept."""

    __slots__ = ()
    recording = False

    def add(self, record: journal_pb2.JournalRecord) -> None:
        return


# ---------------------------------------------------------------------------- deals
def _cards(cards: tuple[rules.Card, ...]) -> journal_pb2.CardList:
    return journal_pb2.CardList(cards=[c.index for c in cards])


def _card_tuple(cards: journal_pb2.CardList) -> tuple[rules.Card, ...]:
    return tuple(rules.ALL_CARDS[i] for i in cards.cards)


def deal_to_record(deal: rules.Deal) -> journal_pb2.DealRecord:
    return journal_pb2.DealRecord(
        removed=_cards(deal.removed), talloni=[_cards(t) for t in deal.talloni],
        hands=[_cards(h) for h in deal.hands], table=[_cards(m) for m in deal.table],
        drawn=[codec.seat_to_pb(s) for s in sorted(deal.drawn)],
        direct_meld=[codec.seat_to_pb(s) for s in sorted(deal.direct_meld)])


def _three(lists: object) -> tuple[tuple[rules.Card, ...], tuple[rules.Card, ...],
                                   tuple[rules.Card, ...]]:
    groups = [_card_tuple(c) for c in lists]  # type: ignore[attr-defined]
    if len(groups) != 3:
        raise JournalCorruptError("a deal needs three talloni and three hands")
    return groups[0], groups[1], groups[2]


def deal_from_record(msg: journal_pb2.DealRecord) -> rules.Deal:
    return rules.Deal(
        removed=_card_tuple(msg.removed), talloni=_three(msg.talloni), hands=_three(msg.hands),
        table=tuple(_card_tuple(m) for m in msg.table),
        drawn=frozenset(codec.seat_from_pb(s) for s in msg.drawn),
        direct_meld=frozenset(codec.seat_from_pb(s) for s in msg.direct_meld))


# ---------------------------------------------------------------------------- records
def opened(players: list[str], kind: rules.MatchKind, competitive: bool, origin_ms: int,
           time_scale: float, deal: rules.Deal) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(opened=journal_pb2.TableOpened(
        player_ids=players, kind=KINDS[kind], competitive=competitive, origin_ms=origin_ms,
        time_scale=time_scale, deal=deal_to_record(deal)))


def kind_from_record(wire: int) -> rules.MatchKind:
    kind = _KIND_OF.get(wire)
    if kind is None:
        raise JournalCorruptError(f"unknown match kind {wire}")
    return kind


def next_deal(deal: rules.Deal) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(deal=deal_to_record(deal))


def input_record(arrival: int, at_ms: int, seq: int, seat: common_pb2.Seat.ValueType,
                 action_id: str, refused: bool
                 ) -> tuple[journal_pb2.JournalRecord, journal_pb2.InputRecord]:
    """An input record of either ruleset but for what was input (filled in by the caller):
    its arrival, table time, the last event's seq after it, the seat, the app's idempotency
    key, and whether it was refused."""
    record = journal_pb2.JournalRecord()
    entry = record.input
    entry.arrival = arrival
    entry.at_ms = at_ms
    entry.seq = seq
    if refused:
        entry.refused = True
    if action_id:
        entry.client_action_id = action_id
    entry.seat = seat
    return record, entry


def action_input(arrival: int, at_ms: int, action: rules.Action, seq: int,
                 wire: common_pb2.Action | None = None, action_id: str = "",
                 refused: bool = False) -> journal_pb2.JournalRecord:
    """An input after which the table's last event is `seq`: accepted, or `refused` while
    the table's clock moved. `wire`: the action as it came (saves encoding it again);
    `action_id`: the app's idempotency key (answers.py)."""
    record, entry = input_record(arrival, at_ms, seq, codec.seat_to_pb(action.player),
                                 action_id, refused)
    if isinstance(action, rules.Liveness):
        entry.liveness.alive = action.alive
        if action.unknown:
            entry.liveness.unknown = True
        if action.since_ms is not None:
            entry.liveness.since_ms = action.since_ms
    else:
        entry.action.CopyFrom(wire if wire is not None else codec.action_to_pb(action))
    return record


def action_from_record(entry: journal_pb2.InputRecord) -> rules.Action:
    seat = codec.seat_from_pb(entry.seat)
    if entry.WhichOneof("kind") == "liveness":
        since = entry.liveness.since_ms if entry.liveness.HasField("since_ms") else None
        return rules.Liveness(seat, entry.liveness.alive, since, entry.liveness.unknown)
    return codec.action_from_pb(seat, entry.action)


def advanced(at_ms: int, seq: int) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(advanced=journal_pb2.Advanced(at_ms=at_ms, seq=seq))


def interrupted(at_ms: int, duration_ms: int, origin_ms: int) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(interrupted=journal_pb2.Interrupted(
        at_ms=at_ms, duration_ms=duration_ms, origin_ms=origin_ms))


def reported(smazzata: int) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(reported=journal_pb2.Reported(smazzata=smazzata))


def closed(reason: str) -> journal_pb2.JournalRecord:
    return journal_pb2.JournalRecord(closed=journal_pb2.Closed(reason=reason))
