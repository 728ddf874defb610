"""Classic Machiavelli results in the results store (issue 16): what a stored classic report
writes, in the same transaction that gives it its offset in the one results log (store.py).

A classic report (scoring.proto, `ClassicResult`) holds the whole session so far. Storing it:

- `classic_results`: the report in the log (its offset from the same append head as every
  smazzata's, its payload as reported), unique on (table_id, report): a report stored already
  is never stored twice (the first one is kept, as for smazzate);
- `classic_hands`: every hand of the session, one row per seat (penalty points in hand, what
  the hand added to the total, whether the seat won it), written once (a later report holding
  the same hand adds nothing);
- `classic_sessions` and `classic_standings`: the session (hands, ended, why) and every
  player's total, place (best first, as the engine ranks them, C11), elimination and win, as
  of the highest report stored: a report that arrives after a later one changes nothing.

Classic results never touch the Machiavelox leaderboard; the end of a ranked (competitive)
session rates its players in the classic one, in the same transaction
(`classic_ratings.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The tables, for both backends: `{blob}` BYTEA or BLOB, `{text}` a TEXT key column (the "C"
# collation on PostgreSQL, as results.table_id). Created if missing, like the rest of the schema.
CLASSIC_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS classic_results (
        log_offset BIGINT PRIMARY KEY,
        table_id {text} NOT NULL,
        report INTEGER NOT NULL,
        stored_at_ms BIGINT NOT NULL,
        payload {blob} NOT NULL,
        UNIQUE (table_id, report))""",
    """CREATE TABLE IF NOT EXISTS classic_hands (
        table_id {text} NOT NULL,
        hand INTEGER NOT NULL,
        seat INTEGER NOT NULL,
        player_id TEXT NOT NULL,
        points INTEGER NOT NULL,
        score INTEGER NOT NULL,
        won BOOLEAN NOT NULL,
        PRIMARY KEY (table_id, hand, seat))""",
    """CREATE TABLE IF NOT EXISTS classic_sessions (
        table_id {text} PRIMARY KEY,
        report INTEGER NOT NULL,
        hands INTEGER NOT NULL,
        ended BOOLEAN NOT NULL,
        reason TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS classic_standings (
        table_id {text} NOT NULL,
        seat INTEGER NOT NULL,
        player_id TEXT NOT NULL,
        total BIGINT NOT NULL,
        place INTEGER NOT NULL,
        eliminated BOOLEAN NOT NULL,
        winner BOOLEAN NOT NULL,
        report INTEGER NOT NULL,
        PRIMARY KEY (table_id, seat))""",
]


def classic_schema(blob: str, text: str) -> list[str]:
    return [statement.format(blob=blob, text=text) for statement in CLASSIC_SCHEMA]


@dataclass(frozen=True)
class HandRow:
    """One seat in one hand."""

    points: int  # penalty points left in hand (C9, C10)
    score: int  # what the hand added to the seat's total (C11)
    won: bool


@dataclass(frozen=True)
class ClassicReport:
    """One classic report as the store needs it; seats are indexes into `player_ids`;
    `payload` is the whole report, encoded."""

    table_id: str
    report: int
    player_ids: tuple[str, ...]
    hands: tuple[tuple[HandRow, ...], ...]  # every ended hand, each per seat
    totals: tuple[int, ...]
    standings: tuple[int, ...]  # every seat, best first
    eliminated: frozenset[int]
    winners: frozenset[int]  # empty until the session ends
    ended: bool
    reason: str  # why the session ended ("" while it goes on)
    payload: bytes
    competitive: bool = False  # a ranked table's: rated once its session ends (issue 16)


@dataclass(frozen=True)
class StandingRow:
    player_id: str
    seat: int
    total: int
    eliminated: bool
    winner: bool


@dataclass(frozen=True)
class ClassicStandings:
    rows: tuple[StandingRow, ...]  # best first
    hands: int
    ended: bool


# --- SQL: `?` placeholders (`%s` for PostgreSQL: store_pg.pg) -------------------------------

SELECT_CLASSIC_KEY = ("SELECT log_offset, payload FROM classic_results "
                      "WHERE table_id = ? AND report = ?")
INSERT_CLASSIC = ("INSERT INTO classic_results (log_offset, table_id, report, stored_at_ms, "
                  "payload) VALUES (?, ?, ?, ?, ?)")
ADD_HAND = (
    "INSERT INTO classic_hands (table_id, hand, seat, player_id, points, score, won) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, hand, seat) DO NOTHING")
SET_SESSION = (
    "INSERT INTO classic_sessions (table_id, report, hands, ended, reason) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (table_id) DO UPDATE SET report = excluded.report, "
    "hands = excluded.hands, ended = excluded.ended, reason = excluded.reason "
    "WHERE classic_sessions.report < excluded.report")
SET_STANDING = (
    "INSERT INTO classic_standings (table_id, seat, player_id, total, place, eliminated, "
    "winner, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (table_id, seat) DO UPDATE "
    "SET player_id = excluded.player_id, total = excluded.total, place = excluded.place, "
    "eliminated = excluded.eliminated, winner = excluded.winner, report = excluded.report "
    "WHERE classic_standings.report < excluded.report")
CLASSIC_STANDINGS = (
    "SELECT s.player_id, s.seat, s.total, s.eliminated, s.winner, c.hands, c.ended "
    "FROM classic_standings s JOIN classic_sessions c ON c.table_id = s.table_id "
    "WHERE s.table_id = ? ORDER BY s.place")
# every record of the log, smazzate and classic reports, in offset order
READ_LOG = ("SELECT log_offset, stored_at_ms, payload FROM results WHERE log_offset >= ? "
            "UNION ALL SELECT log_offset, stored_at_ms, payload FROM classic_results "
            "WHERE log_offset >= ? ORDER BY 1 LIMIT ?")


def classic_statements(report: ClassicReport, offset: int,
                       stored_at_ms: int) -> list[tuple[str, tuple[Any, ...]]]:
    """What storing `report` at `offset` writes (after the key was found free)."""
    t = report.table_id
    out: list[tuple[str, tuple[Any, ...]]] = [
        (INSERT_CLASSIC, (offset, t, report.report, stored_at_ms, report.payload))]
    for number, hand in enumerate(report.hands, 1):
        out += [(ADD_HAND, (t, number, seat, report.player_ids[seat], row.points, row.score,
                            row.won)) for seat, row in enumerate(hand)]
    out.append((SET_SESSION, (t, report.report, len(report.hands), report.ended,
                              report.reason)))
    place = {seat: i for i, seat in enumerate(report.standings)}
    out += [(SET_STANDING, (t, seat, player, report.totals[seat], place[seat],
                            seat in report.eliminated, seat in report.winners, report.report))
            for seat, player in enumerate(report.player_ids)]
    return out


def classic_standings_of(rows: Sequence[Sequence[Any]]) -> ClassicStandings | None:
    if not rows:
        return None
    return ClassicStandings(
        rows=tuple(StandingRow(str(r[0]), int(r[1]), int(r[2]), bool(r[3]), bool(r[4]))
                   for r in rows),
        hands=int(rows[0][5]), ended=bool(rows[0][6]))
