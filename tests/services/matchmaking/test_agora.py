"""The agorà's use cases in process: fake shards, a fake clock, and a fake scoring server for
the results follower; the abuse defences (limits, one lobby, lobby TTL) with the fake clock."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
import pytest
from prometheus_client import CollectorRegistry

from machiavelox._gen.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.matchmaking.agora import Agora, Assigned, MatchResult, Update, Waiting
from machiavelox.matchmaking.limits import AgoraRates
from machiavelox.matchmaking.memory_store import MemoryStore
from machiavelox.matchmaking.metrics import MatchmakingMetrics
from machiavelox.matchmaking.placing import Answer, Load
from machiavelox.matchmaking.results import ResultsFollower, decode_result
from machiavelox.matchmaking.service import refusals
from machiavelox.matchmaking.store import Placement
from machiavelox.platform.errors import ServiceError
from machiavelox.platform.ratelimit import Rate
from machiavelox.platform.ratings import Ratings
from machiavelox.platform.tls import InternalTls
from machiavelox.rules import MatchKind

T = TypeVar("T")
Request = tuple[tuple[str, ...], MatchKind, bool]  # a table asked for: seats, kind, competitive


class FakeShards:
    """One shard, shard-0, that creates every table (or refuses them all)."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.refuse = False
        self.before_create: Callable[[], Awaitable[None]] | None = None

    async def loads(self) -> dict[str, Load]:
        return {"shard-0": Load(len(self.requests), 0, False)}

    async def create(self, shard_id: str, table_id: str, placement: Placement) -> Answer:
        if self.before_create is not None:
            await self.before_create()
        if self.refuse:
            return Answer("refused", "all shards full")
        self.requests.append((placement.players, placement.kind, placement.competitive))
        return Answer("created")

    async def cancel(self, shard_id: str, table_id: str, placement_id: str) -> Answer:
        return Answer("gone")


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def numbered() -> Callable[[], str]:
    """Placement ids t1, t2, ...: the tables are shard-0.t1, shard-0.t2, ..."""
    return map("t{}".format, itertools.count(1)).__next__


@pytest.fixture
def placer() -> FakeShards:
    return FakeShards()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def agora(placer: FakeShards, clock: Clock) -> Agora:
    return Agora(Ratings(), placer, clock, 5.0, 1.0, update_s=0.05,
                 shuffle=lambda seats: None, new_placement_id=numbered())


def mem(agora: Agora) -> MemoryStore:
    assert isinstance(agora.store, MemoryStore)
    return agora.store


async def call(work: Awaitable[T]) -> T:
    """A use case called as the servicer calls it: refusals as service errors."""
    with refusals():
        return await work


async def step(stream: AsyncGenerator[Update, None]) -> Update:
    return await call(asyncio.wait_for(anext(stream), 2))


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
           ended: bool = True) -> MatchResult:
    """A result as scoring stores it, as the follower gives it to the agorà."""
    return decode_result(scoring_pb2.ReportResultRequest(
        table_id=table_id, smazzata=1, competitive=competitive, player_ids=players,
        kind=table_pb2.MATCH_KIND_SINGLE if competitive else table_pb2.MATCH_KIND_LONG,
        result=common_pb2.SmazzataResult(scores=scores), match_ended=ended))


def report(table_id: str, players: list[str], scores: list[int]
           ) -> scoring_pb2.ReportResultRequest:
    return scoring_pb2.ReportResultRequest(
        table_id=table_id, smazzata=1, competitive=True, player_ids=players,
        kind=table_pb2.MATCH_KIND_SINGLE, result=common_pb2.SmazzataResult(scores=scores),
        match_ended=True)


async def test_a_competitive_group_gets_a_single_competitive_table(
        agora: Agora, placer: FakeShards) -> None:
    streams = await queue_three(agora, "ann", "bob", "cy")
    await agora.match_once()
    got = [await until_assigned(s) for s in streams]
    assert {a.table_id for a in got} == {"shard-0.t1"}
    assert got[0].players == ("ann", "bob", "cy")
    (request,) = placer.requests
    assert request == (("ann", "bob", "cy"), MatchKind.SINGLE, True)


async def test_without_a_shard_the_group_waits_and_keeps_its_age(
        agora: Agora, placer: FakeShards, clock: Clock) -> None:
    placer.refuse = True
    streams = await queue_three(agora, "ann", "bob", "cy")
    clock.now += 3_000
    await agora.match_once()
    assert len(mem(agora).queue) == 3 and placer.requests == []
    update = await step(streams[0])
    assert isinstance(update, Waiting) and update.waited_s == 3
    assert update.window == pytest.approx(8.0)
    placer.refuse = False
    await agora.match_once()
    assert (await until_assigned(streams[2])).table_id == "shard-0.t2"  # (t1: refused)


