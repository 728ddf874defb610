"""A classic Machiavelli table as the client knows it (issue 16): built only from what the
server sends, as `model.py` is for Machiavelox.

A `classic_snapshot` is the truth: it is read back with `classic_codec.view_from_pb` (the very
function the network bots read their views with) and replaces everything: the own hand, every
seat's card count, opening status (C8) and session total (C11), the melds with what each joker
stands for (C2), the stock's count, whose turn it is and its deadline (C7), the standings and
the results. Between two snapshots the events that name what they move are followed at once
(a turn beginning, a draw, a new meld, a card added, moved or swapped): bookkeeping of what
the server told, never a judgement; the melds they touched are `provisional` (their validity
and display order unknown) and the screen asks for the next snapshot after each event. A
restore, a penalty, a hand's or the session's end are left to that snapshot. The client
decides no rule. What it keeps as the Machiavelox model does is `model_base.ModelBase`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, gateway_pb2

from . import classic_words as words
from .cards import sorted_cards
from .classic_words import seat_index
from .model_base import LogLine, ModelBase, TableClock


@dataclass
class ClassicSeatState:
    seat: int
    name: str
    hand_count: int = 0
    opened: bool = False  # C8
    total: int = 0  # C11
    eliminated: bool = False
    playing: bool = True  # dealt in this hand


@dataclass
class ClassicMeld:
    id: int
    cards: list[int]  # display order (a run from its low end)
    stands_for: list[str] = field(default_factory=list)  # per card: a joker's face ("9H")
    kind: str = ""  # "set" or "run"; "" not a valid meld (only in the middle of a turn)
    provisional: bool = False  # changed by an event since the last snapshot

    @property
    def valid(self) -> bool:
        return bool(self.kind) and not self.provisional

    @property
    def card_indexes(self) -> list[int]:
        return self.cards


class ClassicModel(ModelBase[ClassicSeatState, ClassicMeld, int, classic.ClassicAction]):
    """One player's classic table, from snapshots and events (module docstring)."""

    SNAPSHOT = "classic_snapshot"

    def __init__(self, table_id: str, players: list[str], me: str,
                 clock: TableClock | None = None) -> None:
        super().__init__(table_id, players, me, clock)
        # (phase: playing | between | ended)
        self.variants: classic.Variants | None = None
        self.hand_number = 1
        self.seats = [ClassicSeatState(i, name) for i, name in enumerate(self.players)]
        self.melds = []
        self.stock = 0
        self.turn: int | None = None
        self.turn_ends_ms: int | None = None
        self.turn_changed = False
        self.standings: list[int] = []
        self.last_hand: classic.HandResult | None = None
        self.result: classic.SessionResult | None = None
        self.ended_detail = ""  # the `ended` event's words, until a snapshot has the result

    # ---------------------------------------------------------------- derived, for screens
    @property
    def my_turn(self) -> bool:
        return self.me is not None and self.turn == self.me and self.phase == "playing"

    def turn_left_s(self) -> float | None:
        """Wall-clock seconds left of a timed turn (C7); None when untimed."""
        return self.clock.left_s(self.turn_ends_ms) if self.phase == "playing" else None

    # ---------------------------------------------------------------- input
    def _snapshot(self, response: gateway_pb2.PlayResponse) -> None:
        self.apply_snapshot(response.classic_snapshot)

    def apply_snapshot(self, snap: classic_pb2.ClassicSnapshot) -> None:
        view = classic_codec.view_from_pb(snap.view)
        self.variants = classic_codec.variants_from_pb(snap.view.variants)
        self._fresh(snap.seq, view.now_ms)
        if self.me is None and view.viewer is not None:
            self.me = view.viewer.value
        while len(self.seats) < len(view.seats):  # (names unknown: p4, p5, ...)
            self.players.append(f"p{len(self.seats) + 1}")
            self.seats.append(ClassicSeatState(len(self.seats), self.players[-1]))
        self.phase = view.phase
        self.hand_number = view.hand_number
        self.hand = [c.index for c in view.hand]
        for sv in view.seats:
            s = self.seats[sv.seat.value]
            s.hand_count, s.opened, s.total = sv.hand_count, sv.opened, sv.total
            s.eliminated, s.playing = sv.status == "eliminated", sv.playing
        self.melds = [ClassicMeld(m.id, [c.index for c in m.cards],
                                  [f or "" for f in m.stands_for],
                                  m.kind.value if m.kind is not None else "")
                      for m in view.table]
        self.stock = view.stock_count
        self.turn = view.turn.value if view.turn is not None else None
        self.turn_ends_ms = view.turn_ends_ms
        self.turn_changed = view.turn_changed
        self.standings = [s.value for s in view.standings]
        self.last_hand = view.last_hand
        self.result = view.result

    def _event_line(self, ev: common_pb2.Event) -> LogLine:
        return words.event_line(self, ev)

    def _refusal_line(self, action: classic.ClassicAction | None, code: str,
                      message: str) -> LogLine:
        return words.refusal_line(self, action, code, message)

    def describe(self, action: classic.ClassicAction | None) -> str:
        return words.describe(self, action)

    # ---------------------------------------------------------------- the events' bookkeeping
    def _patch(self, ev: common_pb2.Event) -> None:
        p = seat_index(ev.player)
        cards = [c.index for c in ev.cards]
        kind = ev.kind
        s = self.seats[p] if p is not None and p < len(self.seats) else None
        if kind == "interrupted":
            self.clock.restart()
        elif kind in ("hand-ended", "ended"):
            self.phase, self.turn = "between" if kind == "hand-ended" else "ended", None
            if kind == "ended":
                self.ended_detail = ev.detail
        if s is None:
            return
        if kind == "turn":
            self.turn, self.turn_changed = s.seat, False
            v = self.variants
            self.turn_ends_ms = ev.at_ms + v.turn_time_ms if v is not None and v.timed else None
        elif kind == "drew":
            self.stock = max(0, self.stock - 1)
            s.hand_count += 1
            if s.seat == self.me:
                self.hand = sorted_cards([*self.hand, *cards])
        elif kind == "melded":
            self._from_hand(s, cards)
            self.melds.append(ClassicMeld(ev.meld, cards, provisional=True))
        elif kind == "attached":
            self._from_hand(s, cards)
            self._onto(ev.meld, cards)
        elif kind == "moved" and cards:
            self._lift(ev.meld, cards[0])
            self._onto(ev.to_meld, cards)
        elif kind == "swapped" and len(cards) == 2:
            card, joker = cards
            self._from_hand(s, [card])
            s.hand_count += 1
            if s.seat == self.me:
                self.hand = sorted_cards([*self.hand, joker])
            meld = self.meld(ev.meld)
            if meld is not None:
                meld.cards = [card if c == joker else c for c in meld.cards]
                meld.provisional = True
        if kind in ("melded", "attached", "moved", "swapped"):
            self.turn_changed = True

    def _new_meld(self, meld_id: int, cards: list[int]) -> ClassicMeld:
        return ClassicMeld(meld_id, list(cards), provisional=True)

    def _lift(self, meld_id: int, card: int) -> None:
        meld = self.meld(meld_id)
        if meld is None:
            return
        meld.cards = [c for c in meld.cards if c != card]
        meld.provisional = True
        if not meld.cards:
            self.melds.remove(meld)
