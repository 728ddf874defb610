"""The ranked classic leaderboard in scoring (issue 16, part 2): real `machiavelox scoring`
processes over real gRPC, on SQLite and on PostgreSQL (conftest: a fresh schema per test).

A competitive classic session's end rates its four players with openskill (the
`platform.ratings` code that rates the Machiavelox agorà), ranks from its standings (C11); a
re-report changes nothing; the Machiavelox leaderboard is untouched; GetLeaderboard(ruleset
classic) answers the classic rows, best rating first. Without the classic leaderboard
GetLeaderboard(classic) answers the Machiavelox rows (here none) and every test fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from machiavelox._gen.v1 import classic_pb2, common_pb2, scoring_pb2
from machiavelox.platform.ratings import Ratings, ranks_from_standings

from .conftest import ScoringProcess
from .test_scoring_service import leaderboard, report, store

if TYPE_CHECKING:
    from machiavelox._gen.v1.scoring_pb2_grpc import ScoringServiceAsyncStub as Stub

pytestmark = pytest.mark.timeout(60)
CLASSIC = classic_pb2.RULESET_CLASSIC
PLAYERS = ("ann", "bob", "cy", "dee")
P1, P2, P3, P4 = (common_pb2.SEAT_P1, common_pb2.SEAT_P2, common_pb2.SEAT_P3,
                  common_pb2.SEAT_P4)
RANKED = classic_pb2.ClassicVariants(players=4, jokers=2, opening=36,
                                     session=classic_pb2.CLASSIC_SESSION_KIND_SINGLE)
# One hand (C9): p3 goes out; p2 and p4 tie on 12 penalty points, p1 is last with 40.
POINTS = (40, 12, 0, 12)
STANDINGS = (P3, P2, P4, P1)


def ranked(table_id: str, competitive: bool = True) -> scoring_pb2.ReportResultRequest:
    hand = classic_pb2.ClassicHandResult(winners=[P3], ending="out", points=POINTS,
                                         scores=POINTS)
    return scoring_pb2.ReportResultRequest(
        table_id=table_id, player_ids=PLAYERS, ruleset=CLASSIC, match_ended=True,
        classic=scoring_pb2.ClassicResult(
            report=1, variants=RANKED, hands=[hand], totals=POINTS, standings=STANDINGS,
            competitive=competitive,
            session=classic_pb2.ClassicSessionResult(winners=[P3], totals=POINTS,
                                                     standings=STANDINGS, reason="single")))


async def classic_board(stub: Stub) -> list[tuple[str, float, int]]:
    reply = await stub.GetLeaderboard(scoring_pb2.GetLeaderboardRequest(ruleset=CLASSIC),
                                      timeout=5)
    return [(r.player_id, r.rating, r.played) for r in reply.rows]


def expected(sessions: int) -> list[tuple[str, float, int]]:
    """The same sessions rated by the shared code: the leaderboard's rows, best first."""
    ratings = Ratings()
    for _ in range(sessions):
        ratings.record_ranks(PLAYERS, ranks_from_standings(
            [s - 1 for s in STANDINGS], POINTS, {2}))
    rows = [(p, ratings.ordinal(p), sessions) for p in PLAYERS]
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def test_ties_share_a_rank() -> None:  # C11: p2 and p4 tie on equal totals
    assert ranks_from_standings([2, 1, 3, 0], POINTS, {2}) == [4.0, 2.0, 1.0, 2.0]


async def test_a_ranked_session_rates_its_four_players_once(scoring: ScoringProcess) -> None:
    machiavelox = report("t-m", 1, players=("xa", "xb", "xc"), competitive=True)
    await store(scoring.stub, machiavelox)
    before = await leaderboard(scoring.stub)
    await store(scoring.stub, ranked("t-ranked"))
    board = await classic_board(scoring.stub)
    assert [(p, n) for p, _, n in board] == [(p, n) for p, _, n in expected(1)]
    assert [r for _, r, _ in board] == pytest.approx([r for _, r, _ in expected(1)])
    assert board[0][0] == "cy" and board[-1][0] == "ann"
    assert {p for p, _, _ in board}.isdisjoint({p for p, _, _ in before})
    await store(scoring.stub, ranked("t-ranked"))  # a re-report changes nothing
    assert await classic_board(scoring.stub) == board
    assert await leaderboard(scoring.stub) == before  # the Machiavelox one untouched
    await store(scoring.stub, ranked("t-ranked-2"))  # a second session rates them again
    again = await classic_board(scoring.stub)
    assert [(p, n) for p, _, n in again] == [(p, n) for p, _, n in expected(2)]
    assert [r for _, r, _ in again] == pytest.approx([r for _, r, _ in expected(2)])


async def test_a_friendly_classic_session_is_rated_nowhere(scoring: ScoringProcess) -> None:
    await store(scoring.stub, ranked("t-friendly", competitive=False))
    assert await classic_board(scoring.stub) == []
    assert await leaderboard(scoring.stub) == []
