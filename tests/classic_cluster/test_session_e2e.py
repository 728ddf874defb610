"""A classic Machiavelli session to its end through everything (issue 16, part 3): scoring (on
PostgreSQL, as deployed), a shard, matchmaking and the gateway as real processes on loopback
(mutual TLS between them), the rules clock x10.

- Four `ClassicInviteBot`s join a friendly classic table with 2 jokers and the 36-point opening
  (C2, C8) and a `hands 2` session (C11) by invite code, and play both hands to the session's
  end through the gateway. A SubscribeResults subscriber, reading scoring's log from before
  the table exists, receives every hand's report in order (report 1: hand 1, the session
  going on; report 2: both hands and the session's end), each with ruleset classic; the
  session's result is the one every bot saw. GetStandings answers the rows lowest total first
  (C11), in the engine's order (the standings of the bots' own views), the winners marked.
  Then the four are free again in matchmaking: they join a new friendly table by code (no
  `ticket/seated`). Matchmaking's seat check (which frees the seats of tables their shard
  lost) is slowed to an hour here, so it is scoring's results log, read by
  `matchmaking/results.py`, that frees them: without MACHIAVELOX_SCORING_ADDRESS on
  matchmaking the last step fails.
- Six bots play a six-player three-deck table (C1: 15 cards each) to the end of its single
  hand; its result reaches the subscriber too.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from machiavelox._gen.v1 import (
    classic_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
)
from machiavelox.bots.classic_player import ClassicInviteBot, ClassicOutcome
from machiavelox.local.processes import Proc, aio_channel
from tests.classic_cluster.cluster import SCALE, Cluster, classic_cluster, followed
from tests.services.matchmaking.test_lost_tables import until_assigned
from tests.support.agora import next_update, reason, tokens
from tests.support.client import bearer

pytestmark = pytest.mark.timeout(90)

MAX_GAME_S = 75.0  # the most one bot plays (then the test fails)
WAIT_S = 30.0  # the most the results or the freed seats may lag the game's end
POLL_S = 0.1
CLASSIC = classic_pb2.RULESET_CLASSIC
SESSION = classic_pb2.ClassicVariants(
    players=4, jokers=2, opening=36, session=classic_pb2.CLASSIC_SESSION_KIND_HANDS,
    session_n=2)
SIX = classic_pb2.ClassicVariants(players=6, decks=3)


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    with classic_cluster(tmp_path_factory.mktemp("classic-session"), "test_classic_session", {
            "MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S": "3600",  # results.py frees, not it
            "MACHIAVELOX_MATCHMAKING_JOIN_FRIENDLY_RATE": "50",
            "MACHIAVELOX_MATCHMAKING_JOIN_FRIENDLY_BURST": "200"}) as procs:
        yield procs


@pytest.fixture
async def cluster(processes: dict[str, Proc]) -> AsyncIterator[Cluster]:
    """The processes, and a subscriber of scoring's log for the test."""
    async with followed(processes) as out:
        yield out


async def play(gateway: Proc, names: list[str], variants: classic_pb2.ClassicVariants
               ) -> list[ClassicOutcome]:
    """`names[0]` creates a friendly classic table; a bot per name joins it by code and plays
    it to the session's end through the gateway; the outcomes, in seat order. The bots join
    at once, so the seats follow the joins' arrival at matchmaking, not `names`' order."""
    toks = await tokens(gateway, names[0])
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        created = await matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(ruleset=CLASSIC, classic=variants),
            metadata=bearer(toks[names[0]]), timeout=10)
        bots = [ClassicInviteBot(name, ch, created.invite_code, time_scale=SCALE,
                                 max_game_s=MAX_GAME_S) for name in names]
        outcomes = await asyncio.gather(*(bot.run_classic() for bot in bots))
    assert len({o.table_id for o in outcomes}) == 1
    outcomes.sort(key=lambda o: -1 if o.seat is None else int(o.seat))
    assert [o.seat for o in outcomes] == list(range(len(names)))  # every seat taken once
    for o in outcomes:
        assert o.result is not None, o  # the session ended
        assert o.predictable == [], (o.player, o.predictable)
    return outcomes


