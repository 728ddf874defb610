"""The table as the client knows it: built only from what the server sends (issue 15).

A `Snapshot` is the truth: it replaces everything. Between two snapshots the events move the
cards they name, exactly as they say (a draw, a declaration, a card attached, placed, taken,
moved, released): that is bookkeeping of what the server told, never a judgement, so the screen
follows at once; the melds an event touched are marked `provisional` (their regularity and
display order unknown) and the model asks for the next snapshot (`stale`). Whatever an event
does not spell out card by card (a calata's judgement, a chain, a consolidation, the end) is
left to that snapshot. The client decides no rule: regularity, statuses, zones and deadlines
are the view's.

Clocks the view gives (own calata's 40 s, the inactivity countdown, the 90 s to abandonment)
are shown from it; those it does not carry (a Stop!'s 3 minutes, a hold's 10 s, a tiebreak's 2
minutes, a long match's pause) are dated from the event that started them plus the rulebook's
duration (`rules.state`). Table time runs at the shard's pace (`TableClock`). What the classic
table's model keeps the same way is in `model_base.ModelBase`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.rules import ABANDON_MS, HOLD_MS, PAUSE_MS, STOP_MS, TIEBREAK_MS

from . import words
from .cards import sorted_cards
from .model_base import LogLine, ModelBase, TableClock
from .words import seat_of

PHASES = {common_pb2.PHASE_PLAYING: "playing", common_pb2.PHASE_FROZEN: "frozen",
          common_pb2.PHASE_TIEBREAK: "tiebreak", common_pb2.PHASE_PAUSE: "pause",
          common_pb2.PHASE_ENDED: "ended"}
STATUSES = {common_pb2.PLAYER_STATUS_ACTIVE: "active", common_pb2.PLAYER_STATUS_DORMANT: "dormant",
            common_pb2.PLAYER_STATUS_FROZEN: "frozen",
            common_pb2.PLAYER_STATUS_ELIMINATED: "eliminated",
            common_pb2.PLAYER_STATUS_ABANDONED: "abandoned", common_pb2.PLAYER_STATUS_OUT: "out"}
CARD_STATUSES = {common_pb2.CARD_STATUS_TRIAL: "trial",
                 common_pb2.CARD_STATUS_CONFIRMED: "confirmed",
                 common_pb2.CARD_STATUS_CONSOLIDATED: "consolidated"}
OUT = frozenset({"eliminated", "abandoned", "out"})


class Touch(NamedTuple):
    """The last event that touched a card or a meld: its seq, its player's seat, its kind and
    the arrival index of the action that made it (0: time did)."""

    seq: int
    seat: int | None
    kind: str
    arrival: int

    def when(self) -> str:
        """Where it stands in the table's order: its arrival index, else its event number."""
        return f"arrival #{self.arrival}" if self.arrival else f"event #{self.seq}"


@dataclass
class TableCard:
    card: int
    status: str = "trial"  # trial, confirmed, consolidated (P2)
    trial_by: int | None = None
    held_by: int | None = None


@dataclass
class Meld:
    id: int
    cards: list[TableCard]
    regular: bool = True
    status: str = "consolidated"
    provisional: bool = False  # changed by an event since the last snapshot

    @property
    def card_indexes(self) -> list[int]:
        return [tc.card for tc in self.cards]


@dataclass
class SeatState:
    seat: int
    name: str
    status: str = "active"
    hand_count: int = 0
    pozzetto: list[int] = field(default_factory=list)
    tallone: int = 34
    calata_open: bool = False
    calata_deadline_ms: int | None = None
    zone: list[int] = field(default_factory=list)
    holding: int | None = None
    held_since_ms: int | None = None  # the `took` event's time: the hold ends 10 s later
    abandon_at_ms: int | None = None
    out_since_ms: int | None = None  # when it was eliminated / abandoned / left (its event)
    said_stop: bool = False
    ready: bool = False

    @property
    def out(self) -> bool:
        return self.status in OUT


