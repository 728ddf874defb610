"""What every table on a shard does whatever rules it plays: one sequencer, a numbered event
log, a journal written as inputs are applied, and a replay of that journal.

Actions are applied one at a time in arrival order (the shard's event loop is the only
writer); each gets an arrival index, the fairness rule made observable (M2.3, M6.4). Every
event gets the table's next sequence number; the log keeps them all, so a session resuming
from any sequence number gets exactly what it missed, redacted for its seat (P5).

Every input that changes the table is written down in its journal as it is applied: an
accepted action or presence change with its arrival index and table time, a refused one when
the table's clock moved, a timer advance that produced events, a next deal, an interruption.
`restore` rebuilds the table from those records through the same code paths, so a replayed
table is the live one: same events, same sequence numbers, same arrival indices.

`Sequencer` holds all of that; a ruleset's table (`host.TableHost` for Machiavelox,
`classic_table.ClassicHost` for classic Machiavelli) supplies its engine through the hooks
below (how time passes, how an action is applied, how an input is journaled, what a deal
record is) and its own wire encoding.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, NamedTuple, Protocol, TypeVar

from google.protobuf.message import Message

from machiavelox import rules
from machiavelox._gen.v1 import journal_pb2, scoring_pb2
from machiavelox.platform.errors import ServiceError, invalid_argument

from . import records
from .answers import Answer, Answers
from .records import JournalCorruptError, Recorder


class Viewed(Protocol):
    """An event of a ruleset: redacted for a seat (P5)."""

    def for_viewer(self, seat: Any) -> Any: ...


E = TypeVar("E")
Ev = TypeVar("Ev", bound=Viewed)
D = TypeVar("D")  # a ruleset's deal
S = TypeVar("S", bound="Sequencer[Any, Any]")


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


class Sequencer(ABC, Generic[Ev, D]):
    """One table's sequencer, event log and journal (module doc); `Ev`: its events, `D`: its
    deals."""

    DEAL_RECORD = "deal"  # the journal record kind of a later deal
    # each report holds the whole session so far, so they are stored in order (classic); else
    # each is its own smazzata's and they go in parallel (reporting.ResultReports)
    REPORTS_IN_ORDER: ClassVar[bool] = False

    def __init__(self, table_id: str, players: list[str], seats: dict[str, Any],
                 competitive: bool, created_wall_ms: int, first: D, time_scale: float,
                 journal: Recorder | None) -> None:
        self.table_id = table_id
        self.players = list(players)
        self.seats = seats
        self.competitive = competitive
        self.origin_ms = created_wall_ms  # table time 0
        self.time_scale = time_scale  # > 1 only for demos and tests: the rules' clock runs faster
        self.deals: list[D] = [first]
        self.log: list[tuple[int, int, str, Any]] = []  # (arrival, at_ms, player, action)
        self.events: list[Ev] = []  # seq = index + 1
        self._arrivals = array("Q")  # per event: the arrival index of its action (0: time's)
        self.arrivals = 0
        self.answers = Answers()  # by client_action_id: a resent action is answered alike
        self.reported = 0  # results scoring has stored (journaled)
        self.reporting = 0  # results sent (in flight or stored)
        self.closed = ""  # why the table's journal ended ("" while it is open)
        self._deals: deque[D] | None = None  # while replaying: the journaled deals
        self.journal = journal if journal is not None else Recorder()

    # ------------------------------------------------------------------ the ruleset's part
    @property
    @abstractmethod
    def now_ms(self) -> int:
        """The engine's table time."""

    @abstractmethod
    def _pass_time(self, now: int) -> list[tuple[int, Ev]]:
        """Time passes to `now` in the engine; its events recorded (`_record`)."""

    @abstractmethod
    def _engine_apply(self, action: Any, now: int) -> list[Ev]:
        """The engine applies `action` (RulesError if it refuses it, changing nothing)."""

    @abstractmethod
    def _input_record(self, arrival: int, now: int, action: Any, wire: Any, action_id: str,
                      refused: bool) -> journal_pb2.JournalRecord:
        """The journal record of an input."""

    @abstractmethod
    def _interrupted(self, at: int, detail: str) -> Ev:
        """The event that tells every seat the table was not served for a while."""

    @abstractmethod
    def _is_presence(self, action: Any) -> bool:
        """A presence input (not a player's own act)."""

    def _after_step(self) -> None:
        """After a step and its journal record (results become reportable)."""

    def _recorded(self) -> None:
        """After events are recorded (a long match's next deal)."""

    # ------------------------------------------------------------------ replay
    @classmethod
    def _replayed(cls: type[S], table_id: str, data: bytes | bytearray,
                  make: Callable[[journal_pb2.TableOpened], S],
                  deal_of: Callable[[journal_pb2.JournalRecord], Any],
                  journal: Recorder | None) -> S:
        """The table its journal `data` leaves (`make`: the table as its opening record says,
        journaling nothing; `deal_of`: a later deal from its record), replayed through the
        engine; its journal is `data`, durable. JournalCorruptError if it does not replay."""
        recs = list(records.iter_records(data))
        if not recs or recs[0].WhichOneof("kind") != "opened":
            raise JournalCorruptError(f"the journal of {table_id} does not open the table")
        host = make(recs[0].opened)
        host._deals = deque(deal_of(r) for r in recs if r.WhichOneof("kind") == cls.DEAL_RECORD)
        for record in recs[1:]:
            host._replay(record)
        host._after_step()  # (what the journal holds is stored)
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
            action = self._action_from_record(entry)
            done = self._apply_at(self.players[action.player], action, entry.at_ms,
                                  int(entry.arrival), action_id=entry.client_action_id)
            if (done.error is not None) != entry.refused:
                raise JournalCorruptError(f"{self.table_id}: journaled input {entry.arrival} "
                                          f"is not judged alike on replay ({done.error})")
            self._check(entry.seq)
        elif kind == "advanced":
            self._pass_time(record.advanced.at_ms)
            self._check(record.advanced.seq)
        elif kind == "interrupted":
            gap = record.interrupted
            self._interrupt(gap.at_ms, gap.duration_ms, gap.origin_ms)
        elif kind == "reported":
            self.reported = max(self.reported, record.reported.smazzata)
        elif kind == "closed":
            self.closed = record.closed.reason or "ended"
        elif kind != self.DEAL_RECORD:
            raise JournalCorruptError(f"{self.table_id}: unknown record {kind}")

    @abstractmethod
    def _action_from_record(self, entry: journal_pb2.InputRecord) -> Any:
        """The engine's action of a journaled input (its `player` a seat)."""

    # ------------------------------------------------------------------ results
    @abstractmethod
    def smazzate_to_report(self) -> list[tuple[int, Any]]:
        """The results not yet sent whose end the stored journal holds: (number from 1,
        result), in order."""

    @abstractmethod
    def report_request(self, number: int, result: Any
                       ) -> tuple[scoring_pb2.ReportResultRequest, str]:
        """Result `number` as scoring's ReportResult request, and a line for the log."""

    def _check(self, seq: int) -> None:
        if seq != self.seq:
            raise JournalCorruptError(f"{self.table_id}: replayed to event {self.seq} where "
                                      f"the journal says {seq}")

    def _next_deal(self, draw: Callable[[], D], record: Callable[[D], journal_pb2.JournalRecord]
                   ) -> D:
        """A later deal: the journaled one while replaying, else `draw`n and journaled."""
        if self._deals is not None:
            if not self._deals:
                raise JournalCorruptError(f"{self.table_id}: a journaled deal is missing")
            return self._deals.popleft()
        deal = draw()
        self.journal.add(record(deal))
        return deal

    # ------------------------------------------------------------------ time
    def table_ms(self, wall_ms: int) -> int:
        """The table's time now (never backwards)."""
        return max(self.to_table_ms(wall_ms), self.now_ms)

    def to_table_ms(self, wall_ms: int) -> int:
        return int((wall_ms - self.origin_ms) * self.time_scale)

    def wall_of(self, at: int | None) -> int | None:
        """The wall-clock instant of table time `at` (None stays None)."""
        return None if at is None else self.origin_ms + int(-(-at // self.time_scale))

    def advance(self, wall_ms: int) -> list[tuple[int, Ev]]:
        now = self.table_ms(wall_ms)
        was = self.now_ms
        events = self._pass_time(now)
        if self.now_ms != was:
            self.journal.add(records.advanced(now, self.seq))
        self._after_step()
        return events

    def resume(self, wall_ms: int) -> list[tuple[int, Ev]]:
        """After a restart: the table's clock goes on from its last journaled instant, so the
        time no shard served it counts for no rule; every seat is told how long that was (one
        interruption event, detail: the outage in wall-clock ms)."""
        at = self.now_ms
        last_wall = self.origin_ms + int(at / self.time_scale)
        origin = wall_ms - int(at / self.time_scale)
        duration = max(0, wall_ms - last_wall)
        self.journal.add(records.interrupted(at, duration, origin))
        return self._interrupt(at, duration, origin)

    def _interrupt(self, at: int, duration: int, origin: int) -> list[tuple[int, Ev]]:
        self.origin_ms = origin
        return self._record([self._interrupted(at, str(duration))])

    # ------------------------------------------------------------------ sequencer
    def apply(self, player_id: str, action: Any, wall_ms: int, wire: Any = None,
              action_id: str = "") -> Applied[Ev]:
        """Apply one action of a seated player (callers check the seat) at arrival; `wire`:
        the action as it came, journaled as is; `action_id`: the app's idempotency key
        (`answered` then gives its outcome to a resend of it)."""
        return self._apply_at(player_id, action, self.table_ms(wall_ms), self.arrivals + 1, wire,
                              action_id)

    def answered(self, player_id: str, action_id: str) -> Answer | None:
        """The outcome of the player's action sent with `action_id` (answers.py), if kept."""
        return self.answers.get(self.seats[player_id], action_id)

    @property
    def played_at(self) -> bool:
        """A player has acted (an accepted action; presence changes are not theirs)."""
        return any(not self._is_presence(action) for *_, action in self.log)

    def _apply_at(self, player_id: str, action: Any, now: int, arrival: int, wire: Any = None,
                  action_id: str = "") -> Applied[Ev]:
        self.arrivals = arrival
        was = self.now_ms
        done: Applied[Ev] = Applied(arrival, events=self._pass_time(now))
        try:
            produced = self._engine_apply(action, now)
        except rules.RulesError as err:
            # (the table is as it was, but for its clock and timers); no traceback kept: its
            # frames would tie this table into a reference cycle (docs: memory)
            done.error = err.with_traceback(None)
            if self.journal.recording and (self.now_ms != was or done.events):
                self.journal.add(self._input_record(arrival, now, action, wire, action_id,
                                                    refused=True))
            if action_id:
                self.answers.remember(action.player, action_id,
                                      Answer(now, action, arrival, 0, done.error))
            self._after_step()
            return done
        self.log.append((arrival, now, player_id, action))
        recorded = self._record(produced, arrival)
        if self.journal.recording:  # (not while replaying: the record is already there)
            self.journal.add(self._input_record(arrival, now, action, wire, action_id,
                                                refused=False))
        self._after_step()
        done.events += recorded
        done.first_seq = recorded[0][0] if recorded else len(self.events)
        if action_id:
            self.answers.remember(action.player, action_id,
                                  Answer(now, action, arrival, done.first_seq, None))
        return done

    def mark_reported(self, number: int) -> None:
        """Scoring has stored result `number` (and, sent in order, those before it)."""
        if number > self.reported:
            self.reported = number
            self.journal.add(records.reported(number))

    def close(self, reason: str = "ended") -> None:
        """The table leaves the shard: its journal ends."""
        if not self.closed:
            self.closed = reason
            self.journal.add(records.closed(reason))

    def _record(self, events: list[Ev], arrival: int = 0) -> list[tuple[int, Ev]]:
        """Number `events` (produced by the action of `arrival`; 0: by time) and keep them."""
        out = []
        for ev in events:
            self.events.append(ev)
            self._arrivals.append(arrival)
            out.append((len(self.events), ev))
        self._recorded()
        return out

    # ------------------------------------------------------------------ reading
    @property
    def seq(self) -> int:
        return len(self.events)

    def arrival_of(self, seq: int) -> int:
        """The arrival index of the action that produced event `seq` (0: time produced it)."""
        return self._arrivals[seq - 1]

    def events_after(self, seq: int, seat: Any, limit: int | None = None
                     ) -> list[tuple[int, Ev]]:
        """The events after `seq` (at most `limit` of them), redacted for `seat` (P5)."""
        end = None if limit is None else seq + limit
        return [(i + 1, ev.for_viewer(seat)) for i, ev in enumerate(self.events[seq:end], seq)]

    def events_for(self, player_id: str, seq: int, limit: int | None = None
                   ) -> list[tuple[int, Ev]]:
        return self.events_after(seq, self.seats[player_id], limit)
