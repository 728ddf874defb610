"""What both games' table models (`model.TableModel`, `classic_model.ClassicModel`) keep the
same way: the table's clock, the log's lines, and the bookkeeping of the Play stream (a
snapshot replaces everything; an event newer than it is told in words, then followed at once
and asks for the next snapshot; an ack or a refusal answers an action we sent), the seats'
names and the melds by id. What a game's snapshot, events and words are is its own model's.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from machiavelox._gen.v1 import common_pb2, gateway_pb2

LOG_LINES = 500  # the most log lines a model keeps


@dataclass
class LogLine:
    text: str
    kind: str = "event"  # event, mine, refusal, race, chain, info
    seq: int | None = None
    seat: int | None = None


class TableClock:
    """The table's time now, from the times the server sent: an event's `at_ms` is about now
    when it arrives; a snapshot's `now_ms` only a lower bound (the table's last step). The
    shard's pace (a demo's time scale) is measured from the events."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.table_ms = 0
        self.at = monotonic()
        self.scale = 1.0
        self._first: tuple[int, float] | None = None

    def seen(self, table_ms: int, exact: bool) -> None:
        now = self.monotonic()
        if exact:
            if self._first is None:
                self._first = (table_ms, now)
            else:
                first_ms, first_at = self._first
                if now - first_at >= 1.0 and table_ms > first_ms:
                    self.scale = min(500.0, max(0.05, (table_ms - first_ms)
                                                / 1000.0 / (now - first_at)))
        if exact or table_ms > self.now():
            self.table_ms, self.at = table_ms, now

    def restart(self) -> None:
        """The table's clock stood still (an outage): measure the pace afresh."""
        self._first = None

    def now(self) -> int:
        return int(self.table_ms + (self.monotonic() - self.at) * 1000.0 * self.scale)

    def left_s(self, deadline_ms: int | None) -> float | None:
        """Wall-clock seconds until a table-time deadline (None: no deadline)."""
        if not deadline_ms:
            return None
        return max(0.0, (deadline_ms - self.now()) / 1000.0 / self.scale)


class HandSeat(Protocol):
    """A seat as both models keep it: its number and how many cards it holds."""

    seat: int
    hand_count: int


class MeldById(Protocol):
    """A meld as both models keep it: its id, its cards (and their indexes, in display order),
    changed since the last snapshot."""

    id: int
    cards: list[Any]
    provisional: bool

    @property
    def card_indexes(self) -> list[int]: ...


SeatT = TypeVar("SeatT", bound=HandSeat)
MeldT = TypeVar("MeldT", bound=MeldById)
CardT = TypeVar("CardT")  # what a meld holds: a TableCard (Machiavelox), a card index (classic)
ActionT = TypeVar("ActionT")


