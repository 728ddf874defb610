"""A table its shard lost does not lock its players out: matchmaking frees their seats.

Real processes on loopback: scoring (SQLite), two table shards journaling in SQLite in their
own data dirs, a gateway (for Login), and `machiavelox matchmaking` checking the seated tables
with their shards every 0.2 s (MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S; 600 s for the test of the
check a player's refusal makes at once). A table is truly lost
when its shard is killed (SIGKILL) and its journal file deleted before it is started again:
the shard comes back without it. Its players can then queue again (no `ticket/seated`) and are
matched at a new table, while a table that still exists (on the other shard, and the new one
on the restarted shard) keeps its players seated. Nobody is rated: scoring has no record.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    credentials,
    free_port,
    start,
    wait_healthy,
)
from machiavelox.matchmaking.placement import CHECK_BATCH, ShardClient
from machiavelox.table.service import MAX_CHECKED_TABLES
from tests.services.matchmaking.test_matchmaking_processes import match_three, refusal
from tests.support.agora import STEP_S, next_update, reason, tokens
from tests.support.client import bearer

KEY = "test-key-0123456789abcdef"
CHECK_S = 0.2  # MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S here
NEVER_S = 600.0  # a periodic check that never comes within a test
FREED_WITHIN_S = 30.0  # the most the lost table's players may wait to be free (then it fails)
LOST = "is lost: its players are free"  # matchmaking's WARNING, once per lost table

pytestmark = pytest.mark.timeout(120)


@dataclass
class Cluster:
    shards: dict[str, Proc]
    scoring: Proc
    gateway: Proc
    matchmaking: Proc
    tmp: Path


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    check_s = float(getattr(request, "param", CHECK_S))  # the periodic seat check's interval
    procs: list[Proc] = []
    try:
        scoring = start("scoring", "scoring", {
            "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{tmp_path / 'scoring.sqlite3'}",
            "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
        procs.append(scoring)
        ports = {sid: free_port() for sid in ("shard-0", "shard-1")}
        shards = {}
        for sid, port in ports.items():  # journal: sqlite in <tmp>/<sid>-data (the default)
            shards[sid] = start(sid, "table", {"MACHIAVELOX_SHARD_ID": sid,
                                               "MACHIAVELOX_TABLE_PORT": str(port),
                                               "MACHIAVELOX_SCORING_ADDRESS": scoring.address,
                                               "MACHIAVELOX_PRESENCE_ADDRESS": "",
                                               "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
            procs.append(shards[sid])
        shard_map = ",".join(f"{sid}=127.0.0.1:{port}" for sid, port in ports.items())
        gateway = start("gateway", "gateway", {"MACHIAVELOX_TOKEN_KEY": KEY,
                                               "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
                                               "MACHIAVELOX_GATEWAY_SHARDS": shard_map,
                                               "MACHIAVELOX_PRESENCE_ADDRESS": "",
                                               "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
        procs.append(gateway)
        matchmaking = start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shard_map,
            "MACHIAVELOX_SCORING_ADDRESS": scoring.address,
            "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S": str(check_s),
            "MACHIAVELOX_METRICS_PORT": str(free_port()),
            # the test asks again and again whether a player may queue
            "MACHIAVELOX_MATCHMAKING_ENQUEUE_RATE": "100",
            "MACHIAVELOX_MATCHMAKING_ENQUEUE_BURST": "500",
            "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
        procs.append(matchmaking)
        yield Cluster(shards, scoring, gateway, matchmaking, tmp_path)
    finally:  # matchmaking first, then the gateway, the shards, scoring
        check_all_clean(reversed(procs))


# ---------------------------------------------------------------------------------- helpers
def lose_tables(cluster: Cluster, shard_id: str) -> None:
    """SIGKILL the shard, delete its journal (the SQLite file and its WAL), start it again."""
    shard = cluster.shards[shard_id]
    os.kill(shard.popen.pid, signal.SIGKILL)
    assert shard.popen.wait(STEP_S) == -signal.SIGKILL
    journal = cluster.tmp / f"{shard_id}-data" / f"journal-{shard_id}.sqlite3"
    assert journal.exists(), "the shard did not journal where the test expects"
    for path in journal.parent.glob(journal.name + "*"):  # the file, -wal, -shm
        path.unlink()
    assert shard.respawn()
    wait_healthy(shard)


async def until_assigned(call: Any) -> matchmaking_pb2.Assignment:
    """Read a stream (past its first update) to its Assignment."""
    for _ in range(100):
        update = await next_update(call)
        if update.WhichOneof("kind") == "assignment":
            assignment: matchmaking_pb2.Assignment = update.assignment
            return assignment
    raise AssertionError("no assignment after 100 updates")


async def seated_at(stub: matchmaking_pb2_grpc.MatchmakingServiceStub, token: str) -> str:
    """The player may not queue: the refusal's details (naming the table)."""
    err = await refusal(stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(token)))
    assert (err.code(), reason(err)) == (grpc.StatusCode.FAILED_PRECONDITION, "ticket/seated")
    return err.details() or ""


