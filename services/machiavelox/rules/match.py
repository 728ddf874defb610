"""Matches (M13): a single smazzata, or a long match of smazzate to 150 points among friends.

A `Match` owns the current `Table` and everything between smazzate: the totals, the pause of at
most one minute that ends early when all three are ready (M13.4), leaving, absence at the end of
the pause, the end of the match and the patta lunga (M13.3, M13.5), re-entry after an abandoned
smazzata (M11.9). Like the table it is pure: time is an argument, the deals come from outside
(`deal_next`), so a match is replayable from its deals and its log.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from . import actions as A
from .deal import Deal
from .errors import illegal
from .events import Event, EventKind
from .seats import SEATS, Seat
from .state import ABANDON_MS, LONG_MATCH_TARGET, PAUSE_MS, Phase
from .table import Table
from .timers import next_deadline


class MatchKind(enum.Enum):
    SINGLE = "single"  # partita secca: friendly or competitive (agorà)
    LONG = "long"  # partita lunga, friends only, to 150


@dataclass(frozen=True)
class MatchResult:
    winner: Seat | None
    totals: tuple[int, int, int]
    draw: tuple[Seat, ...] = ()  # the players of a patta lunga
    reason: str = "target"  # target | left | single


class Match:
    def __init__(self, kind: MatchKind, deal: Deal, start_ms: int = 0) -> None:
        self.kind = kind
        self.table = Table(deal, start_ms)
        self.smazzate: list[Table] = [self.table]
        self.totals = [0, 0, 0]
        self.now_ms = start_ms
        self.paused = False
        self.pause_ends_ms: int | None = None
        self.waiting_for_deal = False
        self.ready: set[Seat] = set()
        self.out: set[Seat] = set()  # left the match (M13.5)
        self.result: MatchResult | None = None
        self.events: list[Event] = []
        self._next_deal: Deal | None = None
        # presence across smazzate, for absence at the end of the pause (M13.5)
        self.silent: dict[Seat, bool] = dict.fromkeys(SEATS, False)
        self.unknown: dict[Seat, bool] = dict.fromkeys(SEATS, False)  # (not silent meanwhile)
        self.last_sign_ms: dict[Seat, int] = dict.fromkeys(SEATS, start_ms)

    # ------------------------------------------------------------------ interface
    def next_deadline(self) -> int | None:
        """When something happens by itself next (ms), or None: the shard's timer."""
        if self.result is not None or self.waiting_for_deal:
            return None
        if self.paused:
            return self.pause_ends_ms
        return next_deadline(self.table)

    @property
    def needs_deal(self) -> bool:
        """In the pause of a long match with no next deal yet (see `deal_next`)."""
        return (self.result is None and (self.paused or self.waiting_for_deal)
                and self._next_deal is None)

    def status_word(self, seat: Seat) -> str:
        return "out" if seat in self.out else self.table.status_word(seat)

    @property
    def phase(self) -> str:
        if self.result is not None:
            return Phase.ENDED.value
        if self.paused or self.waiting_for_deal:
            return Phase.PAUSE.value
        return self.table.phase.value

    def apply(self, action: A.Action, now_ms: int) -> list[Event]:
        """Apply an action at `now_ms`: to the table while a smazzata is in play, to the match
        during the pause. Returns every event, the table's and the match's."""
        out = self.advance(now_ms)
        if isinstance(action, A.Liveness):
            self._presence(action.player, action.alive, action.unknown)
        if self.result is None and (self.paused or self.waiting_for_deal):
            own = self._pause_action(action)
            produced: list[Event] = []
        elif isinstance(action, (A.Ready, A.Leave)):
            raise illegal("match/not-paused", "ready and leave belong to the pause between the "
                          "smazzate of a long match (M13.4, M13.5)")
        else:
            produced = self.table.apply(action, now_ms)
            own = self._after_table()
        if not isinstance(action, A.Liveness):
            self.last_sign_ms[action.player] = now_ms
        self.events += own
        return out + produced + own

    def advance(self, now_ms: int) -> list[Event]:
        """Let time pass; `events` keeps the match's own events (pause, ready, left, ...)."""
        out: list[Event] = []
        own: list[Event] = []
        if self.result is None and not self.paused and not self.waiting_for_deal:
            out += self.table.advance(now_ms)
            own += self._after_table()
        if self.paused and self.pause_ends_ms is not None and self.pause_ends_ms <= now_ms:
            self.now_ms = self.pause_ends_ms
            own += self._end_pause()
        self.now_ms = max(self.now_ms, now_ms)
        self.events += own
        return out + own

    def deal_next(self, deal: Deal, now_ms: int) -> list[Event]:
        """The next smazzata's deal: it starts when the pause ends (now, if it has)."""
        out = self.advance(now_ms)
        if self.result is not None or self.kind is MatchKind.SINGLE:
            raise illegal("match/over", "the match is over")
        if not (self.paused or self.waiting_for_deal):
            raise illegal("match/in-play", "the current smazzata has not ended")
        self._next_deal = deal
        if self.waiting_for_deal:
            own = self._start_next()
            self.events += own
            out += own
        return out

    # ------------------------------------------------------------------ smazzata ends
    def _after_table(self) -> list[Event]:
        """When the smazzata has just ended: totals, then the end of the match or a pause."""
        if self.table.phase is not Phase.ENDED or self.table.result is None or self.paused \
                or self.waiting_for_deal or self.result is not None:
            return []
        scores = self.table.result.scores
        for s in SEATS:
            self.totals[s] += scores[s]
        out: list[Event] = []
        if self.kind is MatchKind.SINGLE:
            self.result = MatchResult(self.table.result.winner, self._totals(),
                                      self.table.result.draw, "single")
            return out
        top = max(self.totals)
        leaders = [s for s in SEATS if self.totals[s] == top]
        if top >= LONG_MATCH_TARGET:  # M13.3
            if len(leaders) == 1:
                return out + self._finish(leaders[0], (), "target")
            return out + self._finish(None, tuple(leaders), "target")
        self.paused = True
        self.pause_ends_ms = self.table.now_ms + PAUSE_MS
        self.ready = set()
        out.append(Event(EventKind.PAUSE, self.table.now_ms, detail=self._standings()))
        return out

    def _pause_action(self, action: A.Action) -> list[Event]:
        seat = action.player
        if isinstance(action, A.Liveness):
            return []
        if isinstance(action, A.Ready):
            self.ready.add(seat)
            out = [Event(EventKind.READY, self.now_ms, seat)]
            if self.paused and all(s in self.ready for s in SEATS if s not in self.out):
                out += self._end_pause()  # M13.4: all three ready
            return out
        if isinstance(action, A.Leave):
            self.out.add(seat)
            return [Event(EventKind.LEFT, self.now_ms, seat), *self._left()]
        raise illegal("match/paused", "the smazzata is over: this is the pause (M13.4)")

    def _end_pause(self) -> list[Event]:
        """M13.5: whoever has shown no sign of life for 90 s when the pause ends is out."""
        self.paused = False
        self.pause_ends_ms = None
        gone = [s for s in SEATS if s not in self.out and self.silent[s]
                and self.now_ms - self.last_sign_ms[s] >= ABANDON_MS]
        if gone:
            self.out.update(gone)
            return [*(Event(EventKind.LEFT, self.now_ms, s, detail="absent when the pause ended")
                      for s in gone), *self._left()]
        self.waiting_for_deal = True
        if self._next_deal is not None:
            return self._start_next()
        return []

    def _start_next(self) -> list[Event]:
        assert self._next_deal is not None
        deal, self._next_deal = self._next_deal, None
        self.waiting_for_deal = False
        self.table = Table(deal, self.now_ms)
        for s in SEATS:  # M11.9: abandoned players are back; silence carries over (logged,
            if self.silent[s] or self.unknown[s]:  # so the smazzata replays from its own log)
                self.table.apply(A.Liveness(s, False, unknown=self.unknown[s]), self.now_ms)
        self.smazzate.append(self.table)
        return [Event(EventKind.SMAZZATA, self.now_ms, detail=f"number {len(self.smazzate)}")]

    def _left(self) -> list[Event]:
        """M13.5: leaving ends the match at once; the leader among those left wins."""
        staying = [s for s in SEATS if s not in self.out]
        if not staying:
            return self._finish(None, (), "left")
        top = max(self.totals[s] for s in staying)
        leaders = [s for s in staying if self.totals[s] == top]
        if len(leaders) == 1:
            return self._finish(leaders[0], (), "left")
        return self._finish(None, tuple(leaders), "left")

    def _finish(self, winner: Seat | None, draw: tuple[Seat, ...], reason: str) -> list[Event]:
        self.paused = False
        self.waiting_for_deal = False
        self.result = MatchResult(winner, self._totals(), draw, reason)
        what = f"winner {winner}" if winner is not None else (
            "patta lunga " + " ".join(str(s) for s in draw) if draw else "no winner")
        return [Event(EventKind.MATCH_ENDED, self.now_ms, winner,
                      detail=f"{what}; {self._standings()}")]

    def _presence(self, seat: Seat, alive: bool, unknown: bool) -> None:
        """M13.5 counts known silence only: unknown is not silent, and a silence known after
        it counts from then."""
        self.silent[seat] = not alive and not unknown
        self.unknown[seat] = unknown
        self.last_sign_ms[seat] = self.now_ms

    def _totals(self) -> tuple[int, int, int]:
        return (self.totals[0], self.totals[1], self.totals[2])

    def _standings(self) -> str:
        return ", ".join(f"{s} {self.totals[s]}" for s in SEATS)
