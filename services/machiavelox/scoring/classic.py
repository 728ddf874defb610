"""Classic Machiavelli reports on the wire (scoring.proto, `ClassicResult`): checked and
turned into the store's `ClassicReport`; classic standings encoded for GetStandings.

A report is refused INVALID_ARGUMENT `result/invalid` when it does not describe a session:
2..6 distinct players, every hand with a winner and one value per seat, the standings every
seat once, the session's result present exactly when `match_ended`. The top-level
`competitive` is for the Machiavelox leaderboard only (refused here); a ranked classic table
says `classic.competitive`, rated in the classic leaderboard once its session ends
(`classic_ratings.py`).
"""

from __future__ import annotations

from collections.abc import Iterable

from machiavelox._gen.v1 import classic_pb2, scoring_pb2
from machiavelox.platform.errors import invalid_argument, shown

from .store_classic import ClassicReport, ClassicStandings, HandRow

MAX_PLAYERS = 6  # C1
MAX_HANDS = 1000  # a report's hands: more than any session plays, less than a message holds


def is_classic(request: scoring_pb2.ReportResultRequest) -> bool:
    return request.ruleset == classic_pb2.RULESET_CLASSIC or request.HasField("classic")


def decode_classic(request: scoring_pb2.ReportResultRequest) -> ClassicReport:
    """The store's view of a classic report, or INVALID_ARGUMENT `result/invalid`."""
    problem = _problem(request)
    if problem is not None:
        raise invalid_argument("result/invalid", problem)
    c = request.classic
    seat = _index
    hands = tuple(_hand(h) for h in c.hands)
    ended = request.match_ended
    return ClassicReport(
        table_id=request.table_id, report=c.report, player_ids=tuple(request.player_ids),
        hands=hands, totals=tuple(c.totals), standings=tuple(seat(s) for s in c.standings),
        eliminated=frozenset(seat(s) for s in c.eliminated),
        winners=frozenset(seat(s) for s in c.session.winners) if ended else frozenset(),
        ended=ended, reason=c.session.reason if ended else "",
        payload=request.SerializeToString(deterministic=True), competitive=c.competitive)


def _hand(hand: classic_pb2.ClassicHandResult) -> tuple[HandRow, ...]:
    won = {_index(w) for w in hand.winners}
    return tuple(HandRow(points, score, i in won)
                 for i, (points, score) in enumerate(zip(hand.points, hand.scores, strict=True)))


def _index(seat: int) -> int:
    return seat - 1  # SEAT_P1 is 1 (checked by `_seats_ok`)


def _problem(request: scoring_pb2.ReportResultRequest) -> str | None:
    if request.ruleset != classic_pb2.RULESET_CLASSIC or not request.HasField("classic"):
        return "a classic result has ruleset classic and `classic` set"
    if request.smazzata or request.kind or request.HasField("result"):
        return "a classic result has no smazzata, kind nor (Machiavelox) result"
    if request.competitive:
        return "a classic result is never rated in the Machiavelox leaderboard"
    if not request.table_id:
        return "table_id is required"
    players = list(request.player_ids)
    n = len(players)
    if not 2 <= n <= MAX_PLAYERS or not all(players) or len(set(players)) != n:
        return f"2 to 6 distinct player ids are required (C1), not {shown(players, 200)}"
    c = request.classic
    if not 1 <= len(c.hands) <= MAX_HANDS:
        return f"1 to {MAX_HANDS} hands are required, not {len(c.hands)}"
    if c.report not in (len(c.hands), len(c.hands) + 1):
        return f"report {c.report} does not follow {len(c.hands)} hands"
    if c.report == len(c.hands) + 1 and not request.match_ended:
        return "a report after the last hand ends the session"
    for number, hand in enumerate(c.hands, 1):
        if len(hand.points) != n or len(hand.scores) != n:
            return f"hand {number}: one penalty and one score per seat are required"
        if not hand.winners or not _seats_ok(hand.winners, n):
            return f"hand {number}: its winners must be seats of the table"
    if len(c.totals) != n:
        return f"one total per seat is required, not {len(c.totals)}"
    if sorted(c.standings) != list(range(1, n + 1)):
        return "the standings list every seat once"
    if not _seats_ok(c.eliminated, n):
        return "the eliminated must be seats of the table"
    if request.match_ended != c.HasField("session"):
        return "the session's result is set exactly when the session ended"
    if request.match_ended and (not c.session.winners or not _seats_ok(c.session.winners, n)):
        return "an ended session has winners among its seats"
    return None


def _seats_ok(seats: Iterable[int], players: int) -> bool:
    values = list(seats)
    return len(set(values)) == len(values) and all(1 <= s <= players for s in values)


def standings_to_pb(standings: ClassicStandings) -> scoring_pb2.GetStandingsResponse:
    """A classic session's standings: `rows` best first, `totals`/`player_ids` in seat order."""
    by_seat = sorted(standings.rows, key=lambda r: r.seat)
    return scoring_pb2.GetStandingsResponse(
        ruleset=classic_pb2.RULESET_CLASSIC, hands=standings.hands, ended=standings.ended,
        totals=[r.total for r in by_seat], player_ids=[r.player_id for r in by_seat],
        rows=[scoring_pb2.StandingsRow(
            player_id=r.player_id, seat=r.seat + 1,  # type: ignore[arg-type]
            total=r.total, eliminated=r.eliminated, winner=r.winner)
            for r in standings.rows])