async def queue_when_free(stub: matchmaking_pb2_grpc.MatchmakingServiceStub, token: str
                          ) -> Any:
    """Enqueue until it is not refused `ticket/seated` (bounded); the open stream."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FREED_WITHIN_S
    for _ in range(int(FREED_WITHIN_S / 0.1)):
        call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(token))
        try:
            first = await next_update(call)
        except grpc.aio.AioRpcError as err:
            assert reason(err) == "ticket/seated", err
            assert loop.time() < deadline, "the lost table's players are still seated"
            await asyncio.sleep(0.1)
            continue
        assert first.WhichOneof("kind") == "waiting", first
        return call
    raise AssertionError("the lost table's players are still seated")


async def two_tables(stub: matchmaking_pb2_grpc.MatchmakingServiceStub, toks: dict[str, str],
                     lost_names: tuple[str, ...], kept_names: tuple[str, ...]
                     ) -> tuple[matchmaking_pb2.Assignment, matchmaking_pb2.Assignment]:
    """Two tables matched through the agorà, one on each shard (the least-loaded shard gets
    the second): the one the test will lose, and the one it keeps."""
    [lost, *_] = await match_three(stub, {n: toks[n] for n in lost_names})
    [kept, *_] = await match_three(stub, {n: toks[n] for n in kept_names})
    assert lost.shard_id != kept.shard_id
    return lost, kept


@contextlib.asynccontextmanager
async def shard_stub(proc: Proc, role: str = "matchmaking"
                     ) -> AsyncIterator[table_pb2_grpc.TableAuthorityServiceStub]:
    async with aio_channel(proc, role) as channel:
        yield table_pb2_grpc.TableAuthorityServiceStub(channel)


def lost_metric(cluster: Cluster) -> float:
    port = cluster.matchmaking.env["MACHIAVELOX_METRICS_PORT"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head == "machiavelox_matchmaking_lost_tables_total":
            return float(value)
    raise AssertionError("no machiavelox_matchmaking_lost_tables_total series")


def lost_lines(cluster: Cluster) -> list[dict[str, object]]:
    return [r for r in cluster.matchmaking.logs() if LOST in str(r.get("msg", ""))]


# ---------------------------------------------------------------------------------- tests
def test_matchmaking_sends_no_more_ids_per_call_than_a_shard_takes() -> None:
    assert CHECK_BATCH == MAX_CHECKED_TABLES


async def test_the_players_of_a_lost_table_are_free_and_tables_that_exist_keep_theirs(
        cluster: Cluster) -> None:
    lost_names, kept_names = ("ann", "bob", "cy"), ("dan", "eve", "fay")
    toks = await tokens(cluster.gateway, *lost_names, *kept_names)
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        lost, kept = await two_tables(stub, toks, lost_names, kept_names)
        for name in (*lost_names, *kept_names):  # seated, as long as their tables exist
            assert (lost.table_id if name in lost_names else kept.table_id) in \
                await seated_at(stub, toks[name])

        await asyncio.to_thread(lose_tables, cluster, lost.shard_id)
        async with shard_stub(cluster.shards[lost.shard_id]) as shard:
            answer = await shard.CheckTables(table_pb2.CheckTablesRequest(
                table_ids=[lost.table_id]), timeout=STEP_S)
        assert answer.shard_id == lost.shard_id
        assert list(answer.missing_table_ids) == [lost.table_id]  # truly gone

        # Its players are free within a bounded time, and can play again: a new table.
        calls = [await queue_when_free(stub, toks["ann"])]
        try:
            for name in ("bob", "cy"):  # freed together: at once
                call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                    metadata=bearer(toks[name]))
                calls.append(call)
                assert (await next_update(call)).WhichOneof("kind") == "waiting"
            again = [await until_assigned(call) for call in calls]
        finally:
            for call in calls:
                call.cancel()
        fresh = again[0]
        assert {a.table_id for a in again} == {fresh.table_id} != {lost.table_id}
        assert fresh.shard_id == lost.shard_id  # (emptiest now) the shard that lost tables

        # Tables that exist are never freed: the other shard's, and the new one, seated
        # longer than several checks now.
        await asyncio.sleep(8 * CHECK_S)
        for name in kept_names:
            assert kept.table_id in await seated_at(stub, toks[name])
        for name in lost_names:
            assert fresh.table_id in await seated_at(stub, toks[name])

    lines = lost_lines(cluster)
    assert [r.get("table_id") for r in lines] == [lost.table_id]  # logged once
    assert lines[0]["level"] == "WARNING"
    assert lost_metric(cluster) == 1.0
    # ended without points: nothing stored, nobody rated
    async with aio_channel(cluster.scoring, "results-reader") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100), timeout=STEP_S)
    assert not board.rows


@pytest.mark.parametrize("cluster", [NEVER_S], indirect=True)
async def test_a_lost_tables_player_who_queues_is_freed_at_once_not_at_the_next_check(
        cluster: Cluster) -> None:
    """With the periodic check 600 s away, a lost table's player queues right after the loss
    and waits at once (the first try): the `ticket/seated` refusal made matchmaking ask the
    shard about that table then, the shard does not have it, so its seats were freed (all
    three: the others too) and the request went on. The three queue at the same moment: those
    refused while the first one's check is under way wait for its answer (they were refused
    `ticket/seated` before, the check being "asked already"). A table that exists keeps its players
    seated however often they ask (its shard is asked and has it). Fails without the check a
    refusal makes (`ticket/seated` for 600 s)."""
    lost_names, kept_names = ("gil", "hal", "ida"), ("jo", "kim", "lu")
    toks = await tokens(cluster.gateway, *lost_names, *kept_names)
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        lost, kept = await two_tables(stub, toks, lost_names, kept_names)
        await asyncio.to_thread(lose_tables, cluster, lost.shard_id)
        for _ in range(3):  # asked about each time (beyond RECHECK_S apart), and it exists
            for name in kept_names:
                assert kept.table_id in await seated_at(stub, toks[name])
            await asyncio.sleep(1.1)
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks[name]))
                 for name in lost_names]  # all three at once: one check frees the three,
        try:  # and those refused while it is under way wait for its answer (no retry)
            firsts = await asyncio.gather(*(next_update(call) for call in calls))
            assert [f.WhichOneof("kind") for f in firsts] == ["waiting"] * 3, firsts
        finally:
            for call in calls:
                call.cancel()
    assert [r.get("table_id") for r in lost_lines(cluster)] == [lost.table_id]
    assert lost_metric(cluster) == 1.0


async def test_check_tables_names_the_tables_a_shard_does_not_have(cluster: Cluster) -> None:
    shard = cluster.shards["shard-1"]
    async with shard_stub(shard) as stub:
        await stub.CreateTable(table_pb2.CreateTableRequest(
            table_id="shard-1.here", player_ids=["x", "y", "z"],
            kind=table_pb2.MATCH_KIND_SINGLE, competitive=True), timeout=STEP_S)
        answer = await stub.CheckTables(table_pb2.CheckTablesRequest(
            table_ids=["shard-1.gone", "shard-1.here", "shard-0.other"]), timeout=STEP_S)
        assert answer.shard_id == "shard-1"
        assert list(answer.missing_table_ids) == ["shard-1.gone", "shard-0.other"]

        with pytest.raises(grpc.aio.AioRpcError) as err:  # bounded
            await stub.CheckTables(table_pb2.CheckTablesRequest(
                table_ids=[f"shard-1.t{i}" for i in range(MAX_CHECKED_TABLES + 1)]),
                timeout=STEP_S)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason(err.value) == "table/too-many"

    async with shard_stub(shard, role="gateway") as stub:  # matchmaking's alone
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CheckTables(table_pb2.CheckTablesRequest(), timeout=STEP_S)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED

    # Matchmaking's client asks in batches a shard takes, and keeps the order.
    unknown = [f"shard-1.nope{i}" for i in range(2 * MAX_CHECKED_TABLES + 500)]
    placement = ShardClient({"shard-1": shard.address},
                            credentials(shard, "matchmaking").connector("table"))
    try:
        assert await placement.missing("shard-1", ["shard-1.here", *unknown]) == unknown
        assert await placement.missing("shard-9", ["shard-9.x"]) is None  # not configured
    finally:
        await placement.close()
