"""The ranked classic queue over real processes (issue 16, part 2; docs/classic.md, "The ranked
queue"): scoring (on PostgreSQL, as deployed), a shard, matchmaking (following scoring's log,
its ranked session `single`) and the gateway as real processes on loopback (mutual TLS between
them), the rules clock x10.

- Four classic bots log in through the gateway and each `Enqueue{ruleset: RULESET_CLASSIC}`
  through the gateway's agorà relay (as a Machiavelox bot queues, `bots/player.py`'s `_queue`,
  with the ruleset). All four get the same `Assignment` with their four ids (matched in fours,
  not the Machiavelox threes) and play that table's single hand (C9, C11) to its end through
  the gateway. Then scoring's ranked classic leaderboard (`GetLeaderboard{ruleset: classic}`)
  lists the four with one ranked session each, every winner rated above every other player;
  the Machiavelox leaderboard (no ruleset) lists none of them; and the session's report reached
  a `SubscribeResults` subscriber with ruleset classic and `classic.competitive`, the ranked
  variants and the result every bot saw. Without the ruleset on Enqueue the four queue for
  Machiavelox: three are seated at a Machiavelox table of three and the fourth waits, so the
  meeting below fails.
- `Enqueue` with a ruleset that does not exist is refused INVALID_ARGUMENT `table/bad-ruleset`,
  by matchmaking's servicer and through the gateway's relay (which passes the value on).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

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
from machiavelox.matchmaking.ranked import ranked_variants
from tests.classic_cluster.cluster import SCALE, Subscriber, classic_cluster
from tests.services.matchmaking.test_lost_tables import until_assigned
from tests.support.agora import next_update, reason, tokens
from tests.support.client import bearer

pytestmark = pytest.mark.timeout(90)

SESSION = "single"  # the ranked tables' session here (threshold 100 by default)
QUEUE_S = 20.0  # the most a bot waits for its assignment, and for the others'
MAX_GAME_S = 60.0  # the most one bot plays (then the test fails)
WAIT_S = 30.0  # the most the leaderboard may lag the session's end
POLL_S = 0.1
CLASSIC = classic_pb2.RULESET_CLASSIC
NO_SUCH_RULESET = classic_pb2.Ruleset.ValueType(99)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    with classic_cluster(tmp_path_factory.mktemp("classic-ranked"), "test_classic_ranked",
                         {"MACHIAVELOX_MATCHMAKING_RANKED_CLASSIC_SESSION": SESSION}) as procs:
        yield procs


class Meeting:
    """The bots' assignments: each bot waits (bounded) until all `size` have theirs, which
    must be one table of all of them."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.assignments: dict[str, matchmaking_pb2.Assignment] = {}
        self._all = asyncio.Event()

    async def meet(self, player: str, assignment: matchmaking_pb2.Assignment) -> None:
        self.assignments[player] = assignment
        if len(self.assignments) == self.size:
            self._all.set()
        try:
            await asyncio.wait_for(self._all.wait(), QUEUE_S)
        except TimeoutError:
            raise AssertionError(f"{player}: only {sorted(self.assignments)} were seated, "
                                 f"{self.seen()}") from None
        tables = {(a.table_id, tuple(a.player_ids)) for a in self.assignments.values()}
        assert len(tables) == 1, f"not one table: {self.seen()}"
        [(_, players)] = tables
        assert sorted(players) == sorted(self.assignments), f"not all four: {self.seen()}"

    def seen(self) -> dict[str, tuple[str, list[str]]]:
        return {p: (a.table_id, list(a.player_ids)) for p, a in self.assignments.items()}


class QueuedClassicBot(ClassicInviteBot):
    """A classic bot that takes its seat from the ranked classic queue instead of an invite
    code: `Enqueue{ruleset}` through the gateway's relay, to its `Assignment` (bounded)."""

    def __init__(self, name: str, channel: grpc.aio.Channel, meeting: Meeting,
                 ruleset: classic_pb2.Ruleset.ValueType = CLASSIC) -> None:
        super().__init__(name, channel, "", time_scale=SCALE, max_game_s=MAX_GAME_S)
        self.meeting = meeting
        self.ruleset = ruleset

    async def _queue(self, metadata: Any) -> tuple[str, list[str]]:
        stream = self.matchmaking.Enqueue(
            matchmaking_pb2.EnqueueRequest(ruleset=self.ruleset), metadata=metadata)
        try:
            assignment = await asyncio.wait_for(until_assigned(stream), QUEUE_S)
        except TimeoutError:
            raise AssertionError(f"{self.name}: no assignment in {QUEUE_S} s; the others': "
                                 f"{self.meeting.seen()}") from None
        finally:
            stream.cancel()
        await self.meeting.meet(self.name, assignment)
        return assignment.table_id, list(assignment.player_ids)


