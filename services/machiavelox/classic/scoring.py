"""Scoring (C9, C10, C11): penalty points in hand, a hand's result, a session's result.

Points are penalties: the best player has the fewest. A hand's winner scores 0 and every other
player the penalty value of the cards left in hand, except in a single-hand session, where the
winner scores the sum of the opponents' penalties (seed 003's "alternativa") and the others 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .cards import JOKER_PENALTY, ClassicCard, Joker
from .seats import Seat
from .variants import Scoring


def card_points(c: ClassicCard, scoring: Scoring) -> int:
    """C9: face (A 1, J/Q/K 10, others face value, joker 25) or scala40 (A 11)."""
    if isinstance(c, Joker):
        return JOKER_PENALTY
    if c.rank == 1:
        return 11 if scoring is Scoring.SCALA40 else 1
    return 10 if c.rank > 10 else c.rank


def hand_points(cards: Iterable[ClassicCard], scoring: Scoring) -> int:
    return sum(card_points(c, scoring) for c in cards)


@dataclass(frozen=True)
class HandResult:
    """How one hand ended. `points[i]` is seat i's penalty in hand (0 for a winner, and for a
    seat that did not play); `scores[i]` what the hand adds to seat i's total."""

    winners: tuple[Seat, ...]
    ending: str  # out (a player played the last card, C9) | stock (the stock ran out, C10)
    points: tuple[int, ...]
    scores: tuple[int, ...]

    def summary(self) -> str:
        who = " ".join(str(s) for s in self.winners)
        pts = ", ".join(f"p{i + 1} {p}" for i, p in enumerate(self.scores))
        return f"{self.ending}: winner {who}; {pts}"


def hand_result(winners: tuple[Seat, ...], ending: str, in_hand: dict[Seat, int],
                players: int, single: bool) -> HandResult:
    """The result of a hand from each playing seat's penalty points in hand (C9, C10, C11)."""
    points = [0] * players
    for seat, pts in in_hand.items():
        if seat not in winners:
            points[seat] = pts
    if single:  # C11 single: the winner scores the opponents' penalties, the others 0
        gain = sum(points)
        scores = [gain if Seat(i) in winners else 0 for i in range(players)]
    else:
        scores = list(points)
    return HandResult(winners, ending, tuple(points), tuple(scores))


@dataclass(frozen=True)
class SessionResult:
    """How a session ended: its winners (several only on a tie), the totals, and the standings
    (best first: the lowest total, C11; a single hand: by the hand's penalties, the winner
    first; elimination: the last one left, then the later eliminated first)."""

    winners: tuple[Seat, ...]
    totals: tuple[int, ...]
    standings: tuple[Seat, ...]
    reason: str  # single | threshold | hands | elimination | open

    def summary(self) -> str:
        who = " ".join(str(s) for s in self.winners)
        order = ", ".join(f"{s} {self.totals[s]}" for s in self.standings)
        return f"{self.reason}: winner {who}; {order}"
