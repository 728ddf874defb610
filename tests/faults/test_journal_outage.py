"""The journal store unavailable for a few seconds: a shard journaling to PostgreSQL through a
TCP proxy the test owns (the machine's server is never touched), a gateway, three apps.

Proves: while the proxy forwards nothing, an action is refused in-band `table/journal`
(within the store's timeout: never a hang, never an ack) and changes nothing; once the proxy
forwards again, play resumes by itself; and a SIGKILL of the shard after that loses nothing
acknowledged: the restarted shard's table has exactly the acknowledged draws, and not the
refused ones. Without the journal write before the answer (or with a write failure ignored),
the refused draw would be in the hand or an ack would come without durability.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    free_port,
    start,
    wait_healthy,
)
from tests.support.client import PlayClient, login
from tests.support.pg import PG_URL, pg_schema
from tests.support.tcp_proxy import TcpProxy, via_proxy

from .players import STEP_S, Player, acked

KEY = "fault-test-key-0123456789abcdef"
TABLE = "shard-0.j"
PLAYERS = ("ann", "bob", "cy")
TIMEOUT_S = 1.0  # the shard's journal write timeout
BOUND_S = 150.0  # the whole test
P1 = rules.Seat.P1


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    relay = TcpProxy("127.0.0.1", 5432)
    await relay.start()
    yield relay
    relay.resume()
    await relay.close()


@pytest.fixture
async def procs(tmp_path: Path, proxy: TcpProxy) -> AsyncIterator[dict[str, Proc]]:
    """(Started from threads: the proxy lives on this test's event loop, which must run.)"""
    started: dict[str, Proc] = {}
    with pg_schema("test_outage", via_proxy(PG_URL, proxy.port)) as (url, _):
        try:
            shard_port = free_port()
            started["shard"] = await asyncio.to_thread(start, "shard", "table", {
                "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(shard_port),
                "MACHIAVELOX_TABLE_JOURNAL": url,
                "MACHIAVELOX_TABLE_JOURNAL_TIMEOUT_S": str(TIMEOUT_S)}, tmp_path,
                True)  # allow_errors: it logs the failed writes as errors
            started["gateway"] = await asyncio.to_thread(start, "gateway", "gateway", {
                "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
                "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{shard_port}"}, tmp_path)
            yield started
        finally:
            proxy.resume()
            await asyncio.to_thread(check_all_clean, reversed(list(started.values())))


async def hand_size(gateway: Proc, player: str) -> int:
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        client = PlayClient(ch, await login(ch, player))
        client.open(TABLE)
        first = await client.next(STEP_S)
        await client.close()
    assert first.WhichOneof("kind") == "snapshot", first
    return len(first.snapshot.view.hand)


async def test_a_journal_outage_refuses_actions_and_loses_nothing(
        procs: dict[str, Proc], proxy: TcpProxy) -> None:
    await asyncio.wait_for(outage(procs, proxy), BOUND_S)  # a hang fails, showing where


async def outage(procs: dict[str, Proc], proxy: TcpProxy) -> None:
    async with aio_channel(procs["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=TABLE, player_ids=list(PLAYERS),
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=10)
    async with grpc.aio.insecure_channel(procs["gateway"].address) as ch:
        client = PlayClient(ch, await login(ch, "ann"))
        client.open(TABLE)
        assert (await client.next(STEP_S)).WhichOneof("kind") == "snapshot"
        ann = Player(client, TABLE, P1)
        try:
            await acked(ann, rules.Draw(P1))
            proxy.stall()  # the store stops answering
            refused = await ann.act(rules.Draw(P1))
            assert refused.WhichOneof("kind") == "refused"
            assert refused.refused.refusal.code == "table/journal"
            again = await ann.act(rules.Draw(P1))  # refused at once while it is down
            assert again.refused.refusal.code == "table/journal"
            proxy.resume()
            draws = 1
            for _ in range(100):  # play resumes by itself once the store answers
                answer = await ann.act(rules.Draw(P1))
                if answer.WhichOneof("kind") == "ack":
                    draws += 1
                    break
                assert answer.refused.refusal.code == "table/journal"
                await asyncio.sleep(0.2)
            assert draws == 2, "an action was acknowledged once the store answered again"
        finally:
            await ann.close()
    shard = procs["shard"]
    os.kill(shard.popen.pid, signal.SIGKILL)
    assert await asyncio.to_thread(shard.popen.wait, 10) == -signal.SIGKILL
    assert shard.respawn()
    await asyncio.to_thread(wait_healthy, shard)
    for _ in range(100):  # (the gateway reconnects to the shard with a backoff)
        try:
            assert await hand_size(procs["gateway"], "ann") == draws
            break
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.UNAVAILABLE
            await asyncio.sleep(0.2)
    else:
        raise AssertionError("the gateway never reached the restarted shard")