async def leaderboard(scoring: Proc, ruleset: classic_pb2.Ruleset.ValueType
                      ) -> dict[str, scoring_pb2.LeaderboardRow]:
    async with aio_channel(scoring, "results-reader") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100, ruleset=ruleset), timeout=5)
    return {row.player_id: row for row in board.rows}


async def until_rated(scoring: Proc, names: list[str]) -> dict[str, scoring_pb2.LeaderboardRow]:
    """The ranked classic leaderboard's rows of `names`, once it has all of them (bounded)."""
    for _ in range(int(WAIT_S / POLL_S)):
        rows = await leaderboard(scoring, CLASSIC)
        if all(name in rows for name in names):
            return {name: rows[name] for name in names}
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"{names} not all on the classic leaderboard: {sorted(rows)}")


async def test_four_bots_queue_ranked_classic_play_their_table_and_are_rated(
        cluster: dict[str, Proc]) -> None:
    names = ["rank1", "rank2", "rank3", "rank4"]
    results = Subscriber()
    following = asyncio.create_task(results.follow(cluster["scoring"]))
    try:
        meeting = Meeting(len(names))
        async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
            bots = [QueuedClassicBot(name, ch, meeting) for name in names]
            outcomes: list[ClassicOutcome] = await asyncio.gather(
                *(bot.run_classic() for bot in bots))
        [assignment] = {a.table_id: a for a in meeting.assignments.values()}.values()
        players = list(assignment.player_ids)  # seat order p1..p4 (shuffled by matchmaking)
        assert len(players) == 4 and sorted(players) == names
        assert {o.table_id for o in outcomes} == {assignment.table_id}
        assert sorted(o.seat for o in outcomes if o.seat is not None) == list(range(4))
        for o in outcomes:
            assert o.result is not None and o.result.reason == "single", o  # C11: one hand
            assert o.predictable == [], (o.player, o.predictable)
            assert o.last_hand is not None and o.last_hand.ending in ("out", "stock")
        ends = {(tuple(o.result.winners), tuple(o.result.standings), tuple(o.result.totals))
                for o in outcomes if o.result is not None}
        assert len(ends) == 1, ends  # every bot saw the same end
        [(winners, standings, totals)] = ends
        won = {players[seat - 1] for seat in winners}  # (Seat p1 = 1)
        assert won and won != set(names)

        # the ranked classic leaderboard: the four, once each, every winner above the others
        rated = await until_rated(cluster["scoring"], names)
        assert all(row.played == 1 and row.points == 0 for row in rated.values()), rated
        lowest_winner = min(rated[p].rating for p in won)
        assert all(rated[p].rating < lowest_winner for p in set(names) - won), rated
        # ... and never the Machiavelox one
        assert not set(names) & set(await leaderboard(cluster["scoring"],
                                                      classic_pb2.RULESET_UNSPECIFIED))

        # the session's result reached the subscriber, as a competitive classic one
        [record] = await results.until_ended(players)
        assert record.table_id == assignment.table_id and record.ruleset == CLASSIC
        assert record.classic.competitive and not record.competitive  # (Machiavelox's flag)
        assert record.match_ended and record.classic.report == 1
        assert record.classic.variants == ranked_variants(SESSION)
        assert (tuple(record.classic.session.winners), tuple(record.classic.standings),
                tuple(record.classic.totals)) == (winners, standings, totals)
    finally:
        following.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await following


async def test_enqueue_with_an_unknown_ruleset_is_refused(cluster: dict[str, Proc]) -> None:
    toks = await tokens(cluster["gateway"], "norule")
    request = matchmaking_pb2.EnqueueRequest(ruleset=NO_SUCH_RULESET)
    direct = aio_channel(cluster["matchmaking"], "gateway")  # the servicer itself
    relayed = grpc.aio.insecure_channel(cluster["gateway"].address)  # through the gateway
    for channel in (direct, relayed):
        async with channel:
            call = matchmaking_pb2_grpc.MatchmakingServiceStub(channel).Enqueue(
                request, metadata=bearer(toks["norule"]))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await next_update(call)
            assert (refused.value.code(), reason(refused.value)) == (
                grpc.StatusCode.INVALID_ARGUMENT, "table/bad-ruleset")