async def test_a_stream_that_ends_while_its_table_is_created_is_not_requeued(
        agora: Agora, placer: FakeShards) -> None:
    placer.refuse = True
    streams = await queue_three(agora, "ann", "bob", "cy")
    asked = []

    async def bob_leaves() -> None:
        asked.append(True)
        await streams[1].aclose()  # bob's app goes away meanwhile

    placer.before_create = bob_leaves
    await agora.match_once()
    assert len(asked) == 1
    assert len(mem(agora).queue) == 2 and mem(agora).roster.where("bob") is None


async def test_the_end_of_a_match_frees_its_players_and_rates_competitive_results(
        agora: Agora) -> None:
    streams = await queue_three(agora, "ann", "bob", "cy")
    await agora.match_once()
    table = (await until_assigned(streams[0])).table_id
    with pytest.raises(ServiceError) as err:
        await step(agora.enqueue("ann"))
    assert err.value.reason == "ticket/seated"

    await agora.apply_result(result(table, ["ann", "bob", "cy"], [55, 0, -15]))
    assert agora.ratings.ordinal("ann") > 0 > agora.ratings.ordinal("cy")
    again = agora.enqueue("ann")
    update = await step(again)
    assert isinstance(update, Waiting) and update.window == pytest.approx(5.0)
    await again.aclose()
    assert len(mem(agora).queue) == 0  # closing the stream removed the ticket

    await agora.apply_result(result(table, ["ann", "bob", "cy"], [55, 0, -15]))  # redelivered
    await agora.apply_result(result("shard-9.unknown", ["x", "y", "z"], [1, 0, 0], ended=True))


