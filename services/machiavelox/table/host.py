"""One table on a shard: the match, its sequencer, its numbered event log.

Actions are applied one at a time in arrival order (the shard's event loop is the only
writer); each gets an arrival index, the fairness rule made observable (M2.3, M6.4). Every event
gets the table's next sequence number; the log keeps them all, so a session resuming from any
sequence number gets exactly what it missed, redacted for its seat (P5).

Every input that changes the table is written down in its journal (`records.py`) as it is
applied: an accepted action or presence change with its arrival index and table time, a timer
advance that produced events, a long match's next deal, an interruption. `restore` rebuilds the
table from those records through the same code paths, so a replayed table is the live one:
same events, same sequence numbers, same arrival indices.
"""

from __future__ import annotations

from array import array
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, NamedTuple, TypeVar

from google.protobuf.message import Message

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, journal_pb2, table_pb2
from machiavelox.platform.errors import ServiceError, invalid_argument
from machiavelox.rules import view_for

from . import records
from .answers import Answer, Answers
from .records import JournalCorruptError, Recorder

INTERRUPTED = rules.EventKind.INTERRUPTED  # a table that no shard served for a while


E = TypeVar("E")


@dataclass
class Applied(Generic[E]):
    """The outcome of one action: accepted (first_seq, arrival) or refused (error); `events`:
    the ruleset's events it produced, numbered."""

    arrival: int
    first_seq: int = 0
    error: rules.RulesError | None = None
    events: list[tuple[int, E]] = field(default_factory=list)


class Decoded(NamedTuple):
    """A wire action decoded for its table (`rulesets.Host.decode`)."""

    action: object  # the engine's action
    wire: Message  # as it came (journaled as is)
    verb: str  # for metrics and spans


def wrong_ruleset(plays: str, send: str) -> ServiceError:
    """The refusal of an action of the other ruleset's contract."""
    return invalid_argument("request/wrong-ruleset", f"this table plays {plays}: send {send}")


