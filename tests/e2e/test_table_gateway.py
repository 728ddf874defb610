"""End to end over real gRPC between real processes: a shard and a gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel
from tests.support.client import PlayClient, login


@pytest.fixture
async def table(cluster: dict[str, Proc]) -> AsyncIterator[str]:
    async with aio_channel(cluster["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id="shard-0.t1", player_ids=["ann", "bob", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE, competitive=True),
            timeout=5)
    yield "shard-0.t1"


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
async def test_join_draw_and_see_the_event(cluster: dict[str, Proc], table: str,
                                           batched: bool) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
        clients = {}
        for name in ("ann", "bob"):
            c = PlayClient(ch, await login(ch, name))
            c.open(table, batched=batched)
            snap = await c.next()
            assert snap.WhichOneof("kind") == "snapshot"
            assert snap.snapshot.seq == 0 and len(snap.snapshot.view.seats) == 3
            clients[name] = c
        action_id = clients["ann"].act(rules.Draw(rules.Seat.P1))
        ack = await clients["ann"].until(lambda r: r.WhichOneof("kind") == "ack")
        assert ack.ack.client_action_id == action_id and ack.ack.arrival_index == 1
        mine = await clients["ann"].until(lambda r: r.WhichOneof("kind") == "event")
        theirs = await clients["bob"].until(lambda r: r.WhichOneof("kind") == "event")
        assert mine.event.kind == theirs.event.kind == "drew"
        assert len(mine.event.cards) == 1 and len(theirs.event.cards) == 0  # P5
        assert mine.event.seq == theirs.event.seq == 1
        # everyone sees which arrival made the event: the fastest-wins order, observable
        assert mine.event.arrival_index == theirs.event.arrival_index == 1
        if batched:  # the ack and the event it produced came in ONE message
            [step] = clients["ann"].batches
            assert step.batch.ack.client_action_id == action_id
            assert [ev.kind for ev in step.batch.events] == ["drew"]
            assert [b.batch.HasField("ack") for b in clients["bob"].batches] == [False]
        else:
            assert clients["ann"].batches == clients["bob"].batches == []
        for c in clients.values():
            await c.close()


async def test_a_rule_refusal_comes_back_with_its_code(cluster: dict[str, Proc],
                                                       table: str) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
        c = PlayClient(ch, await login(ch, "cy"))
        c.open(table)
        await c.next()
        action_id = c.act(rules.Conclude(rules.Seat.P1))
        refused = await c.until(lambda r: r.WhichOneof("kind") == "refused")
        assert refused.refused.client_action_id == action_id
        assert refused.refused.refusal.code == "calata/none"
        await c.close()


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
async def test_resume_after_a_cut_gets_exactly_the_missed_events(cluster: dict[str, Proc],
                                                                 table: str,
                                                                 batched: bool) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
        ann = PlayClient(ch, await login(ch, "ann"))
        ann.open(table)
        await ann.next()
        bob_token = await login(ch, "bob")
        bob = PlayClient(ch, bob_token)
        bob.open(table, batched=batched)
        await bob.next()
        ann.act(rules.Draw(rules.Seat.P1))
        first = await bob.until(lambda r: r.WhichOneof("kind") == "event")
        bob.cut()
        for _ in range(3):
            ann.act(rules.Draw(rules.Seat.P1))
        for _ in range(3):
            await ann.until(lambda r: r.WhichOneof("kind") == "ack")
        bob2 = PlayClient(ch, bob_token)
        bob2.open(table, last_seq=first.event.seq, batched=batched)
        seqs: list[int] = []
        arrivals: list[int] = []
        while len(seqs) < 3:
            r = await bob2.next()
            assert r.WhichOneof("kind") == "event", r
            seqs.append(r.event.seq)
            arrivals.append(r.event.arrival_index)
        assert seqs == [2, 3, 4]
        assert arrivals == [2, 3, 4]  # a resume carries them too (from the table's memory)
        await ann.close()
        await bob2.close()


async def test_refusals_over_the_wire(cluster: dict[str, Proc], table: str) -> None:
    async with grpc.aio.insecure_channel(cluster["gateway"].address) as ch:
        nobody = PlayClient(ch, None)
        nobody.open(table)
        with pytest.raises(grpc.aio.AioRpcError):
            await nobody.next()
        assert await nobody.call.code() == grpc.StatusCode.UNAUTHENTICATED
        bad = PlayClient(ch, "v1.ann.9999999999.forged")
        bad.open(table)
        with pytest.raises(grpc.aio.AioRpcError):
            await bad.next()
        assert await bad.call.code() == grpc.StatusCode.UNAUTHENTICATED
        stranger = PlayClient(ch, await login(ch, "zed"))
        stranger.open(table)
        with pytest.raises(grpc.aio.AioRpcError):
            await stranger.next()
        assert await stranger.call.code() == grpc.StatusCode.PERMISSION_DENIED
        ann = PlayClient(ch, await login(ch, "ann"))
        ann.open(table)
        await ann.next()
        from machiavelox._gen.v1 import common_pb2, gateway_pb2
        ann.send_raw(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id="x", action=common_pb2.Action(
                attach=common_pb2.CardToMeld(card=common_pb2.Card(index=500), meld=1)))))
        with pytest.raises(grpc.aio.AioRpcError):
            await ann.until(lambda r: False)
        assert await ann.call.code() == grpc.StatusCode.INVALID_ARGUMENT
        # the table is undisturbed: another player still plays
        bob = PlayClient(ch, await login(ch, "bob"))
        bob.open(table)
        await bob.next()
        bob.act(rules.Draw(rules.Seat.P2))
        ack = await bob.until(lambda r: r.WhichOneof("kind") == "ack")
        assert ack.ack.arrival_index >= 1
        await bob.close()
