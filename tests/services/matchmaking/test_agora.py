"""The agorà's use cases in process: a fake placer, a fake clock, and a fake scoring server for
the results follower."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.matchmaking.placement import NoShardError, Placed, TableRequest
from machiavelox.matchmaking.ratings import Ratings
from machiavelox.matchmaking.service import Agora, Assigned, ResultsFollower, Update, Waiting
from machiavelox.platform.errors import ServiceError
from machiavelox.rules import MatchKind


class FakePlacer:
    def __init__(self) -> None:
        self.requests: list[TableRequest] = []
        self.refuse = False

    async def place_many(self, requests: Sequence[TableRequest]) -> list[Placed | NoShardError]:
        out: list[Placed | NoShardError] = []
        for request in requests:
            if self.refuse:
                out.append(NoShardError("all shards full"))
                continue
            self.requests.append(request)
            out.append(Placed(f"shard-0.t{len(self.requests)}", "shard-0"))
        return out


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


@pytest.fixture
def placer() -> FakePlacer:
    return FakePlacer()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def agora(placer: FakePlacer, clock: Clock) -> Agora:
    return Agora(Ratings(), placer, clock, 5.0, 1.0, update_s=0.05,
                 shuffle=lambda seats: None)


async def step(stream: AsyncGenerator[Update, None]) -> Update:
    return await asyncio.wait_for(anext(stream), 2)


async def until_assigned(stream: AsyncGenerator[Update, None]) -> Assigned:
    while not isinstance(update := await step(stream), Assigned):
        assert isinstance(update, Waiting)
    return update


async def queue_three(agora: Agora, *names: str) -> list[AsyncGenerator[Update, None]]:
    streams = [agora.enqueue(name) for name in names]
    for s in streams:
        assert isinstance(await step(s), Waiting)
    return streams


def result(table_id: str, players: list[str], scores: list[int], competitive: bool = True,
           ended: bool = True) -> scoring_pb2.ReportResultRequest:
    return scoring_pb2.ReportResultRequest(
        table_id=table_id, smazzata=1, competitive=competitive, player_ids=players,
        kind=table_pb2.MATCH_KIND_SINGLE if competitive else table_pb2.MATCH_KIND_LONG,
        result=common_pb2.SmazzataResult(scores=scores), match_ended=ended)


async def test_a_competitive_group_gets_a_single_competitive_table(
        agora: Agora, placer: FakePlacer) -> None:
    streams = await queue_three(agora, "ann", "bob", "cy")
    await agora.match_once()
    got = [await until_assigned(s) for s in streams]
    assert {a.table_id for a in got} == {"shard-0.t1"}
    assert got[0].players == ("ann", "bob", "cy")
    (request,) = placer.requests
    assert request == TableRequest(("ann", "bob", "cy"), table_pb2.MATCH_KIND_SINGLE, True)


async def test_without_a_shard_the_group_waits_and_keeps_its_age(
        agora: Agora, placer: FakePlacer, clock: Clock) -> None:
    placer.refuse = True
    streams = await queue_three(agora, "ann", "bob", "cy")
    clock.now += 3_000
    await agora.match_once()
    assert len(agora.queue) == 3 and placer.requests == []
    update = await step(streams[0])
    assert isinstance(update, Waiting) and update.waited_s == 3
    assert update.window == pytest.approx(8.0)
    placer.refuse = False
    await agora.match_once()
    assert (await until_assigned(streams[2])).table_id == "shard-0.t1"


async def test_a_stream_that_ends_while_its_table_is_created_is_not_requeued(
        agora: Agora, placer: FakePlacer) -> None:
    placer.refuse = True
    streams = await queue_three(agora, "ann", "bob", "cy")
    groups_seen = []
    original = placer.place_many

    async def slow(requests: Sequence[TableRequest]) -> list[Placed | NoShardError]:
        groups_seen.append(requests)
        await streams[1].aclose()  # bob's app goes away meanwhile
        return await original(requests)

    placer.place_many = slow  # type: ignore[method-assign]
    await agora.match_once()
    assert len(groups_seen) == 1
    assert len(agora.queue) == 2 and agora.roster.where("bob") is None


async def test_the_end_of_a_match_frees_its_players_and_rates_competitive_results(
        agora: Agora) -> None:
    streams = await queue_three(agora, "ann", "bob", "cy")
    await agora.match_once()
    table = (await until_assigned(streams[0])).table_id
    with pytest.raises(ServiceError) as err:
        await step(agora.enqueue("ann"))
    assert err.value.reason == "ticket/seated"

    agora.apply_result(result(table, ["ann", "bob", "cy"], [55, 0, -15]))
    assert agora.ratings.ordinal("ann") > 0 > agora.ratings.ordinal("cy")
    again = agora.enqueue("ann")
    update = await step(again)
    assert isinstance(update, Waiting) and update.window == pytest.approx(5.0)
    await again.aclose()
    assert len(agora.queue) == 0  # closing the stream removed the ticket

    agora.apply_result(result(table, ["ann", "bob", "cy"], [55, 0, -15]))  # redelivered
    agora.apply_result(result("shard-9.unknown", ["x", "y", "z"], [1, 0, 0], ended=True))


async def test_friendly_tables_are_not_rated_and_a_long_match_keeps_its_seats(
        agora: Agora, placer: FakePlacer) -> None:
    code = agora.create_friendly("ann", MatchKind.LONG)
    streams = [agora.join_friendly(name, code) for name in ("ann", "bob", "cy")]
    for s in streams:
        assert isinstance(await step(s), Waiting)
    await agora.match_once()
    table = (await until_assigned(streams[1])).table_id
    assert placer.requests == [TableRequest(("ann", "bob", "cy"), table_pb2.MATCH_KIND_LONG,
                                            False)]
    # A member coming back gets the assignment again.
    back = agora.join_friendly("bob", code)
    assert (await until_assigned(back)).table_id == table

    agora.apply_result(result(table, ["ann", "bob", "cy"], [50, 0, 0], competitive=False,
                              ended=False))
    assert len(agora.ratings) == 0
    with pytest.raises(ServiceError) as err:
        await step(agora.enqueue("cy"))
    assert err.value.reason == "ticket/seated"
    agora.apply_result(result(table, ["ann", "bob", "cy"], [50, 0, 0], competitive=False))
    assert agora.roster.where("cy") is None and agora.lobbies.get(code) is None


async def test_shutting_down_ends_waiting_streams_with_unavailable(agora: Agora) -> None:
    stream = agora.enqueue("ann")
    assert isinstance(await step(stream), Waiting)
    agora.close()
    with pytest.raises(ServiceError) as err:
        await until_assigned(stream)
    assert err.value.status == grpc.StatusCode.UNAVAILABLE
    with pytest.raises(ServiceError):
        await step(agora.enqueue("bob"))


class FakeScoring(scoring_pb2_grpc.ScoringServiceServicer):
    """Serves records 0-1 then drops the stream; then record 1 again (at-least-once) and 2."""

    def __init__(self, records: list[scoring_pb2.ReportResultRequest]) -> None:
        self.records = records
        self.asked: list[int] = []

    async def SubscribeResults(self, request: scoring_pb2.SubscribeResultsRequest,
                               context: Any) -> AsyncIterator[scoring_pb2.SubscribeResultsResponse]:
        self.asked.append(request.from_offset)
        first = len(self.asked) == 1
        start = request.from_offset if first else request.from_offset - 1
        for offset in range(start, 2 if first else len(self.records)):
            yield scoring_pb2.SubscribeResultsResponse(record=scoring_pb2.ResultRecord(
                offset=offset, result=self.records[offset]))
        if first:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "scoring/stopping: bye")
        await asyncio.Event().wait()  # a live stream: no more records for now


async def test_the_follower_resumes_after_the_last_applied_record() -> None:
    records = [result("shard-0.a", ["ann", "bob", "cy"], [50, 0, -15]),
               result("shard-0.b", ["ann", "bob", "cy"], [50, 0, -15]),
               result("shard-0.c", ["ann", "dan", "eve"], [-5, -5, -15])]
    applied: list[str] = []
    fake = FakeScoring(records)  # type: ignore[abstract]  # only SubscribeResults is used
    server = grpc.aio.server()
    scoring_pb2_grpc.add_ScoringServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    follower = ResultsFollower(f"127.0.0.1:{port}", lambda r: applied.append(r.table_id),
                               retry_s=0.01)
    task = asyncio.create_task(follower.run())
    try:
        for _ in range(200):
            if len(applied) == 3:
                break
            await asyncio.sleep(0.01)
        assert applied == ["shard-0.a", "shard-0.b", "shard-0.c"]
        assert fake.asked == [0, 2] and follower.next_offset == 3
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.stop(0)
