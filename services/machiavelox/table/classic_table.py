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

from array import array
from collections import deque

from google.protobuf.message import Message

from machiavelox import classic, classic_codec, rules
from machiavelox._gen.v1 import classic_pb2, common_pb2, journal_pb2, table_pb2
from machiavelox.classic import ClassicDeal, ClassicEvent, Seat, Session, Variants

from . import classic_records as crec
from . import records
from .answers import Answer, Answers
from .classic_results import ClassicOutcome, ClassicResults
from .host import Applied, Decoded, wrong_ruleset
from .records import JournalCorruptError, Recorder

BETWEEN_HANDS_MS = 10_000  # the pause between two hands of a session (table time)
INTERRUPTED = "interrupted"  # a table that no shard served for a while


class ClassicHost:
    ruleset = classic_pb2.RULESET_CLASSIC

    def __init__(self, table_id: str, players: list[str], variants: Variants,
                 competitive: bool, created_wall_ms: int, deal: ClassicDeal | None = None,
                 time_scale: float = 1.0, journal: Recorder | None = None) -> None:
        if len(players) != variants.players or len(set(players)) != len(players):
            raise ValueError(f"this classic table seats {variants.players} different players "
                             f"(C1), not {len(players)} ids")
        self.table_id = table_id
        self.players = list(players)
        self.seats = {p: Seat(i) for i, p in enumerate(players)}
        self.variants = variants
        self.competitive = competitive
        self.origin_ms = created_wall_ms  # table time 0
        self.time_scale = time_scale
        first = deal if deal is not None else classic.shuffled_deal(variants)
        self.deals: list[ClassicDeal] = [first]
        self.session = Session(variants, first, start_ms=0)
        self.log: list[tuple[int, int, str, classic.ClassicAction]] = []
        self.events: list[ClassicEvent] = []  # seq = index + 1
        self._arrivals = array("Q")
        self.arrivals = 0
        self.answers = Answers()
        self.reported = 0  # reports whose result scoring has stored (journaled)
        self.reporting = 0  # reports sent (in flight or stored)
        self.results = ClassicResults()
        self.closed = ""
        self._deals: deque[ClassicDeal] | None = None  # while replaying: the journaled deals
        self.journal = journal if journal is not None else Recorder()
        self.journal.add(crec.opened(self.players, variants, competitive, created_wall_ms,
                                     time_scale, first))
        self._record(list(self.session.hand.events))  # the first turn (C4)

    @classmethod
    def restore(cls, table_id: str, data: bytes | bytearray,
                journal: Recorder | None = None) -> ClassicHost:
        """As `TableHost.restore`: the table its journal leaves, replayed through the
        engine; JournalCorruptError when it does not replay."""
        recs = list(records.iter_records(data))
        if not recs or recs[0].WhichOneof("kind") != "opened":
            raise JournalCorruptError(f"the journal of {table_id} does not open the table")
        head = recs[0].opened
        host = cls(table_id, list(head.player_ids), crec.variants_from_record(head.classic),
                   head.competitive, head.origin_ms, crec.deal_from_record(head.classic_deal),
                   head.time_scale or 1.0, records.NoRecorder())
        host._deals = deque(crec.deal_from_record(r.classic_deal) for r in recs
                            if r.WhichOneof("kind") == "classic_deal")
        for record in recs[1:]:
            host._replay(record)
        host._deals = None
        host.journal = journal if journal is not None else Recorder()
        host.journal.data[:] = data
        host.journal.durable = len(data)
        host.reporting = host.reported
        host.results.stored(host.reported)
        return host

    def _replay(self, record: journal_pb2.JournalRecord) -> None:
        kind = record.WhichOneof("kind")
        if kind == "input":
            entry = record.input
            action = crec.action_from_record(entry)
            done = self._apply_at(self.players[action.player], action, entry.at_ms,
                                  int(entry.arrival), action_id=entry.client_action_id)
            if (done.error is not None) != entry.refused:
                raise JournalCorruptError(f"{self.table_id}: journaled input {entry.arrival} "
                                          f"is not judged alike on replay ({done.error})")
            self._check(entry.seq)
        elif kind == "advanced":
            self._advance(record.advanced.at_ms)
            self._check(record.advanced.seq)
            self.results.note(self.session, self.journal)
        elif kind == "interrupted":
            gap = record.interrupted
            self._interrupt(gap.at_ms, gap.duration_ms, gap.origin_ms)
        elif kind == "reported":
            self.reported = max(self.reported, record.reported.smazzata)
        elif kind == "closed":
            self.closed = record.closed.reason or "ended"
        elif kind != "classic_deal":
            raise JournalCorruptError(f"{self.table_id}: unknown record {kind}")

    def _check(self, seq: int) -> None:
        if seq != self.seq:
            raise JournalCorruptError(f"{self.table_id}: replayed to event {self.seq} where "
                                      f"the journal says {seq}")

    # ------------------------------------------------------------------ time
    def table_ms(self, wall_ms: int) -> int:
        return max(self.to_table_ms(wall_ms), self.session.now_ms)

    def to_table_ms(self, wall_ms: int) -> int:
        return int((wall_ms - self.origin_ms) * self.time_scale)

    def next_deadline(self) -> int | None:
        """Table time of the next thing that happens by itself: a turn's end (C7, A1) or the
        next hand's deal."""
        due = self._deal_due()
        return due if due is not None else self.session.next_deadline()

    def next_wall_deadline(self) -> int | None:
        at = self.next_deadline()
        return None if at is None else self.origin_ms + int(-(-at // self.time_scale))

    def _deal_due(self) -> int | None:
        s = self.session
        if s.phase != "between":
            return None
        ended = s.hand.ended_ms if s.hand.ended_ms is not None else s.hand.now_ms
        return ended + BETWEEN_HANDS_MS

    def _advance(self, now: int) -> list[tuple[int, ClassicEvent]]:
        """Time passes to `now`: turns run out, and a session's next hand is dealt when due."""
        out = self._record(self.session.advance(now))
        due = self._deal_due()
        if due is not None and due <= now:
            deal = self._next_deal()
            self.deals.append(deal)
            out += self._record(self.session.deal_next(deal, now))
        return out

    def _next_deal(self) -> ClassicDeal:
        if self._deals is not None:  # replaying: the deal that was drawn
            if not self._deals:
                raise JournalCorruptError(f"{self.table_id}: a journaled deal is missing")
            return self._deals.popleft()
        deal = classic.shuffled_deal(self.variants, playing=self.session.active)
        self.journal.add(crec.next_deal(deal))
        return deal

    # ------------------------------------------------------------------ sequencer
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

    @property
    def played_at(self) -> bool:
        return any(not isinstance(a, classic.Liveness) for *_, a in self.log)

    def apply(self, player_id: str, action: classic.ClassicAction, wall_ms: int,
              wire: classic_pb2.ClassicAction | None = None, action_id: str = ""
              ) -> Applied[ClassicEvent]:
        return self._apply_at(player_id, action, self.table_ms(wall_ms), self.arrivals + 1,
                              wire, action_id)

    def answered(self, player_id: str, action_id: str) -> Answer | None:
        return self.answers.get(self.seats[player_id], action_id)

    def _apply_at(self, player_id: str, action: classic.ClassicAction, now: int, arrival: int,
                  wire: classic_pb2.ClassicAction | None = None, action_id: str = ""
                  ) -> Applied[ClassicEvent]:
        done = self._judge(player_id, action, now, arrival, wire, action_id)
        self.results.note(self.session, self.journal)  # (after its journal record)
        return done

    def _judge(self, player_id: str, action: classic.ClassicAction, now: int, arrival: int,
               wire: classic_pb2.ClassicAction | None, action_id: str) -> Applied[ClassicEvent]:
        self.arrivals = arrival
        was = self.session.now_ms
        done: Applied[ClassicEvent] = Applied(arrival, events=self._advance(now))
        try:
            produced = self.session.apply(action, now)
        except rules.RulesError as err:  # nothing changed but the clock (and its timers)
            done.error = err.with_traceback(None)
            if self.journal.recording and (self.session.now_ms != was or done.events):
                self.journal.add(crec.action_input(arrival, now, action, self.seq, wire,
                                                   action_id, refused=True))
            if action_id:
                self.answers.remember(action.player, action_id,
                                      Answer(now, action, arrival, 0, done.error))
            return done
        self.log.append((arrival, now, player_id, action))
        recorded = self._record(produced, arrival)
        if self.journal.recording:
            self.journal.add(crec.action_input(arrival, now, action, self.seq, wire, action_id))
        done.events += recorded
        done.first_seq = recorded[0][0] if recorded else len(self.events)
        if action_id:
            self.answers.remember(action.player, action_id,
                                  Answer(now, action, arrival, done.first_seq, None))
        return done

    def advance(self, wall_ms: int) -> list[tuple[int, ClassicEvent]]:
        now = self.table_ms(wall_ms)
        was = self.session.now_ms
        events = self._advance(now)
        if self.session.now_ms != was:
            self.journal.add(records.advanced(now, self.seq))
        self.results.note(self.session, self.journal)
        return events

    def resume(self, wall_ms: int) -> list[tuple[int, ClassicEvent]]:
        """After a restart: the clock goes on from its last journaled instant (the outage
        counts for no turn, C7, A1); every seat gets one `interrupted` event."""
        at = self.session.now_ms
        last_wall = self.origin_ms + int(at / self.time_scale)
        origin = wall_ms - int(at / self.time_scale)
        duration = max(0, wall_ms - last_wall)
        self.journal.add(records.interrupted(at, duration, origin))
        return self._interrupt(at, duration, origin)

    def _interrupt(self, at: int, duration: int, origin: int) -> list[tuple[int, ClassicEvent]]:
        self.origin_ms = origin
        return self._record([ClassicEvent(INTERRUPTED, at, detail=str(duration))])

    def mark_reported(self, smazzata: int) -> None:
        """Scoring has stored report `smazzata` (and, sent in order, those before it)."""
        if smazzata > self.reported:
            self.reported = smazzata
            self.journal.add(records.reported(smazzata))
        self.results.stored(self.reported)

    def close(self, reason: str = "ended") -> None:
        if not self.closed:
            self.closed = reason
            self.journal.add(records.closed(reason))

    def _record(self, events: list[ClassicEvent], arrival: int = 0
                ) -> list[tuple[int, ClassicEvent]]:
        out = []
        for ev in events:
            self.events.append(ev)
            self._arrivals.append(arrival)
            out.append((len(self.events), ev))
        return out

    # ------------------------------------------------------------------ reading
    @property
    def seq(self) -> int:
        return len(self.events)

    def arrival_of(self, seq: int) -> int:
        return self._arrivals[seq - 1]

    def events_for(self, player_id: str, seq: int, limit: int | None = None
                   ) -> list[tuple[int, ClassicEvent]]:
        """The events after `seq` (at most `limit`), redacted for the player's seat (P5)."""
        seat = self.seats[player_id]
        end = None if limit is None else seq + limit
        return [(i + 1, ev.for_viewer(seat)) for i, ev in enumerate(self.events[seq:end], seq)]

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
