"""Skill ratings for the agorà: one rating per player, its ordinal is the matching key.

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

Ratings live in memory and are rebuilt at start-up by replaying scoring's results log from
offset 0 (see `service.ResultsFollower`); without scoring everyone keeps the default rating.
"""

from __future__ import annotations

from collections.abc import Sequence

from openskill.models import PlackettLuce, PlackettLuceRating


def ranks_from_scores(scores: Sequence[int]) -> list[float]:
    """Competition ranks: 1 for the best score, tied scores share a rank (higher is better)."""
    return [float(1 + sum(1 for other in scores if other > mine)) for mine in scores]


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
        if len(players) != len(scores) or len(players) < 2 or len(set(players)) != len(players):
            raise ValueError(f"cannot rate players {list(players)} with scores {list(scores)}")
        teams = [[self.rating(p)] for p in players]
        rated = self.model.rate(teams, ranks=ranks_from_scores(scores))
        for player, team in zip(players, rated, strict=True):
            self._ratings[player] = team[0]

    def __len__(self) -> int:
        return len(self._ratings)
