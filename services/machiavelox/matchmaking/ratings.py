"""The agorà's skill ratings: `machiavelox.platform.ratings` (shared with scoring, which rates
the ranked classic leaderboard with the same code)."""

from __future__ import annotations

from machiavelox.platform.ratings import Ratings, ranks_from_scores, ranks_from_standings

__all__ = ["Ratings", "ranks_from_scores", "ranks_from_standings"]
