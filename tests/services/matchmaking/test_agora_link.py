"""The gateways' agorà link (issue 13; matchmaking/link.py, gateway/agora_link.py): with
MACHIAVELOX_GATEWAY_AGORA_LINK the apps' Enqueues reach matchmaking as streams of one
multiplexed call, and an app sees exactly what it saw with a call each.

Real processes on loopback (mutual TLS between them): a shard, matchmaking (memory store),
and a gateway with the link on.

- Three apps queue through the gateway: each gets Waiting with its ticket id, then the three
  the same Assignment; matchmaking served one Relay call (its gRPC metrics: the link carried
  them; none without the link), and counted each stream as the Enqueue it stands for, ended OK
  after its Assignment as a call would be.
- Refusals come back with their status code and reason: an unknown ruleset is
  INVALID_ARGUMENT `table/bad-ruleset` (said by matchmaking, through the link); a bad token
  UNAUTHENTICATED at the gateway, which sends nothing on.
- An app that goes away leaves the queue: its stream is cancelled on the link (matchmaking logs
  that the player left), and the next three players are seated without it.
- A link call from the apps' side of the gateway: the gateway does not serve it.
The link breaking under waiting tickets (a replica killed): tests/faults/test_agora_replicas.py,
run with the link too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox._gen.v1 import classic_pb2, matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.local.processes import Proc, check_all_clean, free_port, start
from tests.services.matchmaking.test_lost_tables import until_assigned
from tests.support.agora import STEP_S, next_update, reason, tokens
from tests.support.client import bearer
from tests.support.scrape import handled, started

pytestmark = pytest.mark.timeout(60)

KEY = "test-key-0123456789abcdef"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("agora-link")
    procs: dict[str, Proc] = {}
    try:
        procs["shard"] = start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_SCORING_ADDRESS": "",
            "MACHIAVELOX_PRESENCE_ADDRESS": ""}, tmp)
        shards = f"shard-0={procs['shard'].address}"
        procs["matchmaking"] = start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_METRICS_PORT": str(free_port())}, tmp)
        procs["gateway"] = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": shards, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": procs["matchmaking"].address,
            "MACHIAVELOX_GATEWAY_AGORA_LINK": "true"}, tmp)
        yield procs
    finally:
        check_all_clean(reversed(list(procs.values())))


async def queue_together(gateway: Proc, names: list[str]
                         ) -> tuple[list[matchmaking_pb2.TicketUpdate],
                                    list[matchmaking_pb2.Assignment]]:
    """`names` queue at once through `gateway`: each one's first update, then its Assignment."""
    toks = await tokens(gateway, *names)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks[n]))
                 for n in names]
        try:
            firsts = [await next_update(call) for call in calls]
            return firsts, [await until_assigned(call) for call in calls]
        finally:
            for call in calls:
                call.cancel()


async def test_three_apps_are_seated_over_one_link(cluster: dict[str, Proc]) -> None:
    names = ["lk-ann", "lk-bob", "lk-cy"]
    firsts, got = await queue_together(cluster["gateway"], names)
    assert all(f.WhichOneof("kind") == "waiting" and f.ticket_id for f in firsts), firsts
    assert len({f.ticket_id for f in firsts}) == 3
    assert len({g.table_id for g in got}) == 1
    assert sorted(got[0].player_ids) == names
    assert started(cluster["matchmaking"], "Relay") == 1  # one link carried the three,
    assert started(cluster["matchmaking"], "Enqueue") == 3  # each counted as an Enqueue
    assert handled(cluster["matchmaking"], "Enqueue") == {"OK": 3}  # (ended at the Assignment)


async def test_refusals_come_back_with_their_reasons(cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    toks = await tokens(gateway, "lk-dan")
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        bad_ruleset = stub.Enqueue(matchmaking_pb2.EnqueueRequest(ruleset=99),  # type: ignore[arg-type]
                                   metadata=bearer(toks["lk-dan"]))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await next_update(bad_ruleset)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason(refused.value) == "table/bad-ruleset"
        links = started(cluster["matchmaking"], "Relay")
        bad_token = stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                 metadata=bearer(toks["lk-dan"] + "x"))
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await next_update(bad_token)
        assert unknown.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert started(cluster["matchmaking"], "Relay") == links  # (the link is the one open)
    assert not any(r.get("player") == "lk-dan" for r in cluster["matchmaking"].logs()
                   if str(r.get("msg", "")).startswith("queued"))


async def test_an_app_that_goes_away_leaves_the_queue(cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    names = ["lk-eve", "lk-fay", "lk-gus", "lk-hal"]
    toks = await tokens(gateway, *names)
    matchmaking = cluster["matchmaking"]
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        eve = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["lk-eve"]))
        ticket = (await next_update(eve)).ticket_id
        eve.cancel()
        for _ in range(int(STEP_S / 0.1)):  # the cancel travels up the link
            if any(str(r.get("msg", "")) == "left the queue" and r.get("ticket_id") == ticket
                   for r in matchmaking.logs()):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("eve's ticket never left the queue")
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(
            ruleset=classic_pb2.RULESET_MACHIAVELOX), metadata=bearer(toks[n]))
            for n in names[1:]]
        try:
            got = [await until_assigned(call) for call in calls]
        finally:
            for call in calls:
                call.cancel()
    assert sorted(got[0].player_ids) == names[1:]


async def test_the_gateway_does_not_serve_the_link_to_apps(cluster: dict[str, Proc]) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
        call = matchmaking_pb2_grpc.AgoraLinkServiceStub(ch).Relay()
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await asyncio.wait_for(call.read(), STEP_S)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_a_replica_without_the_link_gets_a_call_per_app(
        cluster: dict[str, Proc], tmp_path: Path) -> None:
    """A rolling upgrade, gateways first: their replica serves no link (an older one; here
    MACHIAVELOX_MATCHMAKING_AGORA_LINK=false). The link fails before any reply, so the gateway
    makes a call per app instead: the apps are seated as before, each Enqueue a call of its
    own. Fails without the fallback (the apps refused `agora/unavailable`)."""
    shards = f"shard-0={cluster['shard'].address}"
    procs: list[Proc] = []
    try:
        older = start("matchmaking-older", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_MATCHMAKING_AGORA_LINK": "false",
            "MACHIAVELOX_METRICS_PORT": str(free_port())}, tmp_path)
        procs.append(older)
        gateway = start("gateway-newer", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": shards, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": older.address}, tmp_path)  # (link on)
        procs.append(gateway)
        names = ["up-ann", "up-bob", "up-cy"]
        _, got = await queue_together(gateway, names)
        assert sorted(got[0].player_ids) == names and len({g.table_id for g in got}) == 1
        assert started(older, "Enqueue") == 3  # a call per app
        # (UNIMPLEMENTED, or INTERNAL at times: gRPC's report of a stream the server ended
        # before reading it; either way each stream without a reply became a call)
        assert any("serves no agorà link" in str(r.get("msg", "")) or "link broke (INTERNAL)"
                   in str(r.get("msg", "")) for r in gateway.logs())
    finally:
        check_all_clean(reversed(procs))
