"""The rulesets a shard hosts, behind one interface: a Machiavelox table (`host.TableHost`) or
a classic Machiavelli one (`classic_table.ClassicHost`, issue 16).

The shard, its fan-out, journal, retention and recovery speak only `Host`: each table decodes
its own actions, encodes its own events and snapshots and makes its own presence inputs, so
nothing outside the two hosts asks which rules a table plays. Seats, actions and events are
the ruleset's own values (`Any` here: the shard only passes them back to the table, or to
`fill_event`), players are ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol

from google.protobuf.message import Message

from machiavelox._gen.v1 import classic_pb2, common_pb2, scoring_pb2, table_pb2

from .answers import Answer
from .classic_table import ClassicHost
from .host import TableHost
from .records import JournalCorruptError, Recorder, iter_records
from .sequencer import Applied, Decoded


class Host(Protocol):
    """What a shard needs of one of its tables."""

    table_id: str
    players: list[str]
    competitive: bool
    journal: Recorder
    closed: str
    reported: int
    reporting: int

    @property
    def seats(self) -> Mapping[str, Any]: ...
    @property
    def events(self) -> Sequence[Any]:
        """The table's events (seq = index + 1), unredacted."""
    def view(self, seat: Any) -> Any:
        """What `seat` sees of the table now (the ruleset's view)."""
    @property
    def seq(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def settled(self) -> bool: ...
    @property
    def played_at(self) -> bool:
        """A player has acted (an accepted action, presence apart)."""
    def decode(self, player_id: str, req: table_pb2.ActionRequestItem) -> Decoded: ...
    def apply(self, player_id: str, action: Any, wall_ms: int, wire: Any = None,
              action_id: str = "") -> Applied[Any]: ...
    def liveness(self, player_id: str, kind: str, since_wall_ms: int | None,
                 wall_ms: int) -> Applied[Any]:
        """What presence says of a player (`kind`: alive, unknown, silent since)."""
    def answered(self, player_id: str, action_id: str) -> Answer | None: ...
    def advance(self, wall_ms: int) -> list[tuple[int, Any]]: ...
    def next_wall_deadline(self) -> int | None: ...
    def resume(self, wall_ms: int) -> list[tuple[int, Any]]: ...
    def close(self, reason: str = "ended") -> None: ...
    def arrival_of(self, seq: int) -> int: ...
    def events_for(self, player_id: str, seq: int, limit: int | None = None
                   ) -> list[tuple[int, Any]]: ...
    def fill_event(self, msg: common_pb2.Event, event: Any, seq: int,
                   arrival: int = 0) -> common_pb2.Event: ...
    def snapshot_fields(self, player_id: str) -> dict[str, Message]:
        """What a resume from nothing gets, as the fields of its `ShardItem`."""
    REPORTS_IN_ORDER: ClassVar[bool]
    def smazzate_to_report(self) -> list[tuple[int, Any]]: ...
    def report_request(self, number: int, result: Any
                       ) -> tuple[scoring_pb2.ReportResultRequest, str]: ...
    def mark_reported(self, number: int) -> None: ...


def ruleset_of(data: bytes | bytearray) -> int:
    """The ruleset a table's journal opens with (RULESET_UNSPECIFIED: Machiavelox)."""
    for record in iter_records(data):
        if record.WhichOneof("kind") != "opened":
            break
        return int(record.opened.ruleset)
    raise JournalCorruptError("the journal does not open the table")


def restore(table_id: str, data: bytes | bytearray, journal: Recorder | None = None) -> Host:
    """The table its journal `data` leaves, whichever rules it plays."""
    if ruleset_of(data) == classic_pb2.RULESET_CLASSIC:
        return ClassicHost.restore(table_id, data, journal)
    return TableHost.restore(table_id, data, journal)
