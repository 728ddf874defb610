"""One Machiavelox table on a shard: the match behind the shard's sequencer (`sequencer.py`:
arrival order, the numbered event log, the journal and its replay, shared with classic
tables), its journal records (`records.py`) and its wire encoding (`codec.py`).
"""

from __future__ import annotations

from google.protobuf.message import Message

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, journal_pb2, scoring_pb2, table_pb2
from machiavelox.rules import view_for

from . import records
from .records import Recorder
from .sequencer import Applied, Decoded, Sequencer, wrong_ruleset

INTERRUPTED = rules.EventKind.INTERRUPTED  # a table that no shard served for a while
_KIND = {rules.MatchKind.SINGLE: table_pb2.MATCH_KIND_SINGLE,
         rules.MatchKind.LONG: table_pb2.MATCH_KIND_LONG}


class TableHost(Sequencer[rules.Event, rules.Deal]):
    def __init__(self, table_id: str, players: list[str], kind: rules.MatchKind,
                 competitive: bool, created_wall_ms: int, deal: rules.Deal | None = None,
                 time_scale: float = 1.0, journal: Recorder | None = None) -> None:
        if len(players) != 3 or len(set(players)) != 3:
            raise ValueError("a table seats three different players (M1.5)")
        first = deal if deal is not None else rules.shuffled_deal()
        super().__init__(table_id, players, {p: rules.Seat(i) for i, p in enumerate(players)},
                         competitive, created_wall_ms, first, time_scale, journal)
        self.kind = kind
        self.match = rules.Match(kind, first, start_ms=0)
        # per ended smazzata: how much of the journal holds its end (0: replayed, durable)
        self._result_ends: list[int] = []
        self.journal.add(records.opened(self.players, kind, competitive, created_wall_ms,
                                        time_scale, first))

    @classmethod
    def restore(cls, table_id: str, data: bytes | bytearray,
                journal: Recorder | None = None) -> TableHost:
        """The table as its journal `data` leaves it (`Sequencer._replayed`)."""
        def make(head: journal_pb2.TableOpened) -> TableHost:
            return cls(table_id, list(head.player_ids), records.kind_from_record(head.kind),
                       head.competitive, head.origin_ms, records.deal_from_record(head.deal),
                       head.time_scale or 1.0, records.NoRecorder())
        return cls._replayed(table_id, data, make, lambda r: records.deal_from_record(r.deal),
                             journal)

    # ------------------------------------------------------------------ the engine
    @property
    def now_ms(self) -> int:
        return self.match.now_ms

    def _pass_time(self, now: int) -> list[tuple[int, rules.Event]]:
        return self._record(self.match.advance(now))

    def _engine_apply(self, action: rules.Action, now: int) -> list[rules.Event]:
        return self.match.apply(action, now)

    def _input_record(self, arrival: int, now: int, action: rules.Action,
                      wire: common_pb2.Action | None, action_id: str, refused: bool
                      ) -> journal_pb2.JournalRecord:
        return records.action_input(arrival, now, action, self.seq, wire, action_id,
                                    refused=refused)

    def _action_from_record(self, entry: journal_pb2.InputRecord) -> rules.Action:
        return records.action_from_record(entry)

    def _interrupted(self, at: int, detail: str) -> rules.Event:
        return rules.Event(INTERRUPTED, at, detail=detail)

    def _is_presence(self, action: rules.Action) -> bool:
        return isinstance(action, rules.Liveness)

    def _after_step(self) -> None:
        """The smazzate the step ended are reportable once the journal is stored that far
        (`smazzate_to_report`)."""
        ended = sum(1 for table in self.match.smazzate if table.result is not None)
        while len(self._result_ends) < ended:
            self._result_ends.append(len(self.journal.data) if self.journal.recording else 0)

    def _recorded(self) -> None:
        """A long match in its pause gets its next deal at once; it starts when the pause ends."""
        m = self.match
        if m.needs_deal:
            deal = self._next_deal(rules.shuffled_deal, records.next_deal)
            self.deals.append(deal)
            m.deal_next(deal, m.now_ms)

    def next_wall_deadline(self) -> int | None:
        return self.wall_of(self.match.next_deadline())

    # ------------------------------------------------------------------ the wire
    def decode(self, player_id: str, req: table_pb2.ActionRequestItem) -> Decoded:
        """A relayed action, decoded for the player's seat; INVALID_ARGUMENT if malformed."""
        if req.HasField("classic_action"):
            raise wrong_ruleset("Machiavelox", "`action`")
        action = codec.action_from_pb(self.seats[player_id], req.action)
        return Decoded(action, req.action, req.action.WhichOneof("kind") or "")

    def liveness(self, player_id: str, kind: str, since_wall_ms: int | None,
                 wall_ms: int) -> Applied[rules.Event]:
        """What presence says of a player now (`kind`: alive, unknown, or silent since)."""
        seat = self.seats[player_id]
        if kind == "alive":
            action = rules.Liveness(seat, True)
        elif kind == "unknown":
            action = rules.Liveness(seat, False, unknown=True)
        else:
            since = None if since_wall_ms is None else self.to_table_ms(since_wall_ms)
            action = rules.Liveness(seat, False, since)
        return self.apply(player_id, action, wall_ms)

    # ------------------------------------------------------------------ reading
    @staticmethod
    def fill_event(msg: common_pb2.Event, event: rules.Event, seq: int, arrival: int = 0
                   ) -> common_pb2.Event:
        return codec.fill_event(msg, event, seq, arrival)

    def view(self, seat: rules.Seat) -> rules.PlayerView:
        return view_for(self.match.table, seat)

    def snapshot_fields(self, player_id: str) -> dict[str, Message]:
        """What `player` sees of the table now, as a resume from nothing gets it."""
        view = codec.view_to_pb(self.view(self.seats[player_id]), self.table_id,
                                self.match.phase, self.statuses())
        return {"snapshot": common_pb2.Snapshot(view=view, seq=self.seq)}

    def statuses(self) -> list[str]:
        return [self.match.status_word(s) for s in rules.SEATS]

    @property
    def finished(self) -> bool:
        return self.match.result is not None

    @property
    def settled(self) -> bool:
        """Ended, and every result stored in scoring."""
        return self.finished and self.reported >= len(self.match.smazzate)

    def smazzate_to_report(self) -> list[tuple[int, rules.SmazzataResult]]:
        """Ended smazzate whose report has not been sent and whose end is stored in the
        journal (a write in flight may hold it; a failed one undoes it): (number from 1,
        result)."""
        out = []
        for number, table in enumerate(self.match.smazzate, 1):
            if number <= self.reporting or table.result is None:
                continue
            if self.journal.recording and self._result_ends[number - 1] > self.journal.durable:
                break  # (in order: the later ones are not stored either)
            out.append((number, table.result))
        return out

    def report_request(self, number: int, result: rules.SmazzataResult
                       ) -> tuple[scoring_pb2.ReportResultRequest, str]:
        request = scoring_pb2.ReportResultRequest(
            table_id=self.table_id, smazzata=number, kind=_KIND[self.kind],
            competitive=self.competitive, player_ids=self.players,
            result=codec.result_to_pb(result),
            match_ended=self.finished and number == len(self.match.smazzate))
        return request, f"smazzata {number} ended: {result.summary()}"
