"""Matchmaking over real processes: two table shards, a gateway (for Login and to join the
created table), and `machiavelox matchmaking`, all on loopback; each test gets a fresh cluster
and every process must stop cleanly on SIGTERM without an ERROR log."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.identity.tokens import HmacTokens
from machiavelox.local.processes import Proc, aio_channel, free_port, start
from tests.support.agora import STEP_S, next_update, reason, tokens
from tests.support.client import PlayClient, bearer

KEY = "test-key-0123456789abcdef"

pytestmark = pytest.mark.timeout(60)


@dataclass
class Cluster:
    shards: dict[str, Proc]
    gateway: Proc
    matchmaking: Proc


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    procs: list[Proc] = []
    try:
        ports = {sid: free_port() for sid in ("shard-0", "shard-1")}
        shards = {}
        for sid, port in ports.items():
            shards[sid] = start(sid, "table", {"MACHIAVELOX_SHARD_ID": sid,
                                               "MACHIAVELOX_TABLE_PORT": str(port),
                                               "MACHIAVELOX_SCORING_ADDRESS": "",
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
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
        procs.append(matchmaking)
        yield Cluster(shards, gateway, matchmaking)
    finally:
        for proc in reversed(procs):  # matchmaking first, then the gateway, then the shards
            proc.check_clean()




async def assignment(call: Any) -> tuple[str, matchmaking_pb2.Assignment]:
    """Read a stream to its Assignment; the first update must be a Waiting one."""
    first = await next_update(call)
    assert first.WhichOneof("kind") == "waiting", first
    while True:
        update = await next_update(call)
        assert update.ticket_id == first.ticket_id
        if update.WhichOneof("kind") == "assignment":
            return update.ticket_id, update.assignment


async def refusal(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await asyncio.wait_for(call.read(), STEP_S)
    return err.value


async def loads(cluster: Cluster) -> dict[str, table_pb2.GetLoadResponse]:
    out = {}
    for sid, proc in cluster.shards.items():
        async with aio_channel(proc, "matchmaking") as ch:
            out[sid] = await table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(
                table_pb2.GetLoadRequest(), timeout=5)
    return out


async def match_three(stub: matchmaking_pb2_grpc.MatchmakingServiceStub,
                      toks: dict[str, str]) -> list[matchmaking_pb2.Assignment]:
    calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(t))
             for t in toks.values()]
    try:
        results = await asyncio.gather(*(assignment(c) for c in calls))
    finally:
        for c in calls:
            c.cancel()
    return [a for _, a in results]


# ---------------------------------------------------------------------------------- tests
async def test_three_players_queue_and_are_seated_at_one_new_table(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "ann", "bob", "cy")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        calls = {name: stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(t))
                 for name, t in toks.items()}
        firsts = {name: await next_update(c) for name, c in calls.items()}
        for first in firsts.values():  # newcomers: waited 0 s, the initial window
            assert first.WhichOneof("kind") == "waiting"
            assert first.waiting.waited_s == 0
            assert first.waiting.window == pytest.approx(5.0, abs=0.1)
        assert len({f.ticket_id for f in firsts.values()}) == 3
        got = {}
        for name, c in calls.items():
            update = await next_update(c)
            assert update.WhichOneof("kind") == "assignment", update
            assert update.ticket_id == firsts[name].ticket_id
            got[name] = update.assignment
        tables = {a.table_id for a in got.values()}
        assert len(tables) == 1
        a = got["ann"]
        assert a.shard_id in cluster.shards and a.table_id.startswith(a.shard_id + ".")
        assert sorted(a.player_ids) == ["ann", "bob", "cy"]
        assert all(list(g.player_ids) == list(a.player_ids) for g in got.values())
        for c in calls.values():
            assert await asyncio.wait_for(c.read(), STEP_S) is grpc.aio.EOF
            assert await c.code() == grpc.StatusCode.OK

        load = await loads(cluster)
        assert (load[a.shard_id].tables, load[a.shard_id].players) == (1, 3)
        assert sum(v.tables for v in load.values()) == 1

        # Seated at an unfinished table: cannot queue again (no scoring here to free them).
        again = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["bob"]))
        err = await refusal(again)
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert reason(err) == "ticket/seated" and a.table_id in (err.details() or "")

    # The id routes through the gateway to the right shard: the player gets the table.
    async with aio_channel(cluster.gateway, "gateway") as gw:
        client = PlayClient(gw, toks["cy"])
        client.open(a.table_id)
        snap = await client.next(STEP_S)
        assert snap.WhichOneof("kind") == "snapshot"
        assert len(snap.snapshot.view.seats) == 3
        await client.close()


async def test_the_least_loaded_non_draining_shard_gets_the_table(cluster: Cluster) -> None:
    async with aio_channel(cluster.shards["shard-0"], "matchmaking") as ch:
        shard0 = table_pb2_grpc.TableAuthorityServiceStub(ch)
        for i in range(3):
            await shard0.CreateTable(table_pb2.CreateTableRequest(
                table_id=f"shard-0.busy{i}", player_ids=[f"x{i}", f"y{i}", f"z{i}"],
                kind=table_pb2.MATCH_KIND_SINGLE, competitive=True), timeout=5)
    toks = await tokens(cluster.gateway, "p1", "p2", "p3", "q1", "q2", "q3")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        first = await match_three(stub, {k: v for k, v in toks.items() if k.startswith("p")})
        assert {a.shard_id for a in first} == {"shard-1"}
        assert first[0].table_id.startswith("shard-1.")
        load = await loads(cluster)
        assert (load["shard-0"].tables, load["shard-1"].tables) == (3, 1)

        # A draining shard gets no new table, even the least loaded one.
        async with aio_channel(cluster.shards["shard-1"], "controller") as sch:
            await table_pb2_grpc.TableAuthorityServiceStub(sch).SetDraining(
                table_pb2.SetDrainingRequest(draining=True), timeout=5)
        second = await match_three(stub, {k: v for k, v in toks.items() if k.startswith("q")})
        assert {a.shard_id for a in second} == {"shard-0"}
        assert second[0].table_id.startswith("shard-0.")
        load = await loads(cluster)
        assert (load["shard-0"].tables, load["shard-1"].tables) == (4, 1)


async def test_a_second_ticket_is_refused_and_a_dropped_stream_frees_the_player(
        cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "dup")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        first = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["dup"]))
        assert (await next_update(first)).WhichOneof("kind") == "waiting"
        second = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["dup"]))
        err = await refusal(second)
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert reason(err) == "ticket/duplicate"

        first.cancel()  # the app goes away: its ticket leaves the queue
        loop = asyncio.get_running_loop()
        deadline = loop.time() + STEP_S
        while True:
            third = stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                 metadata=bearer(toks["dup"]))
            try:
                update = await next_update(third)
                break
            except grpc.aio.AioRpcError as exc:
                assert reason(exc) == "ticket/duplicate"
                assert loop.time() < deadline, "the cancelled stream's ticket stayed queued"
                await asyncio.sleep(0.05)
        assert update.WhichOneof("kind") == "waiting"
        third.cancel()


async def test_waiting_updates_come_every_second_with_a_widening_window(
        cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "alone")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["alone"]))
        loop = asyncio.get_running_loop()
        started = loop.time()
        updates = [await next_update(call) for _ in range(3)]
        elapsed = loop.time() - started
        call.cancel()
    assert [u.WhichOneof("kind") for u in updates] == ["waiting"] * 3
    assert [u.waiting.waited_s for u in updates] == [0, 1, 2]
    windows = [u.waiting.window for u in updates]
    assert windows[0] == pytest.approx(5.0, abs=0.05)
    assert windows[1] == pytest.approx(6.0, abs=0.3) and windows[2] == pytest.approx(7.0, abs=0.3)
    assert 1.8 < elapsed < 3.5


async def test_cancel_ticket_removes_a_waiting_ticket(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "eve", "mallory")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["eve"]))
        ticket_id = (await next_update(call)).ticket_id

        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(ticket_id=ticket_id),
                                    metadata=bearer(toks["mallory"]), timeout=5)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert reason(err.value) == "ticket/not-yours"

        reply = await stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(ticket_id=ticket_id),
                                        metadata=bearer(toks["eve"]), timeout=5)
        assert reply.cancelled
        # The stream ends without an assignment.
        while (response := await asyncio.wait_for(call.read(), STEP_S)) is not grpc.aio.EOF:
            assert response.update.WhichOneof("kind") == "waiting"
        assert await call.code() == grpc.StatusCode.OK
        again = await stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(ticket_id=ticket_id),
                                        metadata=bearer(toks["eve"]), timeout=5)
        assert not again.cancelled
        # The player is free to queue again at once.
        fresh = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["eve"]))
        update = await next_update(fresh)
        assert update.WhichOneof("kind") == "waiting" and update.ticket_id != ticket_id
        fresh.cancel()


async def test_calls_without_a_valid_token_are_unauthenticated(cluster: Cluster) -> None:
    forged, _ = HmacTokens(b"another-key-0123456789").issue("ann")
    cases = [((), "auth/missing"), (bearer("nonsense"), "auth/bad-token"),
             (bearer(forged), "auth/bad-token"), ((("authorization", "Basic abc"),),
                                                   "auth/missing")]
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        for metadata, why in cases:
            err = await refusal(stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                             metadata=metadata))
            assert (err.code(), reason(err)) == (grpc.StatusCode.UNAUTHENTICATED, why)
        err = await refusal(stub.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code="ABCDEF"), metadata=()))
        assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        for unary in (stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(ticket_id="x"),
                                        metadata=bearer(forged), timeout=5),
                      stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
                          kind=table_pb2.MATCH_KIND_LONG), timeout=5)):
            with pytest.raises(grpc.aio.AioRpcError) as exc:
                await unary
            assert exc.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_friendly_long_table_by_invite_code(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, "host", "guest1", "guest2", "late")
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(),
                                           metadata=bearer(toks["host"]), timeout=5)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason(bad.value) == "table/bad-kind"

        created = await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
            kind=table_pb2.MATCH_KIND_LONG), metadata=bearer(toks["host"]), timeout=5)
        code = created.invite_code
        assert len(code) == 10 and set(code) <= set("ABCDEFGHJKMNPQRSTUVWXYZ23456789")

        unknown = await refusal(stub.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=("ZZZZZ" if code[0] != "Z"
                                                                  else "YYYYY") + code[5:]),
            metadata=bearer(toks["late"])))
        assert unknown.code() == grpc.StatusCode.NOT_FOUND
        assert reason(unknown) == "friendly/unknown-code"

        calls = {}
        for name in ("host", "guest1"):
            calls[name] = stub.JoinFriendlyTable(
                matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code),
                metadata=bearer(toks[name]))
            assert (await next_update(calls[name])).WhichOneof("kind") == "waiting"
        await asyncio.sleep(0.3)  # several ticks: two players are not a table
        assert sum(v.tables for v in (await loads(cluster)).values()) == 0
        calls["guest2"] = stub.JoinFriendlyTable(  # codes are not case-sensitive
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code.lower()),
            metadata=bearer(toks["guest2"]))
        got = {}
        for name, call in calls.items():
            update = await next_update(call)
            while update.WhichOneof("kind") == "waiting":
                update = await next_update(call)
            got[name] = update.assignment
        assert len({a.table_id for a in got.values()}) == 1
        a = got["host"]
        assert list(a.player_ids) == ["host", "guest1", "guest2"]  # seats in join order
        assert a.table_id.startswith(a.shard_id + ".")
        load = await loads(cluster)
        assert load[a.shard_id].tables == 1 and load[a.shard_id].players == 3

        fourth = await refusal(stub.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code),
            metadata=bearer(toks["late"])))
        assert fourth.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert reason(fourth) == "friendly/full"
        for call in calls.values():
            call.cancel()
