"""Scoring of a smazzata (M12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .seats import SEATS, Seat
from .state import FULL_TALLONE_BONUS, PENALTY, WIN_POINTS, PlayerStatus, SmazzataResult

if TYPE_CHECKING:
    from .tablestate import TableState


def cards_held(table: TableState, seat: Seat) -> int:
    """Hand plus pozzetto (M4.3), plus own cards left in a tiebreak's common pozzetto."""
    ps = table.players[seat]
    common = sum(1 for c in table.common if table.common_owner.get(c) == seat)
    return len(ps.hand) + len(ps.pozzetto) + common


def _base_scores(table: TableState) -> list[int]:
    """M12.4: eliminated and abandoned players -15; everyone else 0 until decided."""
    return [PENALTY if table.players[s].status in (PlayerStatus.ELIMINATED,
                                                   PlayerStatus.ABANDONED) else 0
            for s in SEATS]


def score_win(table: TableState, winner: Seat | None, ending: str) -> SmazzataResult:
    """M12.1-M12.3: the winner scores 50 - own tallone + the opponents' cards in hand (pozzetti,
    eliminated and abandoned players, and their cards left in a common pozzetto included);
    +10 for a closing with the tallone used up."""
    scores = _base_scores(table)
    if winner is not None:
        wp = table.players[winner]
        pts = WIN_POINTS - len(wp.tallone)
        pts += sum(cards_held(table, s) for s in SEATS if s != winner)
        if ending == "closing" and not wp.tallone:
            pts += FULL_TALLONE_BONUS
        scores[winner] = pts
    return SmazzataResult(winner, (scores[0], scores[1], scores[2]), ending)


def score_draw(table: TableState, tied: tuple[Seat, ...]) -> SmazzataResult:
    """M12.5 decision: each tied player scores 50 - own tallone (0) + the non-tied opponents'
    cards - the common pozzetto, never below -15 (staying must not cost more than leaving)."""
    scores = _base_scores(table)
    others = sum(cards_held(table, s) for s in SEATS if s not in table.tiebreak_players)
    for s in tied:
        pts = WIN_POINTS - len(table.players[s].tallone) + others - len(table.common)
        scores[s] = max(PENALTY, pts)
    return SmazzataResult(None, (scores[0], scores[1], scores[2]), "draw", draw=tied)
