"""A classic table's variant set: one frozen value, validated when it is made.

Where seeds 003 and 004 differ, the choice is a variant (RULES-NOTES.md, section C); every
default follows seed 003. A table carries one `Variants` from creation to its end; a value
that no table can play raises `VariantError` (a `RulesError` with a stable code) at once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from machiavelox.rules import InvalidActionError

from .seats import Seat, seats_of

TWO_DECK_HAND = 13  # C1
THREE_DECK_HAND = 15  # C1
PENALTIES = (0, 1, 3)  # C6: the turn just passes | one card (default) | three cards
JOKER_COUNTS = (0, 2, 4)  # C2


class Aces(enum.Enum):
    """C3: where the Ace may stand in a run."""

    LOW = "low"  # A-2-3 only (default, seed 003)
    LOW_HIGH = "low-high"  # also Q-K-A, never K-A-2
    CIRCULAR = "circular"  # K-A-2 too (as Machiavelox, M3.2)


class Scoring(enum.Enum):
    """C9: the penalty value of the cards left in hand."""

    FACE = "face"  # A 1, J/Q/K 10, others face value, joker 25 (default, seed 003)
    SCALA40 = "scala40"  # A 11, J/Q/K 10, others face value, joker 25 (seed 004)


class SessionKind(enum.Enum):
    """C11: how many hands a session lasts and who wins it."""

    SINGLE = "single"  # one hand; the winner scores the opponents' penalties (default)
    THRESHOLD = "threshold"  # until someone's total exceeds N; lowest total wins
    HANDS = "hands"  # N hands; lowest total wins
    ELIMINATION = "elimination"  # whoever exceeds N is out; the last one left wins
    OPEN = "open"  # until the players end it between hands; lowest total wins


_NEEDS_N = (SessionKind.THRESHOLD, SessionKind.HANDS, SessionKind.ELIMINATION)


class VariantError(InvalidActionError):
    """A variant set no table can play; `code` is ``variant/...``."""


@dataclass(frozen=True)
class Variants:
    """Every house rule of one classic table (SCENARIO-FORMAT.md, "Classic Machiavelli")."""

    players: int = 4
    decks: int = 2
    jokers: int = 0
    aces: Aces = Aces.LOW
    opening: int = 0  # C8: minimum points of a player's opening melds; 0 = no opening rule
    turn_time_ms: int = 0  # C7: 0 = untimed
    penalty: int = 1  # C6: cards drawn after a failed turn
    scoring: Scoring = Scoring.FACE
    session: SessionKind = SessionKind.SINGLE
    session_n: int | None = None  # N of threshold / hands / elimination

    def __post_init__(self) -> None:
        if not 2 <= self.players <= 6:
            raise VariantError("variant/players",
                               f"a classic table seats 2 to 6 players, not {self.players} (C1)")
        if self.decks not in (2, 3):
            raise VariantError("variant/decks",
                               f"classic plays with two or three decks, not {self.decks} (C1)")
        if self.decks == 2 and self.players > 5:
            raise VariantError("variant/players-decks",
                               f"{self.players} players need three decks: two decks seat 2 to "
                               "5 players (C1)")
        if self.decks == 3 and self.players < 5:
            raise VariantError("variant/players-decks",
                               f"three decks are for 5 or 6 players, not {self.players}: play "
                               "with two decks (C1)")
        if self.jokers not in JOKER_COUNTS:
            raise VariantError("variant/jokers",
                               f"a table plays with 0, 2 or 4 jokers, not {self.jokers} (C2)")
        if self.opening < 0:
            raise VariantError("variant/opening",
                               f"the opening threshold is 0 (none) or a number of points, not "
                               f"{self.opening} (C8)")
        if self.turn_time_ms < 0:
            raise VariantError("variant/turn-time",
                               "a turn's time is 0 (untimed) or a positive number of seconds (C7)")
        if self.penalty not in PENALTIES:
            raise VariantError("variant/penalty",
                               f"the penalty of a failed turn is 1, 3 or 0 cards, not "
                               f"{self.penalty} (C6)")
        if self.session in _NEEDS_N:
            if self.session_n is None or self.session_n <= 0:
                raise VariantError("variant/session",
                                   f"a {self.session.value} session needs a positive number "
                                   f"(e.g. {self.session.value} 100) (C11)")
        elif self.session_n is not None:
            raise VariantError("variant/session",
                               f"a {self.session.value} session takes no number (C11)")

    @property
    def hand_size(self) -> int:
        """Cards dealt to each player (C1)."""
        return TWO_DECK_HAND if self.decks == 2 else THREE_DECK_HAND

    @property
    def deck_size(self) -> int:
        return 52 * self.decks + self.jokers

    @property
    def seats(self) -> tuple[Seat, ...]:
        return seats_of(self.players)

    @property
    def timed(self) -> bool:
        return self.turn_time_ms > 0

    def describe(self) -> str:
        """One line for logs and views: ``4 players, 2 decks, jokers 2, aces low, ...``."""
        session = self.session.value + (f" {self.session_n}" if self.session_n else "")
        turn = f"{self.turn_time_ms / 1000:g} s" if self.timed else "untimed"
        return (f"{self.players} players, {self.decks} decks, jokers {self.jokers}, aces "
                f"{self.aces.value}, opening {self.opening}, turns {turn}, penalty "
                f"{self.penalty}, scoring {self.scoring.value}, session {session}")
