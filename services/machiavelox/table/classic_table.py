"""One classic Machiavelli table on a shard (issue 16): its session, sequencer and event log.

The classic counterpart of `host.TableHost`, with the same guarantees: one sequencer (the
shard's loop applies the table's inputs one at a time in arrival order, each accepted action
with an arrival index), every event numbered, the log redacted per seat (P5: a drawn card
only to its drawer), every input journaled as it is applied (`classic_records.py`) and
`restore` replaying the journal through the same code paths, so a restarted shard serves the
same events with the same sequence numbers. After an outage the table's clock goes on from
its last journaled instant (`resume`): a turn's time (C7) and absence (A1) count nothing of
it.

Between two hands of a session (C11) the next is dealt `BETWEEN_HANDS_MS` of table time
after the last ended (the pause in which an open session may be ended); its deal is
journaled. Each hand's result and the session's end go to scoring from the journal, as
Machiavelox results do (`classic_results.py`, `reporting.py`).
"""

from __future__ import annotations

from google.protobuf.message import Message

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, journal_pb2, scoring_pb2, table_pb2
from machiavelox.classic import ClassicDeal, ClassicEvent, Seat, Session, Variants

from . import classic_records as crec
from . import records
from .classic_results import ClassicOutcome, ClassicResults
from .records import Recorder
from .sequencer import Applied, Decoded, Sequencer, wrong_ruleset

BETWEEN_HANDS_MS = 10_000  # the pause between two hands of a session (table time)
INTERRUPTED = "interrupted"  # a table that no shard served for a while