async def join_when_free(stub: matchmaking_pb2_grpc.MatchmakingServiceStub, token: str,
                         code: str) -> grpc.aio.UnaryStreamCall[
                             matchmaking_pb2.JoinFriendlyTableRequest,
                             matchmaking_pb2.JoinFriendlyTableResponse]:
    """JoinFriendlyTable until it is not refused `ticket/seated` (bounded: WAIT_S); the
    stream, past its first (waiting) update."""
    for attempt in itertools.count():
        call = stub.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
            invite_code=code), metadata=bearer(token))
        try:
            first = await next_update(call)
        except grpc.aio.AioRpcError as err:
            assert reason(err) == "ticket/seated", err
            assert attempt * POLL_S < WAIT_S, "the session ended, its players are seated"
            await asyncio.sleep(POLL_S)
            continue
        assert first.WhichOneof("kind") in ("waiting", "assignment"), first
        return call
    raise AssertionError("unreachable")


async def test_four_bots_play_a_two_hand_session_to_its_end_and_are_free_again(
        cluster: Cluster) -> None:
    names = ["sess1", "sess2", "sess3", "sess4"]
    outcomes = await play(cluster.gateway, names, SESSION)
    seated = [o.player for o in outcomes]  # the names in seat order
    assert sorted(seated) == sorted(names)
    table_id = outcomes[0].table_id
    ends = {(tuple(o.result.winners), tuple(o.result.standings), tuple(o.result.totals))
            for o in outcomes if o.result is not None}
    assert len(ends) == 1, ends  # every bot saw the same end
    [(winners, standings, totals)] = ends
    assert outcomes[0].result is not None and outcomes[0].result.reason == "hands"

    # every hand's report reached the subscriber, in order, with ruleset classic
    records = await cluster.results.until_ended(names)
    assert [r.table_id for r in records] == [table_id] * 2
    assert all(r.ruleset == CLASSIC and not r.competitive for r in records)
    assert [r.classic.report for r in records] == [1, 2]
    assert [len(r.classic.hands) for r in records] == [1, 2]
    assert [r.match_ended for r in records] == [False, True]
    assert not records[0].classic.HasField("session")
    final = records[1].classic
    assert final.session.reason == "hands"
    assert (tuple(final.session.winners), tuple(final.standings), tuple(final.totals)) == \
        (winners, standings, totals)  # what the table told every player
    assert list(final.totals) == [sum(h.scores[s] for h in final.hands) for s in range(4)]

    # the standings: lowest total first (C11), the engine's order, the winners marked
    async with aio_channel(cluster.procs["scoring"], "results-reader") as ch:
        got = await scoring_pb2_grpc.ScoringServiceStub(ch).GetStandings(
            scoring_pb2.GetStandingsRequest(table_id=table_id), timeout=5)
    assert got.ruleset == CLASSIC and got.ended and got.hands == 2
    assert list(got.player_ids) == seated and list(got.totals) == list(totals)
    assert tuple(row.seat for row in got.rows) == standings
    rows = [row.total for row in got.rows]
    assert rows == sorted(rows)
    assert rows == [totals[seat - 1] for seat in standings]  # (Seat p1 = 1)
    assert [row.player_id for row in got.rows] == [seated[seat - 1] for seat in standings]
    assert {row.seat for row in got.rows if row.winner} == set(winners)

    # the session is over for matchmaking: its four players are free (results.py)
    toks = await tokens(cluster.gateway, *names)
    async with grpc.aio.insecure_channel(cluster.gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        created = await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
            ruleset=CLASSIC, classic=classic_pb2.ClassicVariants(players=4)),
            metadata=bearer(toks[names[0]]), timeout=10)
        calls = []
        try:
            for name in names:
                calls.append(await join_when_free(stub, toks[name], created.invite_code))
            assigned = await until_assigned(calls[-1])
        finally:
            for call in calls:
                call.cancel()
    assert list(assigned.player_ids) == names and assigned.table_id != table_id


async def test_six_bots_play_a_three_deck_table_to_its_end(cluster: Cluster) -> None:
    names = [f"six{i}" for i in range(1, 7)]
    outcomes = await play(cluster.gateway, names, SIX)
    for o in outcomes:
        assert o.result is not None and o.result.reason == "single"
        assert o.last_hand is not None and o.last_hand.ending in ("out", "stock")
    [record] = await cluster.results.until_ended(names)
    assert record.ruleset == CLASSIC and record.table_id == outcomes[0].table_id
    assert record.classic.variants.decks == 3 and len(record.player_ids) == 6
    assert len(record.classic.hands) == 1 and record.match_ended
    assert len(record.classic.hands[0].points) == 6 and len(record.classic.totals) == 6
    seen = outcomes[0].result
    assert seen is not None and list(record.classic.session.winners) == list(seen.winners)
