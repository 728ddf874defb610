"""Two matchmaking replicas on one Redis: no player matched twice, and one killed (SIGKILL, by
PID) loses nothing: the other goes on, and tickets re-attach to it (issue 13 item 4).

Real processes on loopback: scoring, two table shards, two `machiavelox matchmaking` replicas
sharing the machine's Redis (a fresh key prefix, deleted after), and a gateway whose agorà
relay reaches them as one service would (MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS names both:
gRPC's pick_first uses replica A while it lives, then B). Apps queue through the gateway, or
straight at a replica (as the gateway relays).

- Thirty players queue at once, half on each replica: each is seated exactly once, ten tables
  in all, three players at each, whichever replica holds the stream (one replica matches at a
  time: the matching lease). That two replicas forming groups at the very same moment form
  each one once (a group is formed only if its tickets all still wait) is proven where the
  moment can be chosen: tests/services/matchmaking/test_stores.py.
- Two players wait on replica A (ann through the gateway, bob straight at A), A is killed:
  the gateway follows ann's ticket again on B by itself (her stream never breaks), bob's app
  re-attaches by ticket id on B; cy queues on B, and the three are seated together at one
  table, formed by B. Without the shared store (or the re-attach) their tickets are gone.
  Run twice: the gateway relaying with a call per app, and with its agorà link (the link to A
  breaks under ann's stream, which follows her ticket on a new link, to B).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc, table_pb2, table_pb2_grpc
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    free_ports,
    start,
    wait_healthy,
)
from tests.support.agora import STEP_S, next_update, tokens
from tests.support.client import bearer

KEY = "fault-test-key-0123456789abcdef"
REDIS = "redis://127.0.0.1:6379/0"
SEATED_WITHIN_S = 30.0

pytestmark = pytest.mark.timeout(120)


@dataclass
class Cluster:
    shards: dict[str, Proc]
    gateway: Proc
    replicas: dict[str, Proc]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """With `indirect` parametrization "link": the gateway's agorà link on."""
    link = getattr(request, "param", "calls") == "link"
    prefix = f"test-agora-replicas-{secrets.token_hex(4)}:"
    started: list[Proc] = []
    try:
        scoring = start("scoring", "scoring", {}, tmp_path)
        started.append(scoring)
        shards = {}
        for sid in ("shard-0", "shard-1"):
            shards[sid] = start(sid, "table", {
                "MACHIAVELOX_SHARD_ID": sid, "MACHIAVELOX_SCORING_ADDRESS": scoring.address,
                "MACHIAVELOX_PRESENCE_ADDRESS": "", "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
            started.append(shards[sid])
        shard_map = ",".join(f"{sid}={p.address}" for sid, p in shards.items())
        ports = dict(zip(("A", "B"), free_ports(2), strict=True))
        replicas = {}
        for name, port in ports.items():
            replicas[name] = start(f"matchmaking-{name}", "matchmaking", {
                "MACHIAVELOX_MATCHMAKING_PORT": str(port), "MACHIAVELOX_TOKEN_KEY": KEY,
                "MACHIAVELOX_MATCHMAKING_SHARDS": shard_map,
                "MACHIAVELOX_SCORING_ADDRESS": scoring.address,
                "MACHIAVELOX_MATCHMAKING_REDIS_URL": REDIS,
                "MACHIAVELOX_MATCHMAKING_KEY_PREFIX": prefix,
                "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
                "MACHIAVELOX_METRICS_PORT": "0", "MACHIAVELOX_HEALTH_PORT": "0",
                "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
            started.append(replicas[name])
        gateway = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": shard_map, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS":
                "ipv4:" + ",".join(f"127.0.0.1:{port}" for port in ports.values()),
            "MACHIAVELOX_GATEWAY_AGORA_LINK": str(link).lower()}, tmp_path)
        started.append(gateway)
        yield Cluster(shards, gateway, replicas)
    finally:
        try:
            check_all_clean(reversed(started))
        finally:
            client = redis.Redis.from_url(REDIS)
            for key in client.scan_iter(match=f"{prefix}*", count=1_000):
                client.delete(key)
            client.close()


@contextlib.asynccontextmanager
async def agora(proc: Proc) -> AsyncIterator[matchmaking_pb2_grpc.MatchmakingServiceStub]:
    """The agorà of `proc`: a replica (as the gateway relays), or the gateway itself."""
    async with aio_channel(proc, "gateway") as channel:
        yield matchmaking_pb2_grpc.MatchmakingServiceStub(channel)


async def first_update(call: Any) -> matchmaking_pb2.TicketUpdate:
    update = await next_update(call)
    assert update.WhichOneof("kind") == "waiting", update
    return update


async def until_assigned(call: Any) -> matchmaking_pb2.Assignment:
    for _ in range(200):
        update = await next_update(call)
        if update.WhichOneof("kind") == "assignment":
            found: matchmaking_pb2.Assignment = update.assignment
            return found
    raise AssertionError("no assignment")


async def all_assigned(calls: list[Any]) -> list[matchmaking_pb2.Assignment]:
    try:
        return await asyncio.wait_for(asyncio.gather(*map(until_assigned, calls)),
                                      SEATED_WITHIN_S)
    except TimeoutError:
        raise AssertionError(f"not every player was seated in {SEATED_WITHIN_S} s") from None


async def tables_in_play(cluster: Cluster) -> int:
    total = 0
    for proc in cluster.shards.values():
        async with aio_channel(proc, "matchmaking") as ch:
            load = await table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(
                table_pb2.GetLoadRequest(), timeout=STEP_S)
        total += load.tables
    return total


def created_by(proc: Proc) -> int:
    return sum("competitive table created" in str(r.get("msg")) for r in proc.logs())


async def test_players_queueing_on_both_replicas_are_seated_once(cluster: Cluster) -> None:
    names = [f"many-{i:02}" for i in range(30)]
    toks = await tokens(cluster.gateway, *names)
    async with agora(cluster.replicas["A"]) as a, agora(cluster.replicas["B"]) as b:
        calls = [(a if i % 2 else b).Enqueue(matchmaking_pb2.EnqueueRequest(),
                                             metadata=bearer(toks[name]))
                 for i, name in enumerate(names)]
        try:
            got = await all_assigned(calls)
        finally:
            for call in calls:
                call.cancel()
    tables: dict[str, list[str]] = {}
    for name, assignment in zip(names, got, strict=True):
        assert name in assignment.player_ids
        tables.setdefault(assignment.table_id, []).append(name)
    assert len(tables) == 10 and all(len(players) == 3 for players in tables.values())
    assert await tables_in_play(cluster) == 10  # nobody at a second table
    assert created_by(cluster.replicas["A"]) + created_by(cluster.replicas["B"]) == 10


@pytest.mark.parametrize("cluster", ["calls", "link"], indirect=True)
async def test_a_replica_killed_loses_no_ticket(cluster: Cluster) -> None:
    try:
        await killed_replica(cluster)
    finally:  # (A comes back, and stops cleanly with the rest)
        replica = cluster.replicas["A"]
        if replica.popen.poll() is not None and replica.respawn():
            await asyncio.to_thread(wait_healthy, replica)


async def killed_replica(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "ha-ann", "ha-bob", "ha-cy")
    async with agora(cluster.gateway) as gateway, agora(cluster.replicas["A"]) as a:
        ann = gateway.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["ha-ann"]))
        bob = a.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["ha-bob"]))
        ann_ticket = (await first_update(ann)).ticket_id
        bob_ticket = (await first_update(bob)).ticket_id
        await asyncio.sleep(1.5)  # they wait, on A (two are not a table)
        replica = cluster.replicas["A"]
        os.kill(replica.popen.pid, signal.SIGKILL)
        assert replica.popen.wait(STEP_S) == -signal.SIGKILL
        with pytest.raises(grpc.aio.AioRpcError):
            for _ in range(10):
                await asyncio.wait_for(bob.read(), STEP_S)  # bob's stream broke
        async with agora(cluster.replicas["B"]) as b:
            bob = b.Enqueue(matchmaking_pb2.EnqueueRequest(ticket_id=bob_ticket),
                            metadata=bearer(toks["ha-bob"]))
            update = await first_update(bob)
            assert update.ticket_id == bob_ticket and update.waiting.waited_s >= 1
            cy = b.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["ha-cy"]))
            try:
                got = await all_assigned([ann, bob, cy])  # (ann's stream: the same one)
            finally:
                for call in (ann, bob, cy):
                    call.cancel()
    assert len({g.table_id for g in got}) == 1
    assert sorted(got[0].player_ids) == ["ha-ann", "ha-bob", "ha-cy"]
    assert await tables_in_play(cluster) == 1
    assert created_by(cluster.replicas["B"]) == 1
    assert any(str(r.get("msg")).startswith("re-attached to the ticket")
               and r.get("ticket_id") == ann_ticket for r in cluster.replicas["B"].logs())
