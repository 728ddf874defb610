"""The whole state of one smazzata at one table, and the queries and guards over it.

`TableState` is data: every rule module reads and changes it (the layers: docs/rules-engine.md,
"Layers"); only `table.Table`, its facade, applies actions and lets time pass.
"""

from __future__ import annotations

from collections.abc import Iterator

from .actions import Action
from .board import Board, MeldIds, Op
from .cards import Card
from .deal import Deal
from .errors import illegal
from .events import Event
from .melds import is_regular
from .seats import SEATS, Seat
from .state import (
    DORMANT_MS,
    INACTIVITY_MS,
    Calata,
    Episode,
    Phase,
    PlayerState,
    SmazzataResult,
    Timer,
)


class TableState:
    def __init__(self, deal: Deal, start_ms: int = 0) -> None:
        self.deal = deal
        self.start_ms = start_ms
        self.now_ms = start_ms
        self.removed: tuple[Card, ...] = deal.removed
        self.players: list[PlayerState] = [
            PlayerState(
                seat=s,
                tallone=list(reversed(deal.talloni[s])),
                hand=set(deal.hands[s]),
                drawn=s in deal.drawn,
                direct_meld_given=s in deal.direct_meld,
                last_sign_ms=start_ms,  # M11.5: absence counts from the start
            )
            for s in SEATS
        ]
        self.parents: dict[int, int] = {}
        self.creators: dict[int, int] = {}
        self.base = Board(parents=self.parents, creators=self.creators)
        self._next_meld = 1
        for cards in deal.table:
            self.base.new_meld(self._next_meld, cards)
            self._next_meld += 1
        self.board = self.base.copy()
        self.ops: dict[int, Op] = {}  # live ops by seq
        self.live: list[int] = []  # live op seqs, in arrival order
        self.calate: dict[int, Calata] = {}
        self.unsettled: set[int] = set()  # calate open or confirmed: the ones with timers
        self._next_seq = 1
        self._next_calata = 1
        self.phase = Phase.PLAYING
        self.inactivity_ms = start_ms + INACTIVITY_MS
        self.inactivity_left_ms: int | None = None  # the countdown stopped by a freeze
        # Stop! (M9)
        self.stopper: Seat | None = None
        self.stop_deadline_ms: int | None = None
        self.frozen: tuple[Seat, ...] = ()
        # tiebreak (M10.2)
        self.tiebreak_players: tuple[Seat, ...] = ()
        self.tiebreak_ms: int | None = None
        self.common: set[Card] = set()
        self.common_owner: dict[Card, Seat] = {}
        # ping-pong (M6.5)
        self.episodes: dict[Card, Episode] = {}
        self.reserved: dict[Card, Seat] = {}
        self.result: SmazzataResult | None = None
        self.log: list[tuple[int, Action]] = []
        self.events: list[Event] = []
        # The state changes only by an accepted action (the log grows) or a timer firing (this
        # grows): the pair keys the timers' cache (timers.all_timers).
        self.fired = 0
        self.timer_cache: tuple[tuple[int, int], list[Timer], int | None] | None = None

    # ------------------------------------------------------------------ queries
    def live_ops(self) -> list[Op]:
        return [self.ops[s] for s in self.live]

    def open_calata(self, seat: Seat) -> Calata | None:
        cid = self.players[seat].calata
        return None if cid is None else self.calate[cid]

    def open_calate(self) -> Iterator[Calata]:
        for ps in self.players:
            if ps.calata is not None:
                yield self.calate[ps.calata]

    def held_by(self, card: Card) -> Seat | None:
        for ps in self.players:
            if ps.hold is not None and ps.hold.card is card:
                return ps.seat
        return None

    def pozzetto_of(self, ps: PlayerState) -> set[Card]:
        """The cards a player places from: the pozzetto, or the common one in a tiebreak."""
        if self.phase is Phase.TIEBREAK and ps.seat in self.tiebreak_players:
            return self.common
        return ps.pozzetto

    def table_in_order(self) -> bool:
        """Every meld on the table regular (the stopper's duty, M9.4)."""
        return all(is_regular(cards) for cards in self.board.melds.values())

    def is_dormant(self, seat: Seat) -> bool:
        """M11.1 decision: shown dormant 10 s after the last sign of life."""
        ps = self.players[seat]
        return ps.in_play and ps.silent and self.now_ms - ps.last_sign_ms >= DORMANT_MS

    def status_word(self, seat: Seat) -> str:
        """active | dormant | frozen | eliminated | abandoned | out (scenario format)."""
        ps = self.players[seat]
        if not ps.in_play:
            return ps.status.value
        if self.phase is Phase.FROZEN and seat in self.frozen:
            return "frozen"
        return "dormant" if self.is_dormant(seat) else "active"

    # ------------------------------------------------------------------ ids
    def reserve_meld_ids(self) -> MeldIds:
        ids = MeldIds(self._next_meld, self._next_meld + 1, self._next_meld + 2)
        self._next_meld += 3
        return ids

    def next_op_seq(self) -> int:
        self._next_seq += 1
        return self._next_seq - 1

    def next_calata_id(self) -> int:
        self._next_calata += 1
        return self._next_calata - 1

    # ------------------------------------------------------------------ guards
    def actor(self, seat: Seat) -> PlayerState:
        """The player acting now, if they may act at all."""
        if self.phase in (Phase.ENDED, Phase.PAUSE):
            raise illegal("smazzata/ended", "the smazzata is over")
        ps = self.players[seat]
        if not ps.in_play:
            raise illegal("player/out", f"{seat} is {ps.status.value} and cannot play")
        if self.phase is Phase.FROZEN and seat != self.stopper:
            raise illegal("phase/frozen", f"the game is frozen by {self.stopper}'s Stop! (M9.2)")
        if self.phase is Phase.TIEBREAK and seat not in self.tiebreak_players:
            raise illegal("tiebreak/not-tied", f"{seat} is not in the tiebreak (M10.2)")
        return ps