async def test_friendly_tables_are_not_rated_and_a_long_match_keeps_its_seats(
        agora: Agora, placer: FakeShards) -> None:
    code = await agora.create_friendly("ann", MatchKind.LONG)
    streams = [agora.join_friendly(name, code) for name in ("ann", "bob", "cy")]
    for s in streams:
        assert isinstance(await step(s), Waiting)
    await agora.match_once()
    table = (await until_assigned(streams[1])).table_id
    assert placer.requests == [(("ann", "bob", "cy"), MatchKind.LONG, False)]
    # A member coming back gets the assignment again.
    back = agora.join_friendly("bob", code)
    assert (await until_assigned(back)).table_id == table

    await agora.apply_result(result(table, ["ann", "bob", "cy"], [50, 0, 0],
                                    competitive=False, ended=False))
    assert len(agora.ratings) == 0
    with pytest.raises(ServiceError) as err:
        await step(agora.enqueue("cy"))
    assert err.value.reason == "ticket/seated"
    await agora.apply_result(result(table, ["ann", "bob", "cy"], [50, 0, 0],
                                    competitive=False))
    assert mem(agora).roster.where("cy") is None and mem(agora).lobbies.get(code) is None


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
    records = [report("shard-0.a", ["ann", "bob", "cy"], [50, 0, -15]),
               report("shard-0.b", ["ann", "bob", "cy"], [50, 0, -15]),
               report("shard-0.c", ["ann", "dan", "eve"], [-5, -5, -15])]
    applied: list[str] = []

    async def apply(record: MatchResult) -> None:
        applied.append(record.table_id)

    fake = FakeScoring(records)  # type: ignore[abstract]  # only SubscribeResults is used
    server = grpc.aio.server()
    scoring_pb2_grpc.add_ScoringServiceServicer_to_server(fake, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    follower = ResultsFollower(f"127.0.0.1:{port}", apply,
                               InternalTls.off().connector("scoring"), retry_s=0.01)
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


# ---------------------------------------------------------------------------------- abuse
RATES = AgoraRates(enqueue=Rate(1.0, 2), cancel=Rate(1.0, 2), create_friendly=Rate(1.0, 3),
                   join_friendly=Rate(1.0, 6), join_failed=Rate(0.1, 2))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def strict(placer: FakeShards, clock: Clock, registry: CollectorRegistry) -> Agora:
    """An agorà with small limits, a 60 s lobby TTL and metrics."""
    return Agora(Ratings(), placer, clock, 5.0, 1.0, update_s=0.05, shuffle=lambda seats: None,
                 metrics=MatchmakingMetrics(registry), rates=RATES, lobby_ttl_s=60)


def value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    got = registry.get_sample_value(name, labels)
    return 0.0 if got is None else got


async def test_enqueue_and_cancel_are_paced_per_player(
        strict: Agora, clock: Clock, registry: CollectorRegistry) -> None:
    for _ in range(2):  # the burst: queue, leave, queue, leave
        stream = strict.enqueue("ann")
        ticket = await step(stream)
        assert await call(strict.cancel("ann", ticket.ticket_id))
        await stream.aclose()
    with pytest.raises(ServiceError) as err:
        await step(strict.enqueue("ann"))
    assert (err.value.status, err.value.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                    "rate/limited")
    assert len(mem(strict).queue) == 0 and mem(strict).roster.where("ann") is None  # unchanged
    with pytest.raises(ServiceError) as err:
        await call(strict.cancel("ann", "any"))
    assert err.value.reason == "rate/limited"
    other = strict.enqueue("bob")  # another player is not slowed down
    assert isinstance(await step(other), Waiting)
    await other.aclose()
    clock.now += 1_000
    again = strict.enqueue("ann")
    assert isinstance(await step(again), Waiting)
    await again.aclose()
    assert value(registry, "machiavelox_matchmaking_rate_limited_total", call="enqueue") == 1
    assert value(registry, "machiavelox_matchmaking_rate_limited_total", call="cancel") == 1


async def test_a_player_creating_lobbies_in_a_loop_gets_one(
        strict: Agora, registry: CollectorRegistry) -> None:
    codes = {await call(strict.create_friendly("ann", MatchKind.SINGLE)) for _ in range(3)}
    assert len(codes) == 1 and len(mem(strict).lobbies) == 1
    with pytest.raises(ServiceError) as err:
        await call(strict.create_friendly("ann", MatchKind.SINGLE))
    assert err.value.reason == "rate/limited"
    assert value(registry, "machiavelox_matchmaking_rate_limited_total",
                 call="create_friendly") == 1
    with pytest.raises(ServiceError) as err:
        await call(strict.create_friendly("bob", MatchKind.LONG))
        await call(strict.create_friendly("bob", MatchKind.SINGLE))
    assert (err.value.status, err.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                    "lobby/open")
    assert len(mem(strict).lobbies) == 2


async def test_a_lobby_past_its_ttl_ends_its_waiters_and_its_code_is_gone(
        strict: Agora, clock: Clock, placer: FakeShards, registry: CollectorRegistry) -> None:
    code = await call(strict.create_friendly("ann", MatchKind.SINGLE))
    streams = [strict.join_friendly(name, code) for name in ("ann", "bob")]
    for s in streams:
        assert isinstance(await step(s), Waiting)
    clock.now += 59_999
    await strict.match_once()
    assert mem(strict).lobbies.get(code) is not None
    clock.now += 1
    await strict.match_once()
    for s in streams:
        with pytest.raises(ServiceError) as err:
            await until_assigned(s)
        assert (err.value.status, err.value.reason) == (grpc.StatusCode.NOT_FOUND,
                                                        "friendly/expired")
    assert mem(strict).lobbies.get(code) is None and placer.requests == []
    assert mem(strict).roster.where("ann") is None and mem(strict).roster.where("bob") is None
    with pytest.raises(ServiceError) as err:
        await step(strict.join_friendly("cy", code))
    assert (err.value.status, err.value.reason) == (grpc.StatusCode.NOT_FOUND,
                                                    "friendly/unknown-code")
    assert await call(strict.create_friendly("ann", MatchKind.SINGLE)) != code  # free again
    assert value(registry, "machiavelox_matchmaking_lobbies_expired_total") == 1
    assert value(registry, "machiavelox_matchmaking_tickets_total", queue="friendly",
                 outcome="expired") == 2


async def test_guessing_codes_is_throttled_before_any_code_is_looked_up(
        strict: Agora, clock: Clock, registry: CollectorRegistry) -> None:
    code = await call(strict.create_friendly("ann", MatchKind.SINGLE))
    for guess in ("AAAAAAAAAA", "not a code"):  # the failed-join burst: two
        with pytest.raises(ServiceError) as err:
            await step(strict.join_friendly("eve", guess))
        assert err.value.reason == "friendly/unknown-code"
    with pytest.raises(ServiceError) as err:  # the right code now: refused all the same
        await step(strict.join_friendly("eve", code))
    assert (err.value.status, err.value.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                    "rate/limited")
    assert mem(strict).lobbies.get(code).players == []  # type: ignore[union-attr]
    clock.now += 10_000  # one failed attempt refilled
    joined = strict.join_friendly("eve", code.lower())
    assert isinstance(await step(joined), Waiting)
    assert mem(strict).lobbies.get(code).players == ["eve"]  # type: ignore[union-attr]
    await joined.aclose()
    assert value(registry, "machiavelox_matchmaking_unknown_codes_total") == 2
    assert value(registry, "machiavelox_matchmaking_rate_limited_total",
                 call="join_friendly") == 1


async def test_a_newer_join_stream_replaces_the_older_one_and_keeps_the_seat(
        strict: Agora, placer: FakeShards) -> None:
    code = await call(strict.create_friendly("ann", MatchKind.SINGLE))
    first = strict.join_friendly("ann", code)
    assert isinstance(await step(first), Waiting)
    second = strict.join_friendly("ann", code)
    assert isinstance(await step(second), Waiting)
    with pytest.raises(ServiceError) as err:
        await until_assigned(first)
    assert (err.value.status, err.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                    "ticket/replaced")
    lobby = mem(strict).lobbies.get(code)
    assert lobby is not None and lobby.players == ["ann"]
    assert len(strict._by_ref[code]) == 1
    others = [strict.join_friendly(name, code) for name in ("bob", "cy")]
    for s in others:
        assert isinstance(await step(s), Waiting)
    await strict.match_once()
    assert (await until_assigned(second)).players == ("ann", "bob", "cy")