class ClassicHost(Sequencer[ClassicEvent, ClassicDeal]):
    ruleset = classic_pb2.RULESET_CLASSIC
    DEAL_RECORD = "classic_deal"
    REPORTS_IN_ORDER = True  # each report holds the whole session so far

    def __init__(self, table_id: str, players: list[str], variants: Variants,
                 competitive: bool, created_wall_ms: int, deal: ClassicDeal | None = None,
                 time_scale: float = 1.0, journal: Recorder | None = None) -> None:
        if len(players) != variants.players or len(set(players)) != len(players):
            raise ValueError(f"this classic table seats {variants.players} different players "
                             f"(C1), not {len(players)} ids")
        first = deal if deal is not None else classic.shuffled_deal(variants)
        super().__init__(table_id, players, {p: Seat(i) for i, p in enumerate(players)},
                         competitive, created_wall_ms, first, time_scale, journal)
        self.variants = variants
        self.session = Session(variants, first, start_ms=0)
        self.results = ClassicResults()
        self.journal.add(crec.opened(self.players, variants, competitive, created_wall_ms,
                                     time_scale, first))
        self._record(list(self.session.hand.events))  # the first turn (C4)

    @classmethod
    def restore(cls, table_id: str, data: bytes | bytearray,
                journal: Recorder | None = None) -> ClassicHost:
        """As `TableHost.restore` (`Sequencer._replayed`)."""
        def make(head: journal_pb2.TableOpened) -> ClassicHost:
            return cls(table_id, list(head.player_ids), crec.variants_from_record(head.classic),
                       head.competitive, head.origin_ms, crec.deal_from_record(head.classic_deal),
                       head.time_scale or 1.0, records.NoRecorder())
        host = cls._replayed(table_id, data, make,
                             lambda r: crec.deal_from_record(r.classic_deal), journal)
        host.results.stored(host.reported)
        return host

    # ------------------------------------------------------------------ the engine
    @property
    def now_ms(self) -> int:
        return self.session.now_ms

    def _pass_time(self, now: int) -> list[tuple[int, ClassicEvent]]:
        """Time passes to `now`: turns run out, and a session's next hand is dealt when due."""
        out = self._record(self.session.advance(now))
        due = self._deal_due()
        if due is not None and due <= now:
            deal = self._next_deal(
                lambda: classic.shuffled_deal(self.variants, playing=self.session.active),
                crec.next_deal)
            self.deals.append(deal)
            out += self._record(self.session.deal_next(deal, now))
        return out

    def _engine_apply(self, action: classic.ClassicAction, now: int) -> list[ClassicEvent]:
        return self.session.apply(action, now)

    def _input_record(self, arrival: int, now: int, action: classic.ClassicAction,
                      wire: classic_pb2.ClassicAction | None, action_id: str, refused: bool
                      ) -> journal_pb2.JournalRecord:
        return crec.action_input(arrival, now, action, self.seq, wire, action_id,
                                 refused=refused)

    def _action_from_record(self, entry: journal_pb2.InputRecord) -> classic.ClassicAction:
        return crec.action_from_record(entry)

    def _interrupted(self, at: int, detail: str) -> ClassicEvent:
        return ClassicEvent(INTERRUPTED, at, detail=detail)

    def _is_presence(self, action: classic.ClassicAction) -> bool:
        return isinstance(action, classic.Liveness)

    def _after_step(self) -> None:
        self.results.note(self.session, self.journal)  # (after its journal record)

    def mark_reported(self, number: int) -> None:
        super().mark_reported(number)
        self.results.stored(self.reported)

    def next_deadline(self) -> int | None:
        """Table time of the next thing that happens by itself: a turn's end (C7, A1) or the
        next hand's deal."""
        due = self._deal_due()
        return due if due is not None else self.session.next_deadline()

    def next_wall_deadline(self) -> int | None:
        return self.wall_of(self.next_deadline())

    def _deal_due(self) -> int | None:
        s = self.session
        if s.phase != "between":
            return None
        ended = s.hand.ended_ms if s.hand.ended_ms is not None else s.hand.now_ms
        return ended + BETWEEN_HANDS_MS

    # ------------------------------------------------------------------ the wire
    def decode(self, player_id: str, req: table_pb2.ActionRequestItem) -> Decoded:
        if not req.HasField("classic_action"):
            raise wrong_ruleset("classic Machiavelli", "`classic_action`")
        wire = req.classic_action
        action = classic_codec.action_from_pb(self.seats[player_id], wire)
        return Decoded(action, wire, "classic-" + (wire.WhichOneof("kind") or ""))

    def liveness(self, player_id: str, kind: str, since_wall_ms: int | None,
                 wall_ms: int) -> Applied[ClassicEvent]:
        """What presence says of a player (absence.py: alive, silent, unknown)."""
        seat = self.seats[player_id]
        action = classic.Liveness(seat, kind == "alive", unknown=kind == "unknown")
        return self.apply(player_id, action, wall_ms)

    # ------------------------------------------------------------------ reading
    @staticmethod
    def fill_event(msg: common_pb2.Event, event: ClassicEvent, seq: int, arrival: int = 0
                   ) -> common_pb2.Event:
        return classic_codec.fill_event(msg, event, seq, arrival)

    def view(self, seat: Seat | None) -> classic.ClassicView:
        return classic.view_for(self.session, seat)

    def snapshot_fields(self, player_id: str) -> dict[str, Message]:
        view = classic_codec.view_to_pb(self.view(self.seats[player_id]), self.table_id,
                                        self.variants)
        return {"classic_snapshot": classic_pb2.ClassicSnapshot(view=view, seq=self.seq)}

    @property
    def finished(self) -> bool:
        return self.session.result is not None

    @property
    def settled(self) -> bool:
        """Ended, and every report stored in scoring."""
        return self.finished and self.reported >= self.results.last

    def smazzate_to_report(self) -> list[tuple[int, ClassicOutcome]]:
        """The reports not yet sent whose journal records are stored: (number, outcome)."""
        return self.results.due(self.reporting, self.journal)

    def report_request(self, number: int, result: ClassicOutcome
                       ) -> tuple[scoring_pb2.ReportResultRequest, str]:
        """A classic table's report: the session so far (scoring.proto, `ClassicResult`)."""
        seats = classic_codec.seat_to_pb
        request = scoring_pb2.ReportResultRequest(
            table_id=self.table_id, player_ids=self.players,
            ruleset=classic_pb2.RULESET_CLASSIC, match_ended=result.session is not None,
            classic=scoring_pb2.ClassicResult(
                report=result.number, variants=classic_codec.variants_to_pb(self.variants),
                hands=[classic_codec.hand_result_to_pb(h) for h in result.hands],
                totals=list(result.totals), standings=[seats(s) for s in result.standings],
                eliminated=[seats(s) for s in result.eliminated],
                session=(classic_codec.session_result_to_pb(result.session)
                         if result.session is not None else None),
                competitive=self.competitive))
        summary = (f"classic report {number}: {len(result.hands)} hands, totals "
                   f"{list(result.totals)}{'; session over' if result.session else ''}")
        return request, summary
