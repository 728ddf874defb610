"""The dynamic state of one table: players, calate, holds, clocks, ping-pong episodes, timers,
the result. Plain data, no behaviour (the table's whole state is `tablestate.TableState`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

from .cards import Card
from .seats import SEATS, Seat

# Rule constants, in milliseconds of server time (M2.3).
CALATA_MS = 40_000  # M5.0.1
CONSOLIDATION_MS = 40_000  # M5.5.8
HOLD_MS = 10_000  # M6.3
INACTIVITY_MS = 120_000  # M7.1
STOP_MS = 180_000  # M9.3
DORMANT_MS = 10_000  # M11.1 decision
ABANDON_MS = 90_000  # M11.2
TIEBREAK_MS = 120_000  # M10.2
PAUSE_MS = 60_000  # M13.4
LONG_MATCH_TARGET = 150  # M13.3

WIN_POINTS = 50  # M12.1
FULL_TALLONE_BONUS = 10  # M12.2
PENALTY = -15  # M8.4, M9.6, M11.2


class Phase(enum.Enum):
    PLAYING = "playing"
    FROZEN = "frozen"
    TIEBREAK = "tiebreak"
    PAUSE = "pause"
    ENDED = "ended"


class PlayerStatus(enum.Enum):
    ACTIVE = "active"
    ELIMINATED = "eliminated"
    ABANDONED = "abandoned"
    OUT = "out"  # left a long match


class CalataStatus(enum.Enum):
    OPEN = "open"
    CONFIRMED = "confirmed"  # concluded, the chain may still reach it (M5.5.8)
    CONSOLIDATED = "consolidated"  # definitive
    FELL = "fell"  # concluded with none of its work standing, or undone whole by the chain


@dataclass(slots=True)
class Calata:
    id: int
    player: Seat
    started_ms: int
    deadline_ms: int | None  # None while suspended by a freeze or during one's own Stop!
    ops: list[int] = field(default_factory=list)  # live op seqs, in order
    status: CalataStatus = CalataStatus.OPEN
    concluded_ms: int | None = None
    consolidate_ms: int | None = None
    had_direct: bool = False  # contains a direct meld (M8.2(2)) among its surviving ops
    # Judgement at the player's last move (M5.4.2): own ops on irregular melds, and for each
    # own op the other calate's ops it needed (M5.4.4).
    fail_ops: frozenset[int] = frozenset()
    needs: dict[int, frozenset[int]] = field(default_factory=dict)
    touched_now: frozenset[int] = frozenset()  # current ids of the melds it touches (M6.6)
    is_stop: bool = False  # the stopper's calata during a freeze (M9)
    suspended_left_ms: int | None = None  # a frozen calata's time: restarts at 40 s (M9.6)
    consolidate_left_ms: int | None = None  # a consolidation clock stopped by a freeze


@dataclass
class Hold:
    card: Card
    deadline_ms: int


@dataclass
class PlayerState:
    seat: Seat
    tallone: list[Card]  # top card last (pop() draws)
    hand: set[Card] = field(default_factory=set)
    pozzetto: set[Card] = field(default_factory=set)
    status: PlayerStatus = PlayerStatus.ACTIVE
    drawn: bool = False  # M8.2(1)
    direct_meld_given: bool = False  # M8.2(2) met by the setup of an explicit position
    direct_meld_calate: set[int] = field(default_factory=set)  # concluded calate with a direct meld
    calata: int | None = None  # the open calata (M5.0: at most one)
    hold: Hold | None = None
    silent: bool = False  # not sending signs of life (M11.1)
    unknown: bool = False  # nobody can tell whether they are (the absence count stops)
    last_sign_ms: int = 0  # the last sign of life (dormant 10 s after it, M11.1 decision)
    absence_since_ms: int | None = None  # the 90 s count (M11.2); None while it does not run
    said_stop: bool = False  # M9.1: once per smazzata
    pending_draws: int = 0  # M7.4: forced draws delivered when the pozzetto calata concludes

    @property
    def in_play(self) -> bool:
        return self.status is PlayerStatus.ACTIVE

    @property
    def has_direct_meld(self) -> bool:
        return self.direct_meld_given or bool(self.direct_meld_calate)


@dataclass
class Episode:
    """A card moved by open calate (M6.5, pingpong.py): how many times it has stood at each
    position (meld id), who moved it, and the seqs of its moves, in order."""

    visits: dict[int, int] = field(default_factory=dict)
    movers: set[Seat] = field(default_factory=set)
    ops: list[int] = field(default_factory=list)


class TimerKind(enum.IntEnum):
    """What a timer ends; the values are the fixed order of timers due at one instant
    (timers.py)."""

    HOLD = 0  # M6.3
    CALATA = 1  # M5.4.6
    STOP = 2  # M9.6
    CONSOLIDATE = 3  # M5.5.8
    ABSENCE = 4  # M11.2
    INACTIVITY = 5  # M7.3
    TIEBREAK = 6  # M10.3


class Timer(NamedTuple):
    """Ordered as a tuple: deadline, then the fixed order of kinds, then seat or calata id."""

    at_ms: int
    kind: TimerKind
    ref: int = 0


@dataclass(frozen=True)
class SmazzataResult:
    winner: Seat | None
    scores: tuple[int, int, int]
    ending: str  # closing | survivor | silence | tiebreak | draw | everyone-gone
    draw: tuple[Seat, ...] = ()  # the tied players of a patta (M10.3)

    @property
    def closed(self) -> bool:
        return self.ending == "closing"

    def summary(self) -> str:
        pts = ", ".join(f"{s} {self.scores[s]:+d}" for s in SEATS)
        if self.draw:
            who = "draw " + " ".join(str(s) for s in self.draw)
        else:
            who = f"winner {self.winner}" if self.winner is not None else "no winner"
        return f"{self.ending}: {who}; {pts}"
