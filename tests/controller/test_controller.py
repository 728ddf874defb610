"""Reconcile rounds against real shard processes (gRPC) and the fake API server (the real
`kubernetes` client): a scale-down drains first, waits while a table is in play, and only then
reduces the replicas; a scale-up asks once for what is missing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import grpc
import pytest

from machiavelox._gen.v1 import common_pb2, table_pb2, table_pb2_grpc
from machiavelox.controller.decide import DRAIN, HOLD, SCALE_DOWN, SCALE_UP, WAIT
from machiavelox.controller.kube import ShardScale, api_client
from machiavelox.controller.reconcile import Controller
from machiavelox.controller.settings import ControllerSettings
from machiavelox.controller.shards import ShardClients
from machiavelox.local.pki import session_pki
from machiavelox.local.processes import Proc, aio_channel
from tests.controller.conftest import CAPACITY
from tests.controller.fake_kube import FakeKube


def controller_for(kube: FakeKube, shards: list[Proc], buffer: str = "2") -> Controller:
    settings = ControllerSettings.from_env({
        "MACHIAVELOX_CONTROLLER_NAMESPACE": "mx",
        "MACHIAVELOX_CONTROLLER_STATEFULSET": "shard",
        "MACHIAVELOX_CONTROLLER_SHARDS": ",".join(f"shard-{i}={p.address}"
                                                  for i, p in enumerate(shards)),
        "MACHIAVELOX_CONTROLLER_MIN_REPLICAS": "1", "MACHIAVELOX_CONTROLLER_MAX_REPLICAS": "3",
        "MACHIAVELOX_CONTROLLER_BUFFER": buffer,
        "MACHIAVELOX_CONTROLLER_SHARD_CAPACITY": str(CAPACITY),
        "MACHIAVELOX_CONTROLLER_SCALE_DOWN_DELAY_S": "0",
        "MACHIAVELOX_CONTROLLER_KUBE_API": kube.url})
    api = api_client(settings.kube_api, "test")
    clients = ShardClients(settings.shard_address, settings.shard_id, 2.0,
                           session_pki().tls("controller").connector("table"))
    return Controller(settings.policy, ShardScale(api, "mx", "shard"), clients, lambda: True,
                      time.monotonic, 1.0)


async def create_table(shard: Proc, table_id: str, players: list[str]) -> None:
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table_id, player_ids=players,
                                         kind=table_pb2.MATCH_KIND_SINGLE, competitive=True),
            timeout=5)


async def get_load(shard: Proc) -> table_pb2.GetLoadResponse:
    async with aio_channel(shard, "controller") as ch:
        load: table_pb2.GetLoadResponse = await table_pb2_grpc.TableAuthorityServiceStub(
            ch).GetLoad(table_pb2.GetLoadRequest(), timeout=5)
        return load


async def end_tables(shard: Proc, tables: dict[str, list[str]]) -> None:
    """Two players of each table abandon through a gateway's stream (M11), which ends a single
    match; returns when the shard has no table in play left."""
    async def items() -> AsyncIterator[table_pb2.ConnectRequest]:
        for table_id, players in tables.items():
            for player in players[:2]:
                yield table_pb2.ConnectRequest(items=[table_pb2.GatewayItem(
                    table_id=table_id, player_id=player,
                    action=table_pb2.ActionRequestItem(
                        client_action_id=f"quit-{table_id}-{player}",
                        action=common_pb2.Action(abandon=common_pb2.Empty())))])
        while True:
            await asyncio.sleep(3600)

    async with aio_channel(shard, "gateway") as ch:  # as a gateway does
        call = table_pb2_grpc.TableAuthorityServiceStub(ch).Connect(items())
        deadline = time.monotonic() + 20
        while (await get_load(shard)).tables and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        call.cancel()


async def test_scale_down_drains_then_waits_for_the_table_then_scales(
        kube: FakeKube, shards: list[Proc]) -> None:
    players = ["ann", "bob", "cy"]
    await create_table(shards[1], "shard-1.t1", players)
    controller = controller_for(kube, shards)
    try:
        first = await controller.reconcile_once()
        assert first is not None
        assert first.decision.kind == DRAIN and first.acted == ("drain 1",)
        assert first.observation.shards[1] is not None
        assert first.observation.shards[1].tables == 1
        assert (await get_load(shards[1])).draining
        with pytest.raises(grpc.aio.AioRpcError) as refused:  # matchmaking can't place here
            await create_table(shards[1], "shard-1.t2", ["dan", "eve", "fay"])
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        for _ in range(3):  # the table is in play: the controller waits, replicas unchanged
            waiting = await controller.reconcile_once()
            assert waiting is not None and waiting.decision.kind == WAIT
            assert waiting.acted == () and kube.replicas == 2
        assert kube.writes("statefulsets/scale") == []

        await end_tables(shards[1], {"shard-1.t1": players})
        assert (await get_load(shards[1])).tables == 0
        down = await controller.reconcile_once()
        assert down is not None and down.decision.kind == SCALE_DOWN
        assert down.acted == ("replicas 2->1",) and kube.replicas == 1
        [write] = kube.writes("statefulsets/scale")
        assert write.body is not None and write.body["spec"]["replicas"] == 1
        settled = await controller.reconcile_once()
        assert settled is not None and settled.decision.kind == HOLD and kube.replicas == 1
    finally:
        await controller.shards.close()


async def test_scale_up_asks_once_and_counts_starting_pods(kube: FakeKube,
                                                           shards: list[Proc]) -> None:
    kube.set_replicas(1)
    controller = controller_for(kube, shards)
    try:
        tables = {f"shard-0.t{i}": [f"p{i}a", f"p{i}b", f"p{i}c"] for i in range(3)}
        for table_id, players in tables.items():
            await create_table(shards[0], table_id, players)
        up = await controller.reconcile_once()  # 1 free table, buffer 2
        assert up is not None and up.decision.kind == SCALE_UP
        assert up.acted == ("replicas 1->2",) and kube.replicas == 2
        shards[1].stop()  # shard-1 is a pod still starting: it does not answer yet
        for _ in range(2):
            pending = await controller.reconcile_once()
            assert pending is not None and pending.observation.shards[1] is None
            assert pending.decision.kind == HOLD and kube.replicas == 2
        assert len(kube.writes("statefulsets/scale")) == 1
        await end_tables(shards[0], tables)  # a shard must not stop with tables in play
    finally:
        await controller.shards.close()


async def test_a_stale_scale_is_not_written(kube: FakeKube, shards: list[Proc]) -> None:
    kube.set_replicas(1)
    controller = controller_for(kube, shards, buffer="20")
    try:
        kube.inject[("PUT", "statefulsets/scale")] = [409]
        conflicted = await controller.reconcile_once()
        assert conflicted is not None and conflicted.decision.kind == SCALE_UP
        assert conflicted.acted == () and kube.replicas == 1
        kube.inject[("GET", "statefulsets/scale")] = [500]
        assert await controller.reconcile_once() is None  # API server down: nothing done
        again = await controller.reconcile_once()
        assert again is not None and again.acted == ("replicas 1->3",) and kube.replicas == 3
    finally:
        await controller.shards.close()


async def test_a_follower_does_nothing(kube: FakeKube, shards: list[Proc]) -> None:
    controller = controller_for(kube, shards)
    controller.leading = lambda: False
    try:
        assert await controller.reconcile_once() is None
        assert kube.requests == []
        assert not (await get_load(shards[1])).draining
    finally:
        await controller.shards.close()