class TableHost:
    def __init__(self, table_id: str, players: list[str], kind: rules.MatchKind,
                 competitive: bool, created_wall_ms: int, deal: rules.Deal | None = None,
                 time_scale: float = 1.0, journal: Recorder | None = None) -> None:
        if len(players) != 3 or len(set(players)) != 3:
            raise ValueError("a table seats three different players (M1.5)")
        self.table_id = table_id
        self.players = list(players)
        self.seats = {p: rules.Seat(i) for i, p in enumerate(players)}
        self.kind = kind
        self.competitive = competitive
        self.origin_ms = created_wall_ms  # table time 0
        self.time_scale = time_scale  # > 1 only for demos: the rules' clock runs faster
        first = deal if deal is not None else rules.shuffled_deal()
        self.deals: list[rules.Deal] = [first]
        self.match = rules.Match(kind, first, start_ms=0)
        self.log: list[tuple[int, int, str, rules.Action]] = []  # (arrival, at_ms, player, action)
        self.events: list[rules.Event] = []  # seq = index + 1
        self._arrivals = array("Q")  # per event: the arrival index of its action (0: time's)
        self.arrivals = 0
        self.answers = Answers()  # by client_action_id: a resent action is answered alike
        self.reported = 0  # smazzate whose result scoring has stored (journaled)
        self.reporting = 0  # smazzate whose report has been sent (in flight or stored)
        self.closed = ""  # why the table's journal ended ("" while it is open)
        self._deals: deque[rules.Deal] | None = None  # while replaying: the journaled deals
        # per ended smazzata: how much of the journal holds its end (0: replayed, durable)
        self._result_ends: list[int] = []
        self.journal = journal if journal is not None else Recorder()
        self.journal.add(records.opened(self.players, kind, competitive, created_wall_ms,
                                        time_scale, first))

    @classmethod
    def restore(cls, table_id: str, data: bytes | bytearray,
                journal: Recorder | None = None) -> TableHost:
        """The table as its journal `data` leaves it, replayed through the engine (inputs at
        their journaled table times and arrival indices); its journal is `data`, durable.
        Raises JournalCorruptError when the journal does not replay."""
        recs = list(records.iter_records(data))
        if not recs or recs[0].WhichOneof("kind") != "opened":
            raise JournalCorruptError(f"the journal of {table_id} does not open the table")
        head = recs[0].opened
        host = cls(table_id, list(head.player_ids), records.kind_from_record(head.kind),
                   head.competitive, head.origin_ms, records.deal_from_record(head.deal),
                   head.time_scale or 1.0, records.NoRecorder())
        host._deals = deque(records.deal_from_record(r.deal) for r in recs
                            if r.WhichOneof("kind") == "deal")
        for record in recs[1:]:
            host._replay(record)
        host._note_results()  # (what the journal holds is stored)
        host._deals = None
        host.journal = journal if journal is not None else Recorder()
        host.journal.data[:] = data
        host.journal.durable = len(data)
        host.reporting = host.reported
        return host

    def _replay(self, record: journal_pb2.JournalRecord) -> None:
        kind = record.WhichOneof("kind")
        if kind == "input":
            entry = record.input
            action = records.action_from_record(entry)
            done = self._apply_at(self.players[action.player], action, entry.at_ms,
                                  int(entry.arrival), action_id=entry.client_action_id)
            if (done.error is not None) != entry.refused:
                raise JournalCorruptError(f"{self.table_id}: journaled input {entry.arrival} "
                                          f"is not judged alike on replay ({done.error})")
            self._check(entry.seq)
        elif kind == "advanced":
            self._record(self.match.advance(record.advanced.at_ms))
            self._check(record.advanced.seq)
        elif kind == "interrupted":
            gap = record.interrupted
            self._interrupt(gap.at_ms, gap.duration_ms, gap.origin_ms)
        elif kind == "reported":
            self.reported = max(self.reported, record.reported.smazzata)
        elif kind == "closed":
            self.closed = record.closed.reason or "ended"
        elif kind != "deal":
            raise JournalCorruptError(f"{self.table_id}: unknown record {kind}")

    # ------------------------------------------------------------------ time
    def table_ms(self, wall_ms: int) -> int:
        """The table's time now (never backwards)."""
        return max(self.to_table_ms(wall_ms), self.match.now_ms)

    def to_table_ms(self, wall_ms: int) -> int:
        return int((wall_ms - self.origin_ms) * self.time_scale)

    def next_wall_deadline(self) -> int | None:
        at = self.match.next_deadline()
        return None if at is None else self.origin_ms + int(-(-at // self.time_scale))

    # ------------------------------------------------------------------ sequencer
    def _check(self, seq: int) -> None:
        if seq != self.seq:
            raise JournalCorruptError(f"{self.table_id}: replayed to event {self.seq} where "
                                      f"the journal says {seq}")

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

    @property
    def played_at(self) -> bool:
        """A player has acted (an accepted action; presence changes are not theirs)."""
        return any(not isinstance(action, rules.Liveness) for *_, action in self.log)

    def apply(self, player_id: str, action: rules.Action, wall_ms: int,
              wire: common_pb2.Action | None = None, action_id: str = ""
              ) -> Applied[rules.Event]:
        """Apply one action of a seated player (callers check the seat) at arrival; `wire`:
        the action as it came, journaled as is; `action_id`: the app's idempotency key
        (`answered` then gives its outcome to a resend of it)."""
        return self._apply_at(player_id, action, self.table_ms(wall_ms), self.arrivals + 1, wire,
                              action_id)

    def answered(self, player_id: str, action_id: str) -> Answer | None:
        """The outcome of the player's action sent with `action_id` (answers.py), if kept."""
        return self.answers.get(self.seats[player_id], action_id)

    def _apply_at(self, player_id: str, action: rules.Action, now: int, arrival: int,
                  wire: common_pb2.Action | None = None, action_id: str = ""
                  ) -> Applied[rules.Event]:
        self.arrivals = arrival
        was = self.match.now_ms
        timer_events = self.match.advance(now)
        done: Applied[rules.Event] = Applied(arrival, events=self._record(timer_events))
        try:
            produced = self.match.apply(action, now)
        except rules.RulesError as err:
            # (the table is as it was, but for its clock and timers); no traceback kept: its
            # frames would tie this table into a reference cycle (docs: memory)
            done.error = err.with_traceback(None)
            if self.journal.recording and (self.match.now_ms != was or done.events):
                self.journal.add(records.action_input(arrival, now, action, self.seq, wire,
                                                      action_id, refused=True))
            self._note_results()
            if action_id:
                self.answers.remember(action.player, action_id,
                                      Answer(now, action, arrival, 0, done.error))
            return done
        self.log.append((arrival, now, player_id, action))
        recorded = self._record(produced, arrival)
        if self.journal.recording:  # (not while replaying: the record is already there)
            self.journal.add(records.action_input(arrival, now, action, self.seq, wire,
                                                  action_id))
        self._note_results()
        done.events += recorded
        done.first_seq = recorded[0][0] if recorded else len(self.events)
        if action_id:
            self.answers.remember(action.player, action_id,
                                  Answer(now, action, arrival, done.first_seq, None))
        return done

    def advance(self, wall_ms: int) -> list[tuple[int, rules.Event]]:
        now = self.table_ms(wall_ms)
        was = self.match.now_ms
        events = self._record(self.match.advance(now))
        if self.match.now_ms != was:
            self.journal.add(records.advanced(now, self.seq))
        self._note_results()
        return events

    def _note_results(self) -> None:
        """After a step's journal record: the smazzate it ended are reportable once the
        journal is stored that far (`smazzate_to_report`)."""
        ended = sum(1 for table in self.match.smazzate if table.result is not None)
        while len(self._result_ends) < ended:
            self._result_ends.append(len(self.journal.data) if self.journal.recording else 0)

    def resume(self, wall_ms: int) -> list[tuple[int, rules.Event]]:
        """After a restart: the table's clock goes on from its last journaled instant, so the
        time no shard served it counts for no rule; every seat is told how long that was (one
        `interrupted` event, detail: the outage in wall-clock ms)."""
        at = self.match.now_ms
        last_wall = self.origin_ms + int(at / self.time_scale)
        origin = wall_ms - int(at / self.time_scale)
        duration = max(0, wall_ms - last_wall)
        self.journal.add(records.interrupted(at, duration, origin))
        return self._interrupt(at, duration, origin)

    def _interrupt(self, at: int, duration: int, origin: int) -> list[tuple[int, rules.Event]]:
        self.origin_ms = origin
        return self._record([rules.Event(INTERRUPTED, at, detail=str(duration))])

    def mark_reported(self, smazzata: int) -> None:
        """Scoring has stored the smazzata's result."""
        if smazzata > self.reported:
            self.reported = smazzata
            self.journal.add(records.reported(smazzata))

    def close(self, reason: str = "ended") -> None:
        """The table leaves the shard: its journal ends."""
        if not self.closed:
            self.closed = reason
            self.journal.add(records.closed(reason))

    def _record(self, events: list[rules.Event], arrival: int = 0
                ) -> list[tuple[int, rules.Event]]:
        """Number `events` (produced by the action of `arrival`; 0: by time) and keep them."""
        out = []
        for ev in events:
            self.events.append(ev)
            self._arrivals.append(arrival)
            out.append((len(self.events), ev))
        self._deal_if_paused()
        return out

    def _deal_if_paused(self) -> None:
        """A long match in its pause gets its next deal at once; it starts when the pause ends."""
        m = self.match
        if m.needs_deal:
            if self._deals is not None:  # replaying: the deal that was drawn
                if not self._deals:
                    raise JournalCorruptError(f"{self.table_id}: a journaled deal is missing")
                deal = self._deals.popleft()
            else:
                deal = rules.shuffled_deal()
                self.journal.add(records.next_deal(deal))
            self.deals.append(deal)
            m.deal_next(deal, m.now_ms)

    # ------------------------------------------------------------------ reading
    @property
    def seq(self) -> int:
        return len(self.events)

    def arrival_of(self, seq: int) -> int:
        """The arrival index of the action that produced event `seq` (0: time produced it)."""
        return self._arrivals[seq - 1]

    def events_after(self, seq: int, seat: rules.Seat, limit: int | None = None
                     ) -> list[tuple[int, rules.Event]]:
        """The events after `seq` (at most `limit` of them), redacted for `seat` (P5)."""
        end = None if limit is None else seq + limit
        return [(i + 1, ev.for_viewer(seat)) for i, ev in enumerate(self.events[seq:end], seq)]

    def events_for(self, player_id: str, seq: int, limit: int | None = None
                   ) -> list[tuple[int, rules.Event]]:
        return self.events_after(seq, self.seats[player_id], limit)

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
