"""A shard told to stop (SIGTERM, as Kubernetes does) never kills a table in play: it places no
new table and keeps serving the ones in play until they end, or until MACHIAVELOX_TABLE_DRAIN_S
has passed. Real `machiavelox table` processes, spoken to as a gateway does."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, free_port, start
from tests.support.scrape import metrics
from tests.support.shard_items import action_item

PLAYERS = ["ann", "bob", "cy"]


async def create(stub: table_pb2_grpc.TableAuthorityServiceStub, table_id: str) -> None:
    await stub.CreateTable(table_pb2.CreateTableRequest(
        table_id=table_id, player_ids=PLAYERS, kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)


def abandon(table_id: str, player: str, seat: rules.Seat) -> table_pb2.ConnectRequest:
    return table_pb2.ConnectRequest(items=[
        action_item(table_id, player, rules.Abandon(seat), f"bye-{player}")])


def shard(tmp_path: Path, drain_s: float) -> Proc:
    return start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                    "MACHIAVELOX_METRICS_PORT": str(free_port()),
                                    "MACHIAVELOX_TABLE_DRAIN_S": str(drain_s)}, tmp_path)


def scrape(proc: Proc, name: str) -> float:
    [value] = [line.rsplit(" ", 1)[1] for line in metrics(proc).splitlines()
               if line.startswith(name + "{")]
    return float(value)


def messages(proc: Proc) -> list[str]:
    return [str(r.get("msg", "")) for r in proc.logs()]


async def test_sigterm_keeps_serving_the_tables_in_play_until_they_end(tmp_path: Path) -> None:
    proc = shard(tmp_path, drain_s=120)
    async with aio_channel(proc, "matchmaking") as channel, \
            aio_channel(proc, "gateway") as gateway:
        stub = table_pb2_grpc.TableAuthorityServiceStub(channel)
        await create(stub, "shard-0.t1")
        frames: asyncio.Queue[table_pb2.ConnectRequest] = asyncio.Queue()

        async def requests() -> AsyncIterator[table_pb2.ConnectRequest]:
            while True:
                yield await frames.get()

        stream = table_pb2_grpc.TableAuthorityServiceStub(gateway).Connect(requests())
        proc.popen.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.5)
        load = await stub.GetLoad(table_pb2.GetLoadRequest(), timeout=5)
        assert proc.popen.poll() is None  # still up: a table is in play
        assert (load.tables, load.draining) == (1, True)
        assert scrape(proc, "machiavelox_shard_draining") == 1.0
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await create(stub, "shard-0.t2")  # no new table on a shard that is stopping
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        # the players still play: two abandon (ABBANDONA, M11), the survivor wins, it ends
        await frames.put(abandon("shard-0.t1", "ann", rules.Seat.P1))
        await frames.put(abandon("shard-0.t1", "bob", rules.Seat.P2))
        code = await asyncio.to_thread(proc.popen.wait, 30)
        stream.cancel()
    assert code == 0
    said = messages(proc)
    assert any("shutting down with 1 tables in play" in m for m in said), said
    assert any("every table in play has ended" in m for m in said), said
    proc.check_clean()


async def test_the_drain_is_bounded_by_its_setting(tmp_path: Path) -> None:
    proc = shard(tmp_path, drain_s=1)
    async with aio_channel(proc, "matchmaking") as channel:
        await create(table_pb2_grpc.TableAuthorityServiceStub(channel), "shard-0.t1")
    proc.popen.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.popen.wait, 30) == 0
    assert any("stopping with 1 tables still in play" in m for m in messages(proc))
    proc.check_clean()  # a warning, not an error: the drain's limit is the operator's choice
