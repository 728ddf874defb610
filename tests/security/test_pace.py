"""Pace is a rule (docs/protocol.md, docs/security.md): arrival order decides every race, and
nobody can buy arrivals by flooding. Real gateway and shard processes on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import (
    common_pb2,
    gateway_pb2,
    gateway_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.pki import session_pki
from tests.security.gateway_shard import (
    app,
    cluster,
    conclude_request,
    create_table,
    draw_index,
    refusal_code,
    seated,
)
from tests.support.client import bearer, login

FLOOD = 400


def flood_heartbeats(address: str, token: str) -> tuple[grpc.StatusCode, str]:
    """Join, then 2,000 heartbeats at once; the status the stream ends with."""
    requests = [gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id="shard-0.t1")),
                *(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat())
                  for _ in range(2000))]
    with grpc.insecure_channel(address) as channel:
        call = gateway_pb2_grpc.GatewayServiceStub(channel).Play(
            iter(requests), metadata=bearer(token), timeout=20)
        try:
            for _ in call:
                pass
        except grpc.RpcError as err:
            return err.code(), err.details() or ""
    return grpc.StatusCode.OK, ""


async def test_a_flooding_client_is_held_to_its_rate(tmp_path: Path) -> None:
    """The finding: one script had 1,834 actions/s accepted, arrival indexes consecutive, and
    each opponent received 4,000 messages. Proves: with the default pace (10 a second, 20 at
    once) a flood of 400 actions gets at most burst + rate x elapsed of them to the shard (the
    arrival indexes show how many reached it), the rest are refused in-band `rate/limited`
    with their own ids, and the opponent's stream carries nothing for the refused ones."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            bob = await seated(ch, "bob", "shard-0.t1")
            started = time.monotonic()
            for i in range(FLOOD):
                ann.send_raw(conclude_request(f"f{i}"))
            answers: dict[str, str] = {}
            arrivals = []
            while len(answers) < FLOOD:
                r = await ann.next(10)
                kind = r.WhichOneof("kind")
                if kind == "refused" and r.refused.client_action_id:
                    answers[r.refused.client_action_id] = refusal_code(r)
            elapsed = time.monotonic() - started
            limited = sum(1 for code in answers.values() if code == "rate/limited")
            reached = FLOOD - limited
            assert set(answers.values()) <= {"rate/limited", "calata/none"}
            assert 20 <= reached <= 20 + 10 * elapsed + 1, (reached, elapsed)
            # the next arrival index says how many of the flood the table saw
            await asyncio.sleep(0.2)
            bob.act(rules.Draw(rules.Seat.P2))
            ack = await bob.until(lambda r: r.WhichOneof("kind") == "ack")
            arrivals.append(ack.ack.arrival_index)
            assert arrivals == [reached + 1]
            metric = c.metric(c.gateway, "machiavelox_gateway_rate_limited_total",
                              'what="action"')
            assert metric == limited
            await ann.close()
            await bob.close()


async def test_resync_is_limited_too(tmp_path: Path) -> None:
    """Proves: `Resync` (a fresh snapshot each) beyond its own bucket (3 at once) is refused
    in-band `rate/limited`; the snapshots it did get are the player's."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            for _ in range(10):
                ann.send_raw(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
            kinds = [(await ann.next()).WhichOneof("kind") for _ in range(10)]
            assert kinds.count("snapshot") == 3 and kinds.count("refused") == 7, kinds
            assert {refusal_code(r) for r in ann.received if r.WhichOneof("kind") ==
                    "refused"} == {"rate/limited"}
            await ann.close()


async def test_a_message_flood_ends_the_stream(tmp_path: Path) -> None:
    """Heartbeats cost no arrival but still cost the gateway: a stream past its message budget
    (100 a second, 500 at once) is ended with RESOURCE_EXHAUSTED `rate/flood`; the player can
    come back, and the table is untouched."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            token = await login(ch, "ann")
            # (the blocking client: grpc-aio's reports INTERNAL instead of the server's status
            # when its own writes race the end of the call, grpc/grpc#36066)
            code, details = await asyncio.to_thread(flood_heartbeats, c.gateway.address, token)
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "rate/flood" in details
            again = await seated(ch, "ann", "shard-0.t1")
            assert await draw_index(again, rules.Seat.P1) == 1
            await again.close()


async def test_the_shard_caps_each_player_behind_the_gateway(tmp_path: Path) -> None:
    """The second line: a gateway (its certificate) that forwards a flood unchecked. Proves:
    the shard refuses a player's actions past its own cap (40 at once) with `rate/limited`
    before the sequencer, so they take no arrival index; another player at the table is not
    limited by it."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        frames: asyncio.Queue[table_pb2.ConnectRequest | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[table_pb2.ConnectRequest]:
            while (frame := await frames.get()) is not None:
                yield frame

        def item(player: str, **fields: object) -> table_pb2.GatewayItem:
            return table_pb2.GatewayItem(table_id="shard-0.t1", player_id=player,
                                         **fields)  # type: ignore[arg-type]

        conclude = codec.action_to_pb(rules.Conclude(rules.Seat.P1))
        async with session_pki().tls("gateway").channel(c.shard.address, "table") as channel:
            call = table_pb2_grpc.TableAuthorityServiceStub(channel).Connect(requests())
            frames.put_nowait(table_pb2.ConnectRequest(items=[
                item(p, subscribe=table_pb2.Subscribe()) for p in ("ann", "bob")]))
            frames.put_nowait(table_pb2.ConnectRequest(items=[
                item("ann", action=table_pb2.ActionRequestItem(
                    client_action_id=f"f{i}", action=conclude)) for i in range(100)]))
            frames.put_nowait(table_pb2.ConnectRequest(items=[item("bob", action=(
                table_pb2.ActionRequestItem(client_action_id="b", action=common_pb2.Action(
                    draw=common_pb2.Empty()))))]))
            outcomes: dict[str, str] = {}
            bob_arrival = 0
            async for frame in call:
                for got in frame.items:
                    kind = got.WhichOneof("kind")
                    if kind == "refused" and got.refused.client_action_id:
                        outcomes[got.refused.client_action_id] = got.refused.refusal.code
                    elif kind == "batch" and got.batch.HasField("refused"):
                        outcomes[got.batch.refused.client_action_id] = (
                            got.batch.refused.refusal.code)
                    elif kind == "batch" and got.batch.ack.client_action_id == "b":
                        bob_arrival = got.batch.ack.arrival_index
                if len(outcomes) == 100 and bob_arrival:
                    break
            frames.put_nowait(None)
            call.cancel()
        codes = list(outcomes.values())
        assert codes.count("calata/none") == 40 and codes.count("rate/limited") == 60, codes
        assert bob_arrival == 41  # the 60 refused took no arrival index
