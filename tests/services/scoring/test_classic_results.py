"""Classic Machiavelli results in scoring (issue 16, part 2): real `machiavelox scoring`
processes over real gRPC, on SQLite and on PostgreSQL (conftest: a fresh schema per test).

Every classic hand and session is stored (PostgreSQL: read back from its tables), a re-report
stores nothing twice and an older report after a newer one changes nothing, the standings come
lowest total first (C11), classic results never reach the Machiavelox leaderboard, and a
subscriber gets them with their ruleset. Without the classic half of scoring each test fails:
the report is refused (`result/invalid`: three player ids and a smazzata are required) and
GetStandings knows no such table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc
import psycopg
import pytest
from psycopg import sql

from machiavelox._gen.v1 import classic_pb2, common_pb2, scoring_pb2

from .conftest import PG_URL, Backend, ScoringProcess
from .test_scoring_service import Subscriber, leaderboard, refused, report, store

if TYPE_CHECKING:
    from machiavelox._gen.v1.scoring_pb2_grpc import ScoringServiceAsyncStub as Stub

pytestmark = pytest.mark.timeout(60)
POSTGRES_ONLY = pytest.mark.parametrize("backend", ["postgres"], indirect=True)
CLASSIC = classic_pb2.RULESET_CLASSIC
PLAYERS = ("ann", "bob", "cy")
P1, P2, P3 = common_pb2.SEAT_P1, common_pb2.SEAT_P2, common_pb2.SEAT_P3
THRESHOLD = classic_pb2.ClassicVariants(
    players=3, session=classic_pb2.CLASSIC_SESSION_KIND_THRESHOLD, session_n=100)


def hand(winner: int, points: tuple[int, ...]) -> classic_pb2.ClassicHandResult:
    """A hand won by going out (C9): the winner 0, the others their penalties."""
    return classic_pb2.ClassicHandResult(winners=[winner], ending="out",  # type: ignore[list-item]
                                         points=points, scores=points)


# A threshold-100 session of three hands (C11): p1 goes past 100 in the third, the lowest
# total (p3, 25) wins; standings lowest total first.
HANDS = [hand(P1, (0, 30, 5)), hand(P2, (40, 0, 20)), hand(P3, (70, 12, 0))]
TOTALS = [(0, 30, 5), (40, 30, 25), (110, 42, 25)]
STANDINGS = [(P1, P3, P2), (P3, P2, P1), (P3, P2, P1)]


def classic(table_id: str, number: int) -> scoring_pb2.ReportResultRequest:
    """Report `number` of the session above: its hands so far, ended at the third."""
    ended = number == 3
    result = scoring_pb2.ClassicResult(
        report=number, variants=THRESHOLD, hands=HANDS[:number], totals=TOTALS[number - 1],
        standings=STANDINGS[number - 1])
    if ended:
        result.session.CopyFrom(classic_pb2.ClassicSessionResult(
            winners=[P3], totals=TOTALS[2], standings=STANDINGS[2],
            reason="threshold"))
    return scoring_pb2.ReportResultRequest(table_id=table_id, player_ids=PLAYERS, ruleset=CLASSIC,
                                           match_ended=ended, classic=result)


async def standings(stub: Stub, table_id: str) -> scoring_pb2.GetStandingsResponse:
    reply: scoring_pb2.GetStandingsResponse = await stub.GetStandings(
        scoring_pb2.GetStandingsRequest(table_id=table_id), timeout=5)
    return reply


def rows(reply: scoring_pb2.GetStandingsResponse) -> list[tuple[str, int, bool]]:
    return [(r.player_id, r.total, r.winner) for r in reply.rows]


async def test_hands_and_session_are_stored_lowest_total_first(scoring: ScoringProcess) -> None:
    await store(scoring.stub, classic("c1", 1), classic("c1", 2))
    going = await standings(scoring.stub, "c1")
    assert going.ruleset == CLASSIC and going.hands == 2 and not going.ended
    assert rows(going) == [("cy", 25, False), ("bob", 30, False), ("ann", 40, False)]
    assert list(going.player_ids) == list(PLAYERS) and list(going.totals) == [40, 30, 25]
    await store(scoring.stub, classic("c1", 3))
    over = await standings(scoring.stub, "c1")
    assert over.hands == 3 and over.ended
    assert rows(over) == [("cy", 25, True), ("bob", 42, False), ("ann", 110, False)]  # C11
    assert await leaderboard(scoring.stub) == [], "classic results are never rated"


async def test_a_re_report_stores_nothing_twice_and_an_older_one_changes_nothing(
        scoring: ScoringProcess) -> None:
    first, second = classic("c1", 1), classic("c1", 2)
    assert await store(scoring.stub, first, second, first, second) == [1, 2, 1, 2]
    await store(scoring.stub, report("t1"))  # (a Machiavelox smazzata: the log is one)
    after = await standings(scoring.stub, "c1")
    assert after.hands == 2 and rows(after)[0] == ("cy", 25, False)
    sub = Subscriber(scoring.stub, 0)
    got = await sub.take(3)
    assert [r.offset for r in got] == [1, 2, 3]
    assert [r.result.table_id for r in got] == ["c1", "c1", "t1"]
    await sub.assert_quiet()
    await sub.close()


async def test_a_subscriber_gets_classic_results_with_their_ruleset(
        scoring: ScoringProcess) -> None:
    sub = Subscriber(scoring.stub, 0)
    await store(scoring.stub, report("t1"), classic("c1", 1))
    plain, ours = await sub.take(2)
    assert plain.result == report("t1")  # a Machiavelox result as it was reported, unchanged
    assert plain.result.ruleset == classic_pb2.RULESET_UNSPECIFIED
    assert not plain.result.HasField("classic")
    assert ours.result.ruleset == CLASSIC
    assert ours.result == classic("c1", 1)
    assert list(ours.result.classic.hands[0].points) == [0, 30, 5]
    await sub.close()


async def test_invalid_classic_reports_are_refused(scoring: ScoringProcess) -> None:
    bad = [classic("c1", 1), classic("c1", 1), classic("c1", 1), classic("c1", 3)]
    bad[0].classic.standings[:] = [P1, P1, P2]
    bad[1].competitive = True
    bad[2].ClearField("ruleset")
    bad[3].match_ended = False
    for request in bad:
        call = scoring.stub.ReportResult(request, timeout=5)
        assert await refused(call) == (grpc.StatusCode.INVALID_ARGUMENT, "result/invalid")
    call = scoring.stub.GetStandings(scoring_pb2.GetStandingsRequest(table_id="c1"), timeout=5)
    assert await refused(call) == (grpc.StatusCode.NOT_FOUND, "standings/unknown-table")
    assert await store(scoring.stub, classic("c1", 1)) == [1]  # nothing refused was stored


@POSTGRES_ONLY
async def test_every_hand_is_in_postgresql(backend: Backend, scoring: ScoringProcess) -> None:
    await store(scoring.stub, classic("c1", 3), classic("c1", 2))  # the older one: nothing
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(backend.schema)))
        hands = conn.execute("SELECT hand, player_id, points, won FROM classic_hands "
                             "ORDER BY hand, seat").fetchall()
        session = conn.execute("SELECT report, hands, ended, reason FROM classic_sessions"
                               ).fetchall()
        log = conn.execute("SELECT table_id, report FROM classic_results ORDER BY log_offset"
                           ).fetchall()
    assert hands == [(1, "ann", 0, True), (1, "bob", 30, False), (1, "cy", 5, False),
                     (2, "ann", 40, False), (2, "bob", 0, True), (2, "cy", 20, False),
                     (3, "ann", 70, False), (3, "bob", 12, False), (3, "cy", 0, True)]
    assert session == [(3, 3, True, "threshold")]
    assert log == [("c1", 3), ("c1", 2)]
