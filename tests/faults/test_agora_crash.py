"""Matchmaking killed (SIGKILL, by PID) with its state in Redis: tickets are kept, and a
CreateTable it was waiting for leaves no orphan and no player at two tables (issue 13 items 3
and 4).

Real processes on loopback: scoring, two table shards (journal: SQLite), a gateway (Login),
and `machiavelox matchmaking` with MACHIAVELOX_MATCHMAKING_REDIS_URL on the machine's Redis (a
fresh key prefix per test, deleted after), restarted after the kill with the same settings.
The test is the apps: each player's Enqueue goes to matchmaking as the gateway relays it, and
after the kill the apps re-attach to their tickets by id (EnqueueRequest.ticket_id).

- Tickets waiting: two players queue, matchmaking is killed, restarted; both re-attach and
  find their tickets waiting with the time already waited; a third player comes and the three
  are seated at one table. Without the Redis store the tickets die with the process
  (`ticket/unknown`).
- During a CreateTable: shard-0 is reached through a TCP proxy the test owns, which lets the
  three players' CreateTable through and holds its answer (the table is created, matchmaking
  waits); matchmaking is killed then. Restarted, it finds the placement its dead predecessor
  left (stored "creating on shard-0"), takes it over once its lease has run out, cancels the
  table on shard-0 and seats the re-attached players at a new table: exactly one table
  exists, the players are seated there and nowhere else, shard-0 has no orphan (nothing ends
  by abandonment with points: scoring stores nothing). The cluster runs with internal TLS
  off so that the proxy can read the players' ids in the CreateTable. Without the takeover
  (stale placements never undone) the players wait forever at "a table being created" and
  the orphan stays on shard-0.
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

from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, start, wait_healthy
from machiavelox.matchmaking.redis_store import RedisStore
from tests.support.agora import STEP_S, next_update, reason, tokens
from tests.support.client import bearer

from .cluster import KEY, start_two_shards
from .test_placement_stall import StallOnce

REDIS = "redis://127.0.0.1:6379/0"
PLAIN = {"MACHIAVELOX_INTERNAL_TLS": "off"}
LEASE_S = 2.0  # MACHIAVELOX_MATCHMAKING_LEASE_S here: a dead placer's placement is taken soon
SEATED_WITHIN_S = 30.0  # the most the players may wait once re-attached (then it fails)

pytestmark = pytest.mark.timeout(120)


@dataclass
class Cluster:
    shards: dict[str, Proc]
    scoring: Proc
    gateway: Proc
    matchmaking: Proc
    proxy: StallOnce
    prefix: str


@pytest.fixture
def prefix() -> Iterator[str]:
    """A fresh Redis key prefix, its keys deleted after the test."""
    chosen = f"test-agora-crash-{secrets.token_hex(4)}:"
    yield chosen
    client = redis.Redis.from_url(REDIS)
    try:
        for key in client.scan_iter(match=f"{chosen}*", count=1_000):
            client.delete(key)
    finally:
        client.close()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    started: dict[str, Proc] = {}
    try:
        start_two_shards(tmp_path, started, PLAIN)
        yield started
    finally:
        check_all_clean(reversed(list(started.values())))


@pytest.fixture
async def cluster(procs: dict[str, Proc], prefix: str, tmp_path: Path
                  ) -> AsyncIterator[Cluster]:
    host, port = procs["shard-0"].address.split(":")
    proxy = StallOnce(host, int(port), b"crash-ann", 3_600, replies_only=True)
    await proxy.start()
    matchmaking = await asyncio.to_thread(start, "matchmaking", "matchmaking", {
        **PLAIN, "MACHIAVELOX_TOKEN_KEY": KEY,
        "MACHIAVELOX_MATCHMAKING_SHARDS": f"shard-0=127.0.0.1:{proxy.port},"
                                          f"shard-1={procs['shard-1'].address}",
        "MACHIAVELOX_SCORING_ADDRESS": procs["scoring"].address,
        "MACHIAVELOX_MATCHMAKING_REDIS_URL": REDIS,
        "MACHIAVELOX_MATCHMAKING_KEY_PREFIX": prefix,
        "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
        "MACHIAVELOX_MATCHMAKING_LEASE_S": str(LEASE_S),
        "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
    try:
        yield Cluster({sid: procs[sid] for sid in ("shard-0", "shard-1")}, procs["scoring"],
                      procs["gateway"], matchmaking, proxy, prefix)
    finally:
        await asyncio.to_thread(matchmaking.check_clean)
        await proxy.close()


# ---------------------------------------------------------------------------------- helpers
def kill_and_restart(proc: Proc) -> None:
    os.kill(proc.popen.pid, signal.SIGKILL)
    assert proc.popen.wait(STEP_S) == -signal.SIGKILL
    assert proc.respawn()
    wait_healthy(proc)


@contextlib.asynccontextmanager
async def agora(proc: Proc) -> AsyncIterator[matchmaking_pb2_grpc.MatchmakingServiceStub]:
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


async def shard_tables(cluster: Cluster) -> int:
    total = 0
    for proc in cluster.shards.values():
        async with aio_channel(proc, "matchmaking") as ch:
            load = await table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(
                table_pb2.GetLoadRequest(), timeout=STEP_S)
        total += load.tables
    return total


async def has(proc: Proc, table_id: str) -> bool:
    async with aio_channel(proc, "matchmaking") as ch:
        answer = await table_pb2_grpc.TableAuthorityServiceStub(ch).CheckTables(
            table_pb2.CheckTablesRequest(table_ids=[table_id]), timeout=STEP_S)
    return not answer.missing_table_ids


async def nothing_scored(cluster: Cluster) -> None:
    async with aio_channel(cluster.scoring, "results-reader") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100), timeout=STEP_S)
    assert not board.rows


# ---------------------------------------------------------------------------------- tests
async def test_waiting_tickets_outlive_their_matchmaking(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "kept-ann", "kept-bob", "kept-cy")
    async with agora(cluster.matchmaking) as stub:
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks[name]))
                 for name in ("kept-ann", "kept-bob")]
        tickets = [(await first_update(call)).ticket_id for call in calls]
        await asyncio.sleep(2.2)  # they wait (two are not a table)
        await asyncio.to_thread(kill_and_restart, cluster.matchmaking)
        for call in calls:
            with pytest.raises(grpc.aio.AioRpcError):
                await asyncio.wait_for(call.read(), STEP_S)  # the stream broke
    async with agora(cluster.matchmaking) as stub:
        again = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(ticket_id=ticket),
                              metadata=bearer(toks[name]))
                 for ticket, name in zip(tickets, ("kept-ann", "kept-bob"), strict=True)]
        for call, ticket in zip(again, tickets, strict=True):
            update = await first_update(call)
            assert update.ticket_id == ticket and update.waiting.waited_s >= 2  # its age
        third = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["kept-cy"]))
        try:
            got = [await until_assigned(call) for call in (*again, third)]
        finally:
            for call in (*again, third):
                call.cancel()
    assert len({a.table_id for a in got}) == 1
    assert sorted(got[0].player_ids) == ["kept-ann", "kept-bob", "kept-cy"]
    assert await shard_tables(cluster) == 1


async def test_a_placement_cut_by_a_crash_is_undone(cluster: Cluster) -> None:
    names = ("crash-ann", "crash-bob", "crash-cy")
    toks = await tokens(cluster.gateway, *names)
    async with agora(cluster.matchmaking) as stub:
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks[name]))
                 for name in names]
        tickets = [(await first_update(call)).ticket_id for call in calls]
        await asyncio.wait_for(cluster.proxy.fired.wait(), STEP_S)  # CreateTable on shard-0
        await asyncio.sleep(0.3)  # (created there; its answer held)
        orphans = [f"shard-0.{p}" for p in await placement_ids(cluster.prefix)]
        assert len(orphans) == 1 and await has(cluster.shards["shard-0"], orphans[0])
        await asyncio.to_thread(kill_and_restart, cluster.matchmaking)
        for call in calls:
            call.cancel()
    cluster.proxy.resume()
    await cluster.proxy.cut()  # (the dead process's connection)

    async with agora(cluster.matchmaking) as stub:
        again = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(ticket_id=ticket),
                              metadata=bearer(toks[name]))
                 for ticket, name in zip(tickets, names, strict=True)]
        try:
            for call in again:
                await first_update(call)
            try:
                got = await asyncio.wait_for(asyncio.gather(*map(until_assigned, again)),
                                             SEATED_WITHIN_S)
            except TimeoutError:
                raise AssertionError("the players were never seated: the interrupted "
                                     "placement was not undone") from None
        finally:
            for call in again:
                call.cancel()
        for name in names:  # seated there, and only there
            refused = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks[name]))
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await asyncio.wait_for(refused.read(), STEP_S)
            assert reason(err.value) == "ticket/seated" and got[0].table_id in (
                err.value.details() or "")
    assert len({a.table_id for a in got}) == 1 and got[0].table_id != orphans[0]
    assert sorted(got[0].player_ids) == sorted(names)
    assert not await has(cluster.shards["shard-0"], orphans[0])  # cancelled
    assert await shard_tables(cluster) == 1
    await nothing_scored(cluster)
    resumed = [r for r in cluster.matchmaking.logs()
               if "taking over an unfinished placement" in str(r.get("msg"))]
    assert [r.get("table_id") for r in resumed] == orphans


async def placement_ids(prefix: str) -> list[str]:
    store = RedisStore(REDIS, prefix, 60_000)
    try:
        return [p.placement_id for p in (await store.snapshot()).placements]
    finally:
        await store.close()
