"""The ranked classic leaderboard (issue 16): when a competitive classic session ends, its
players are rated with openskill (`machiavelox.platform.ratings`, the code that rates the
Machiavelox agorà), in the same transaction that stores its last report.

- Ranks come from the session's standings (C11, best first as the engine ordered them; a
  shared win, or equal totals among the others, is a tie: `ranks_from_standings`).
- `classic_ratings` holds each player's mu and sigma, the ordinal mu - 3 sigma (the order of
  the leaderboard) and the ranked sessions played. It is apart from the Machiavelox
  `leaderboard` table: neither ever touches the other.
- Idempotent: a report is rated only when it is stored for the first time (a re-report finds
  its key and writes nothing), and only if the table's session had not ended already.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from machiavelox.platform.ratings import Ratings, ranks_from_standings

from .store_classic import ClassicReport

# `{text}`: the key column's type (the "C" collation on PostgreSQL, as every player id).
CLASSIC_RATINGS_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS classic_ratings (
        player_id {text} PRIMARY KEY,
        mu DOUBLE PRECISION NOT NULL,
        sigma DOUBLE PRECISION NOT NULL,
        ordinal DOUBLE PRECISION NOT NULL,
        played INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS classic_ratings_rank ON classic_ratings "
    "(ordinal DESC, played DESC, player_id)",
]

ENDED_BEFORE = "SELECT ended FROM classic_sessions WHERE table_id = ?"
SET_RATING = (
    "INSERT INTO classic_ratings (player_id, mu, sigma, ordinal, played) "
    "VALUES (?, ?, ?, ?, 1) ON CONFLICT (player_id) DO UPDATE SET mu = excluded.mu, "
    "sigma = excluded.sigma, ordinal = excluded.ordinal, played = classic_ratings.played + 1")
CLASSIC_TOP = ("SELECT player_id, ordinal, played FROM classic_ratings "
               "ORDER BY ordinal DESC, played DESC, player_id ASC LIMIT ?")


def ratings_schema(text: str) -> list[str]:
    return [statement.format(text=text) for statement in CLASSIC_RATINGS_SCHEMA]


def to_rate(report: object) -> bool:
    """A ranked classic session's end (the only classic report rated)."""
    return isinstance(report, ClassicReport) and report.competitive and report.ended


def ratings_query(report: ClassicReport) -> tuple[str, tuple[Any, ...]]:
    """The stored ratings of the report's players (rows: player, mu, sigma)."""
    marks = ", ".join("?" for _ in report.player_ids)
    return (f"SELECT player_id, mu, sigma FROM classic_ratings WHERE player_id IN ({marks})",
            tuple(report.player_ids))


def rating_writes(report: ClassicReport, ended_before: Sequence[Any] | None,
                  stored: Sequence[Sequence[Any]]) -> list[tuple[str, tuple[Any, ...]]]:
    """What rating the session writes: `ended_before` is ENDED_BEFORE's row (a session that had
    ended already is not rated again), `stored` the rows of `ratings_query`."""
    if ended_before is not None and bool(ended_before[0]):
        return []
    ratings = Ratings()
    for player, mu, sigma in stored:
        ratings.set(str(player), float(mu), float(sigma))
    winners = report.winners
    ratings.record_ranks(report.player_ids,
                         ranks_from_standings(report.standings, report.totals, winners))
    out: list[tuple[str, tuple[Any, ...]]] = []
    for player in report.player_ids:
        rating = ratings.rating(player)
        out.append((SET_RATING, (player, float(rating.mu), float(rating.sigma),
                                 ratings.ordinal(player))))
    return out