class ModelBase(ABC, Generic[SeatT, MeldT, CardT, ActionT]):
    """One player's table, from snapshots and events: what both games' models share. A model
    says which PlayResponse field its snapshots come in (`SNAPSHOT`), applies them
    (`_snapshot`), follows its events (`_patch`) and puts its events, refusals and actions
    into words (`_event_line`, `_refusal_line`, `describe`)."""

    SNAPSHOT: ClassVar[str]
    seats: list[SeatT]
    melds: list[MeldT]

    def __init__(self, table_id: str, players: list[str], me: str,
                 clock: TableClock | None) -> None:
        self.table_id = table_id
        self.players = list(players)
        self.me: int | None = players.index(me) if me in players else None
        self.clock = clock or TableClock()
        self.seq = 0
        self.snapshots = 0
        self.stale = True  # events since the last snapshot
        self.phase = "playing"
        self.hand: list[int] = []
        self.log: list[LogLine] = []
        self.sent: dict[str, ActionT] = {}  # our actions by id, for their answers
        self.last_refusal: LogLine | None = None

    # ---------------------------------------------------------------- what a game says
    @abstractmethod
    def _snapshot(self, response: gateway_pb2.PlayResponse) -> None:
        """Apply the response's snapshot (its `SNAPSHOT` field)."""

    @abstractmethod
    def _patch(self, ev: common_pb2.Event) -> None:
        """Follow what the event moves, card by card (after its words)."""

    @abstractmethod
    def _event_line(self, ev: common_pb2.Event) -> LogLine | None:
        """The event in words (None: nothing to tell), before `_patch` changes the table."""

    @abstractmethod
    def _refusal_line(self, action: ActionT | None, code: str, message: str) -> LogLine:
        """The refusal of `action` (None: not ours) in words, with its code."""

    @abstractmethod
    def describe(self, action: ActionT | None) -> str:
        """What the person asked for, in words."""

    @abstractmethod
    def _new_meld(self, meld_id: int, cards: list[CardT]) -> MeldT:
        """A meld an event made that the last snapshot did not have (provisional)."""

    # ---------------------------------------------------------------- derived, for screens
    @property
    def mine(self) -> SeatT | None:
        return self.seats[self.me] if self.me is not None else None

    @property
    def ended(self) -> bool:
        return self.phase == "ended"

    def name(self, seat: int | None) -> str:
        if seat is None:
            return "the table"
        return "you" if seat == self.me else f"{self.players[seat]} (p{seat + 1})"

    def cards_in_hand(self, s: SeatT) -> int:
        """How many cards the seat holds (the viewer's: its own hand, as it knows it)."""
        return len(self.hand) if s.seat == self.me else s.hand_count

    def meld(self, meld_id: int) -> MeldT | None:
        for m in self.melds:
            if m.id == meld_id:
                return m
        return None

    def label(self, meld_id: int) -> str:
        """The meld's number on screen (its place on the table, from 1)."""
        for i, m in enumerate(self.melds):
            if m.id == meld_id:
                return str(i + 1)
        return "new"

    # ---------------------------------------------------------------- input
    def take(self, response: gateway_pb2.PlayResponse) -> list[LogLine]:
        """One message from the server (already unbatched); the log lines it adds."""
        kind = response.WhichOneof("kind")
        lines: list[LogLine] = []
        if kind == self.SNAPSHOT:
            self._snapshot(response)
        elif kind == "event":
            lines = self.apply_event(response.event)
        elif kind == "ack":
            self._acked(response.ack)
        elif kind == "refused":
            lines = [self.refused(response.refused)]
        self.log.extend(lines)
        del self.log[:-LOG_LINES]
        return lines

    def _fresh(self, seq: int, now_ms: int) -> None:
        """A snapshot came: the table as of event `seq`, at table time `now_ms` or later."""
        self.seq = seq
        self.snapshots += 1
        self.stale = False
        self.clock.seen(now_ms, exact=False)

    def apply_event(self, ev: common_pb2.Event) -> list[LogLine]:
        if ev.seq and ev.seq <= self.seq:
            return []  # included in the snapshot already
        self.seq = ev.seq or self.seq
        self.stale = True
        self.clock.seen(ev.at_ms, exact=True)
        line = self._event_line(ev)  # words before the change: the cards' and melds' old places
        self._patch(ev)
        return [line] if line is not None else []

    def _acked(self, ack: common_pb2.Ack) -> None:
        self.sent.pop(ack.client_action_id, None)

    def refused(self, refused: common_pb2.ActionRefused) -> LogLine:
        action = self.sent.pop(refused.client_action_id, None)
        line = self._refusal_line(action, refused.refusal.code, refused.refusal.message)
        if refused.client_action_id:
            self.last_refusal = line
        return line

    # ---------------------------------------------------------------- the events' bookkeeping
    def _from_hand(self, s: SeatT, cards: list[int]) -> None:
        s.hand_count = max(0, s.hand_count - len(cards))
        if s.seat == self.me:
            self.hand = [c for c in self.hand if c not in cards]

    def _onto(self, meld_id: int, cards: list[CardT]) -> None:
        meld = self.meld(meld_id)
        if meld is None:
            self.melds.append(self._new_meld(meld_id, cards))
            return
        meld.cards.extend(cards)
        meld.provisional = True


AnyModel = ModelBase[Any, Any, Any, Any]  # either game's model
