"""A classic session (C11): the hands of one table, the totals, and who wins.

`Session` is what a table carries: the variant set (one frozen value, checked at creation),
the current `Hand`, the totals, who is eliminated, and the session's result. Like Machiavelox's
`rules.Match` it is pure: time is an argument and deals come from outside (`deal_next`), so a
session is replayable from its first deal and its log (`Session.replay`).

Phases: ``playing`` (a hand is in play), ``between`` (a hand ended and the session goes on: the
next deal is awaited), ``ended``.
"""

from __future__ import annotations

from collections.abc import Sequence

from machiavelox.rules import illegal

from . import actions as A
from .absence import Presence
from .deal import ClassicDeal
from .events import ClassicEvent
from .hand import Hand
from .scoring import HandResult, SessionResult
from .seats import Seat
from .variants import SessionKind, Variants

LogEntry = A.ClassicAction | ClassicDeal  # an action, or the deal of the next hand


class Session:
    def __init__(self, variants: Variants, deal: ClassicDeal, start_ms: int = 0) -> None:
        self.variants = variants
        self.seats = variants.seats
        self.start_ms = start_ms
        self.first_deal = deal
        self.now_ms = start_ms
        self.totals: list[int] = [0] * variants.players
        self.eliminated: list[Seat] = []  # in the order they went out (C11 elimination)
        self.result: SessionResult | None = None
        self.events: list[ClassicEvent] = []  # the session's own (eliminated, ended)
        self.log: list[tuple[int, LogEntry]] = []  # accepted inputs, for replay
        self.hands: list[Hand] = []
        self._scored = 0  # hands whose result is in the totals
        self.presence = Presence()  # who is silent (absence.py): across the hands
        self._start(deal, start_ms)

    # ------------------------------------------------------------------ interface
    @property
    def hand(self) -> Hand:
        """The hand in play, or the last one."""
        return self.hands[-1]

    @property
    def phase(self) -> str:
        if self.result is not None:
            return "ended"
        return "between" if self.hand.over else "playing"

    @property
    def active(self) -> tuple[Seat, ...]:
        """The seats still in the session (not eliminated), in turn order."""
        return tuple(s for s in self.seats if s not in self.eliminated)

    def status(self, seat: Seat) -> str:
        return "eliminated" if seat in self.eliminated else "active"

    def next_deadline(self) -> int | None:
        """When something happens by itself next (a turn's time, C7): the shard's timer."""
        return None if self.result is not None else self.hand.next_deadline()

    def standings(self) -> tuple[Seat, ...]:
        """Best first: the lowest total (C11); see `SessionResult` for single and
        elimination sessions."""
        if self.result is not None:
            return self.result.standings
        return tuple(sorted(self.seats, key=lambda s: (s in self.eliminated, self.totals[s], s)))

    def advance(self, now_ms: int) -> list[ClassicEvent]:
        """Let time pass (turns running out, C7); the hand's events and the session's."""
        out: list[ClassicEvent] = []
        if self.result is None and not self.hand.over:
            out += self.hand.advance(now_ms)
            out += self._after_hand()
        self.now_ms = max(self.now_ms, now_ms)
        return out

    def apply(self, action: A.ClassicAction, now_ms: int) -> list[ClassicEvent]:
        """Let time pass to `now_ms`, then apply the action. A refused action raises a
        RulesError and changes nothing (time has passed: callers that need the events of that
        advance call `advance` first, as a shard does)."""
        out = self.advance(now_ms)
        if isinstance(action, A.Liveness):
            if action.player not in self.seats:
                raise illegal("session/not-seated", f"{action.player} has no seat here")
            self.presence.heard(action.player, self.now_ms, action.alive, action.unknown)
            out += self.advance(now_ms)  # (a turn may end by absence at once: A1)
        elif isinstance(action, A.EndSession):
            out += self._end_session(action.player)
        else:
            if self.result is not None:
                raise illegal("session/over", "the session is over (C11)")
            if self.hand.over:
                raise illegal("hand/over", "the hand is over: the next one has not been dealt")
            out += self.hand.apply(action, now_ms)
            self.presence.sign_of_life(action.player, now_ms)  # (absence.py)
            out += self.hand.advance(now_ms)  # (the next turn may end by absence at once)
            out += self._after_hand()
        self.log.append((now_ms, action))
        return out

    def deal_next(self, deal: ClassicDeal, now_ms: int) -> list[ClassicEvent]:
        """Deal the next hand (C11) at `now_ms`, between two hands; it must deal only the
        seats still in the session (`active`)."""
        out = self.advance(now_ms)
        if self.result is not None:
            raise illegal("session/over", "the session is over (C11)")
        if not self.hand.over:
            raise illegal("hand/in-play", "the current hand has not ended")
        start = len(self.hands)
        self._start(deal, self.now_ms)
        self.log.append((now_ms, deal))
        return out + self.hands[start].events

    @classmethod
    def replay(cls, variants: Variants, deal: ClassicDeal,
               log: Sequence[tuple[int, LogEntry]], start_ms: int = 0,
               until_ms: int | None = None) -> Session:
        """The session rebuilt from its first deal and its log (then time passed to
        `until_ms`): the same state, events included."""
        s = cls(variants, deal, start_ms)
        for at, entry in log:
            if isinstance(entry, ClassicDeal):
                s.deal_next(entry, at)
            else:
                s.apply(entry, at)
        if until_ms is not None:
            s.advance(until_ms)
        return s

    # ------------------------------------------------------------------ hands
    def _start(self, deal: ClassicDeal, at: int) -> None:
        playing = self.active
        hand = Hand(self.variants, deal, playing, at, number=len(self.hands) + 1,
                    presence=self.presence)
        for seat, points in deal.totals:
            self.totals[seat] = points
        self.hands.append(hand)

    def _after_hand(self) -> list[ClassicEvent]:
        """Once per hand that ended: its scores into the totals, then the session's end or
        its going on (C11)."""
        hand = self.hand
        if hand.result is None or self._scored == len(self.hands):
            return []
        self._scored = len(self.hands)
        res = hand.result
        for i, pts in enumerate(res.scores):
            self.totals[i] += pts
        kind, n = self.variants.session, self.variants.session_n or 0
        at = hand.ended_ms if hand.ended_ms is not None else hand.now_ms
        out: list[ClassicEvent] = []
        if kind is SessionKind.SINGLE:
            return self._finish(res.winners, self._single_standings(res), "single", at)
        if kind is SessionKind.THRESHOLD and any(self.totals[s] > n for s in self.active):
            return self._finish_lowest("threshold", at)
        if kind is SessionKind.HANDS and len(self.hands) >= n:
            return self._finish_lowest("hands", at)
        if kind is SessionKind.ELIMINATION:
            gone = [s for s in self.active if self.totals[s] > n]
            staying = [s for s in self.active if s not in gone]
            if not staying:  # cannot happen (a hand's winner scores 0); keep the lowest
                low = min(self.totals[s] for s in gone)
                staying = [s for s in gone if self.totals[s] == low]
                gone = [s for s in gone if s not in staying]
            for s in gone:
                self.eliminated.append(s)
                ev = ClassicEvent("eliminated", at, s, detail=f"total {self.totals[s]} > {n}")
                self.events.append(ev)
                out.append(ev)
            if len(staying) == 1:
                order = (*staying, *reversed(self.eliminated))
                return out + self._finish(tuple(staying), order, "elimination", at)
        return out

    def _end_session(self, seat: Seat) -> list[ClassicEvent]:
        if seat not in self.seats:
            raise illegal("session/not-seated", f"{seat} has no seat at this table")
        if self.variants.session is not SessionKind.OPEN:
            raise illegal("session/not-open", "only an open session is ended by the players; "
                          f"this one is {self.variants.session.value} (C11)")
        if self.result is not None:
            raise illegal("session/over", "the session is over (C11)")
        if not self.hand.over:
            raise illegal("session/hand-in-play", "an open session ends between hands: finish "
                          "this hand first (C11)")
        return self._finish_lowest("open", self.now_ms)

    def _finish_lowest(self, reason: str, at: int) -> list[ClassicEvent]:
        """The lowest total wins (C11, Score Buddy counts 'al contrario'); ties share it."""
        order = tuple(sorted(self.active, key=lambda s: (self.totals[s], s)))
        low = self.totals[order[0]]
        winners = tuple(s for s in order if self.totals[s] == low)
        return self._finish(winners, (*order, *reversed(self.eliminated)), reason, at)

    def _single_standings(self, res: HandResult) -> tuple[Seat, ...]:
        """A single hand: the winner first, then the fewest penalties."""
        return tuple(sorted(self.hand.playing, key=lambda s: (s not in res.winners,
                                                               res.points[s], s)))

    def _finish(self, winners: tuple[Seat, ...], standings: tuple[Seat, ...], reason: str,
                at: int) -> list[ClassicEvent]:
        self.result = SessionResult(winners, tuple(self.totals), standings, reason)
        ev = ClassicEvent("ended", at, winners[0] if len(winners) == 1 else None,
                          detail=self.result.summary())
        self.events.append(ev)
        return [ev]
