"""Scoring of a smazzata (M12)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .seats import SEATS, Seat
from .state import FULL_TALLONE_BONUS, PENALTY, WIN_POINTS, PlayerStatus

if TYPE_CHECKING:
    from .table import Table


@dataclass(frozen=True)
class SmazzataResult:
    winner: Seat | None
    closed: bool  # ended by a closing (M8) rather than by silence, survivors or a draw
    scores: tuple[int, int, int]
    draw: tuple[Seat, ...] = ()  # the tied players of a patta (M10.3)
    ending: str = "closing"  # closing | survivor | silence | draw | everyone-gone

    def summary(self) -> str:
        pts = ", ".join(f"{s} {self.scores[s]:+d}" for s in SEATS)
        who = f"winner {self.winner}" if self.winner is not None else "no winner"
        return f"{self.ending}: {who}; {pts}"


def cards_in_hand(table: Table, seat: Seat) -> int:
    """Hand plus pozzetto (M4.3: the pozzetto counts as hand)."""
    ps = table.players[seat]
    return len(ps.hand) + len(ps.pozzetto)


def score_closing(table: Table, winner: Seat | None, closed: bool) -> SmazzataResult:
    """M12.1-M12.4: the winner scores 50 - own tallone + opponents' cards in hand (pozzetti and
    eliminated or abandoned players included), +10 for a closing with the tallone used up;
    eliminated and abandoned players -15; everyone else 0."""
    scores = [0, 0, 0]
    for ps in table.players:
        if ps.status in (PlayerStatus.ELIMINATED, PlayerStatus.ABANDONED):
            scores[ps.seat] = PENALTY
    if winner is not None:
        wp = table.players[winner]
        pts = WIN_POINTS - len(wp.tallone)
        pts += sum(cards_in_hand(table, s) for s in SEATS if s != winner)
        if closed and not wp.tallone:
            pts += FULL_TALLONE_BONUS
        scores[winner] = pts
    ending = "closing" if closed else ("survivor" if winner is not None else "everyone-gone")
    return SmazzataResult(winner, closed, (scores[0], scores[1], scores[2]), ending=ending)