class TableModel(ModelBase[SeatState, Meld, TableCard, rules.Action]):
    """One player's table, from snapshots and events (module docstring; what both games'
    models share: `model_base.ModelBase`)."""

    SNAPSHOT = "snapshot"

    def __init__(self, table_id: str, players: list[str], me: str,
                 clock: TableClock | None = None) -> None:
        super().__init__(table_id, players, me, clock)
        self.players += [f"p{i + 1}" for i in range(len(players), 3)]
        self.removed: list[int] = []
        self.seats = [SeatState(i, self.players[i]) for i in range(3)]
        self.melds = []
        self.stopper: int | None = None
        self.common: list[int] = []
        self.tiebreak: list[int] | None = None  # the tied seats, from the tiebreak event
        self.inactivity_ms: int | None = None
        self.result: common_pb2.SmazzataResult | None = None
        self.stop_since_ms: int | None = None
        self.tiebreak_since_ms: int | None = None
        self.pause_since_ms: int | None = None
        self.standings = ""
        self.match_over = ""
        self.smazzata = 1
        self.arrivals: dict[int, int] = {}  # first event seq of an accepted action -> arrival
        self.last_arrival: int | None = None
        # who last touched a card or a meld: names the winner of a lost race (M6.4)
        self.card_touch: dict[int, Touch] = {}
        self.meld_touch: dict[int, Touch] = {}

    # ---------------------------------------------------------------- derived, for screens
    @property
    def in_tiebreak(self) -> bool:
        """Whether the viewer is one of the tied players (unknown: assumed, the server says)."""
        return self.phase == "tiebreak" and (self.tiebreak is None or self.me in self.tiebreak)

    @property
    def pozzetto(self) -> list[int]:
        """The cards the viewer places from: its pozzetto, or the tiebreak's common one."""
        if self.in_tiebreak and self.common:
            return self.common
        me = self.mine
        return me.pozzetto if me is not None else []

    def zones(self, meld_id: int) -> list[int]:
        """The seats whose open calata is working on this meld (M6.6)."""
        return [s.seat for s in self.seats if s.calata_open and meld_id in s.zone]

    def where(self, card: int) -> Meld | None:
        for m in self.melds:
            if any(tc.card == card for tc in m.cards):
                return m
        return None

    # ---------------------------------------------------------------- input
    def _snapshot(self, response: gateway_pb2.PlayResponse) -> None:
        self.apply_snapshot(response.snapshot)

    def _acked(self, ack: common_pb2.Ack) -> None:
        super()._acked(ack)
        self.arrivals[ack.seq] = ack.arrival_index
        self.last_arrival = ack.arrival_index

    def apply_snapshot(self, snap: common_pb2.Snapshot) -> None:
        v = snap.view
        self._fresh(snap.seq, v.now_ms)
        if self.me is None:
            self.me = seat_of(v.viewer)
        self.phase = PHASES.get(v.phase, "playing")
        self.removed = [c.index for c in v.removed]
        self.hand = [c.index for c in v.hand]
        for sv in v.seats:
            i = seat_of(sv.seat)
            if i is None:
                continue
            s = self.seats[i]
            s.status = STATUSES.get(sv.status, "active")
            s.hand_count = sv.hand_count
            s.pozzetto = [c.index for c in sv.pozzetto]
            s.tallone = sv.tallone_count
            s.calata_open = sv.calata_open
            s.calata_deadline_ms = sv.calata_deadline_ms or None
            s.zone = list(sv.zone)
            s.holding = sv.holding.index if sv.HasField("holding") else None
            if s.holding is None:
                s.held_since_ms = None
            s.abandon_at_ms = sv.abandon_at_ms or None
            s.said_stop = sv.said_stop
        self.melds = [Meld(m.id, [TableCard(tc.card.index, CARD_STATUSES.get(tc.status, "trial"),
                                            seat_of(tc.trial_by), seat_of(tc.held_by))
                                  for tc in m.cards],
                           m.regular, CARD_STATUSES.get(m.status, "trial")) for m in v.table]
        self.stopper = seat_of(v.stopper)
        if self.phase != "frozen":
            self.stop_since_ms = None
        if self.phase != "tiebreak":
            self.tiebreak_since_ms = None
            self.tiebreak = None
        if self.phase != "pause":
            self.pause_since_ms = None
            for s in self.seats:
                s.ready = False
        self.common = [c.index for c in v.common]
        self.inactivity_ms = v.inactivity_ms or None
        self.result = v.result if v.HasField("result") else None

    def _event_line(self, ev: common_pb2.Event) -> LogLine | None:
        line = words.event_line(self, ev)
        arrival = self.arrivals.pop(ev.seq, None)
        if line is not None and arrival is not None:
            line.text += f"  (your arrival #{arrival})"
        return line

    def _refusal_line(self, action: rules.Action | None, code: str, message: str) -> LogLine:
        return words.refusal_line(self, action, code, message)

    def describe(self, action: rules.Action | None) -> str:
        return words.describe(self, action)

    def note(self, text: str, kind: str = "info") -> LogLine:
        line = LogLine(text, kind)
        self.log.append(line)
        return line

    # ---------------------------------------------------------------- the events' bookkeeping
    def _patch(self, ev: common_pb2.Event) -> None:
        p = seat_of(ev.player)
        cards = [c.index for c in ev.cards]
        kind = ev.kind
        s = self.seats[p] if p is not None else None
        touch = Touch(ev.seq, p, kind, ev.arrival_index)
        for c in cards:
            self.card_touch[c] = touch
        for m in (ev.meld, ev.to_meld, *ev.melds):
            if m:
                self.meld_touch[m] = touch
        if s is None:
            self._table_event(ev, cards)
            return
        if kind == "drew":
            s.tallone = max(0, s.tallone - 1)
            s.hand_count += 1
            if p == self.me and cards:
                self.hand = sorted_cards([*self.hand, *cards])
        elif kind == "declared":
            self._from_hand(s, cards)
            s.pozzetto = sorted_cards([*s.pozzetto, *cards])
        elif kind == "undeclared":
            self._from_pozzetto(s, cards)
            s.hand_count += len(cards)
            if p == self.me:
                self.hand = sorted_cards([*self.hand, *cards])
        elif kind == "calata-opened":
            s.calata_open = True
        elif kind == "direct":
            self._from_pozzetto(s, cards)
            self.melds.append(self._new_meld(ev.meld, [TableCard(c, trial_by=p) for c in cards]))
        elif kind in ("attached", "placed"):
            if kind == "attached":
                self._from_hand(s, cards)
            else:
                self._from_pozzetto(s, cards)
            self._onto(ev.meld, [TableCard(c, trial_by=p) for c in cards])
        elif kind == "took" and cards:
            s.holding, s.held_since_ms = cards[0], ev.at_ms
            self._mark_held(cards[0], p)
        elif kind == "released":
            s.holding = s.held_since_ms = None
            for c in cards:
                self._mark_held(c, None)
        elif kind == "moved" and cards:
            s.holding = s.held_since_ms = None
            self._lift(cards[0])
            self._onto(ev.to_meld, [TableCard(cards[0], trial_by=p)])
        elif kind in ("confirmed", "failed", "cancelled", "void"):
            s.calata_open = False
            s.calata_deadline_ms = None
        elif kind == "stop":
            s.said_stop = True
            self.phase, self.stopper, self.stop_since_ms = "frozen", p, ev.at_ms
        elif kind in ("eliminated", "abandoned", "left"):
            s.status = "out" if kind == "left" else kind
            s.out_since_ms = ev.at_ms
        elif kind == "ready":
            s.ready = True
        elif kind in ("closed", "ended", "match-ended"):
            self._table_event(ev, cards)

    def _table_event(self, ev: common_pb2.Event, cards: list[int]) -> None:
        kind = ev.kind
        if kind == "resumed":
            self.phase, self.stopper = "playing", None
        elif kind == "tiebreak":
            self.phase, self.tiebreak_since_ms, self.common = "tiebreak", ev.at_ms, cards
            self.tiebreak = [int(w[1]) - 1 for w in ev.detail.split() if w in ("p1", "p2", "p3")]
        elif kind == "pause":
            self.phase, self.pause_since_ms, self.standings = "pause", ev.at_ms, ev.detail
        elif kind == "smazzata":
            self.smazzata += 1
            self.phase = "playing"
        elif kind == "ended":
            self.phase = "ended"
        elif kind == "match-ended":
            self.phase, self.match_over = "ended", ev.detail
        elif kind == "interrupted":
            self.clock.restart()

    def _from_pozzetto(self, s: SeatState, cards: list[int]) -> None:
        if self.phase == "tiebreak" and self.common:
            self.common = [c for c in self.common if c not in cards]
        s.pozzetto = [c for c in s.pozzetto if c not in cards]

    def _new_meld(self, meld_id: int, cards: list[TableCard]) -> Meld:
        return Meld(meld_id, cards, provisional=True)

    def _lift(self, card: int) -> None:
        meld = self.where(card)
        if meld is None:
            return
        meld.cards = [tc for tc in meld.cards if tc.card != card]
        meld.provisional = True
        if not meld.cards:
            self.melds.remove(meld)

    def _mark_held(self, card: int, seat: int | None) -> None:
        meld = self.where(card)
        if meld is not None:
            for tc in meld.cards:
                if tc.card == card:
                    tc.held_by = seat

    # ---------------------------------------------------------------- clocks (issue 15)
    def clocks(self) -> list[tuple[str, float]]:
        """The clocks that matter now, as (what, wall-clock seconds left)."""
        out: list[tuple[str, float]] = []
        me = self.mine

        def add(what: str, deadline_ms: int | None) -> None:
            left = self.clock.left_s(deadline_ms)
            if left is not None:
                out.append((what, left))

        if me is not None and me.calata_open and me.calata_deadline_ms:
            add("your calata", me.calata_deadline_ms)  # M5.0.1
        if me is not None and me.holding is not None and me.held_since_ms is not None:
            add("your hold", me.held_since_ms + HOLD_MS)  # M6.3
        if self.phase == "frozen" and self.stop_since_ms is not None:
            add("Stop!", self.stop_since_ms + STOP_MS)  # M9.3
        if self.phase == "tiebreak" and self.tiebreak_since_ms is not None:
            add("tiebreak", self.tiebreak_since_ms + TIEBREAK_MS)  # M10.2
        if self.phase == "pause" and self.pause_since_ms is not None:
            add("pause", self.pause_since_ms + PAUSE_MS)  # M13.4
        if self.phase == "playing":
            add("inactivity", self.inactivity_ms)  # M7
        return out

    def seat_clocks(self, seat: SeatState) -> list[tuple[str, float]]:
        """An opponent's clocks: its calata, its hold, its road to abandonment (M11.2)."""
        out: list[tuple[str, float]] = []
        for what, deadline in (("calata", seat.calata_deadline_ms if seat.calata_open else None),
                               ("hold", seat.held_since_ms + HOLD_MS
                                if seat.holding is not None and seat.held_since_ms is not None
                                else None),
                               ("abandons", seat.abandon_at_ms)):
            left = self.clock.left_s(deadline)
            if left is not None:
                out.append((what, left))
        return out

    def absent_for_s(self, seat: SeatState) -> float | None:
        """How long a counting absence has lasted (P4): from the view's abandonment time."""
        if seat.abandon_at_ms is None:
            return None
        return max(0.0, (self.clock.now() - (seat.abandon_at_ms - ABANDON_MS))
                   / 1000.0 / self.clock.scale)
