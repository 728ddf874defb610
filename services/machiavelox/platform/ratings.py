"""Skill ratings (openskill): one rating per player, its ordinal the matching key (the agorà)
and the ranked classic leaderboard's order (scoring). Shared by matchmaking and scoring, so
both rate a result the same way.

Why a multiplayer rating system: a Machiavelox table seats three players in a free-for-all, and a
smazzata ranks them (winner, then the others by score, with ties: a patta, or two losers on 0).
Elo and Glicko rate pairwise games; splitting one three-player result into three pairwise games
counts it three times and pretends the pairs were independent. A Weng-Lin (Bayesian) model rates
the whole ranking at once and keeps an uncertainty per player, so newcomers move fast and
veterans slowly.

Why openskill: it implements Weng-Lin (the Plackett-Luce model used here is built for
free-for-all rankings of any size); it is open (MIT) and unencumbered, unlike TrueSkill, whose
method is patented and trademarked; it is fast (compiled with mypyc, microseconds per update);
and it supports ties and teams of one, which is exactly a smazzata.

The matching key is the ordinal, mu - 3 sigma: a conservative skill estimate that rises as a
player wins and as the system becomes sure of them (a newcomer's ordinal is 0).

Matchmaking keeps its ratings in memory, rebuilt at start-up by replaying scoring's results log
from offset 0 (`matchmaking/results.py`); without scoring everyone keeps the default rating.
A ranked classic session (issue 16) is rated the same way, in its own `Ratings`, with the ranks
of its standings (`ranks_from_standings`); scoring keeps the classic ratings in its store for
the classic leaderboard (`scoring/classic_ratings.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from openskill.models import PlackettLuce, PlackettLuceRating


def ranks_from_scores(scores: Sequence[int]) -> list[float]:
    """Competition ranks: 1 for the best score, tied scores share a rank (higher is better)."""
    return [float(1 + sum(1 for other in scores if other > mine)) for mine in scores]


def ranks_from_standings(standings: Sequence[int], totals: Sequence[int],
                         winners: Collection[int]) -> list[float]:
    """Competition ranks per seat of a classic session (C11): `standings` every seat (an
    index) best first, as the engine ordered them. A seat ties with the one before it when
    both won (a shared win) or neither did and their totals are equal; otherwise its rank is
    its place."""
    ranks = [0.0] * len(standings)
    previous = -1
    for place, seat in enumerate(standings):
        tied = previous >= 0 and (seat in winners) == (previous in winners) and (
            seat in winners or totals[seat] == totals[previous])
        ranks[seat] = ranks[previous] if tied else float(place + 1)
        previous = seat
    return ranks


class Ratings:
    def __init__(self, model: PlackettLuce | None = None) -> None:
        self.model = model if model is not None else PlackettLuce()
        self._ratings: dict[str, PlackettLuceRating] = {}

    def rating(self, player: str) -> PlackettLuceRating:
        """The player's rating; the model's default for a newcomer (not stored until rated)."""
        found = self._ratings.get(player)
        return found if found is not None else self.model.rating(name=player)

    def ordinal(self, player: str) -> float:
        return float(self.rating(player).ordinal())

    def record(self, players: Sequence[str], scores: Sequence[int]) -> None:
        """Update the ratings of the players of one competitive result, scores in seat order."""
        if len(players) != len(scores):
            raise ValueError(f"cannot rate players {list(players)} with scores {list(scores)}")
        self.record_ranks(players, ranks_from_scores(scores))

    def record_ranks(self, players: Sequence[str], ranks: Sequence[float]) -> None:
        """Update the ratings of the players of one competitive result, ranks in seat order
        (1 the best; equal ranks: a tie)."""
        if len(players) != len(ranks) or len(players) < 2 or len(set(players)) != len(players):
            raise ValueError(f"cannot rate players {list(players)} with ranks {list(ranks)}")
        teams = [[self.rating(p)] for p in players]
        rated = self.model.rate(teams, ranks=list(ranks))
        for player, team in zip(players, rated, strict=True):
            self._ratings[player] = team[0]

    def set(self, player: str, mu: float, sigma: float) -> None:
        """Restore a stored rating (scoring's classic leaderboard keeps mu and sigma)."""
        self._ratings[player] = self.model.rating(mu=mu, sigma=sigma, name=player)

    def __len__(self) -> int:
        return len(self._ratings)
