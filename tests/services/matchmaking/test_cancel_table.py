"""CancelTable and the placement id on a real shard process (journal: SQLite in its data dir):
what matchmaking relies on to place without twin or orphan tables (issue 13 item 3).

Proves: a CreateTable with a placement id the shard has a table for returns that table (even
under another table id); a cancelled table is gone (GetLoad, CheckTables) and a CreateTable of
its id is refused `table/cancelled`, as is one for an id cancelled before it ever came (a
stalled request arriving after its CancelTable); a table a player has a session on is refused
`table/in-play` and stays; only matchmaking may cancel; and a cancellation is journaled: after
a SIGKILL and a restart the cancelled table does not come back while the other one does.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, start, wait_healthy
from tests.support.agora import STEP_S, reason
from tests.support.shard_items import subscribe_item

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def shard(tmp_path: Path) -> Iterator[Proc]:
    proc = start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                    "MACHIAVELOX_SCORING_ADDRESS": "",
                                    "MACHIAVELOX_PRESENCE_ADDRESS": "",
                                    "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
    try:
        yield proc
    finally:
        check_all_clean([proc])


def create(table_id: str, placement_id: str = "", players: tuple[str, ...] = ("a", "b", "c")
           ) -> table_pb2.CreateTableRequest:
    return table_pb2.CreateTableRequest(table_id=table_id, player_ids=list(players),
                                        kind=table_pb2.MATCH_KIND_SINGLE, competitive=True,
                                        placement_id=placement_id)


async def refused(call: object) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call  # type: ignore[misc]
    return err.value.code(), reason(err.value)


async def missing(stub: table_pb2_grpc.TableAuthorityServiceStub, *ids: str) -> list[str]:
    answer = await stub.CheckTables(table_pb2.CheckTablesRequest(table_ids=list(ids)),
                                    timeout=STEP_S)
    return list(answer.missing_table_ids)


async def test_a_placement_is_created_once_and_a_cancelled_one_never(shard: Proc) -> None:
    async with aio_channel(shard, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        first = await stub.CreateTable(create("shard-0.p1", "p1"), timeout=STEP_S)
        again = await stub.CreateTable(create("shard-0.other", "p1"), timeout=STEP_S)
        assert first.table_id == again.table_id == "shard-0.p1"  # the same table
        assert await missing(stub, "shard-0.p1", "shard-0.other") == ["shard-0.other"]

        reply = await stub.CancelTable(table_pb2.CancelTableRequest(
            table_id="shard-0.p1", placement_id="p1"), timeout=STEP_S)
        assert (reply.existed, reply.shard_id) == (True, "shard-0")
        assert await missing(stub, "shard-0.p1") == ["shard-0.p1"]
        load = await stub.GetLoad(table_pb2.GetLoadRequest(), timeout=STEP_S)
        assert (load.tables, load.players) == (0, 0)
        assert await refused(stub.CreateTable(create("shard-0.p1", "p1"), timeout=STEP_S)) \
            == (grpc.StatusCode.FAILED_PRECONDITION, "table/cancelled")
        again_cancelled = await stub.CancelTable(table_pb2.CancelTableRequest(
            table_id="shard-0.p1", placement_id="p1"), timeout=STEP_S)  # idempotent
        assert not again_cancelled.existed

        # Cancelled before its CreateTable ever came: the late one is refused.
        early = await stub.CancelTable(table_pb2.CancelTableRequest(
            table_id="shard-0.p2", placement_id="p2"), timeout=STEP_S)
        assert not early.existed
        assert await refused(stub.CreateTable(create("shard-0.p2", "p2"), timeout=STEP_S)) \
            == (grpc.StatusCode.FAILED_PRECONDITION, "table/cancelled")
        assert await missing(stub, "shard-0.p2") == ["shard-0.p2"]

    async with aio_channel(shard, "gateway") as ch:  # matchmaking's alone
        code, _ = await refused(table_pb2_grpc.TableAuthorityServiceStub(ch).CancelTable(
            table_pb2.CancelTableRequest(table_id="shard-0.p3"), timeout=STEP_S))
        assert code == grpc.StatusCode.PERMISSION_DENIED


async def session(shard: Proc, table_id: str, player: str) -> AsyncIterator[None]:
    """A gateway's stream with `player`'s session open at `table_id` (its snapshot read)."""
    async with aio_channel(shard, "gateway") as ch:
        done = asyncio.Event()

        async def requests() -> AsyncIterator[table_pb2.ConnectRequest]:
            yield table_pb2.ConnectRequest(items=[subscribe_item(table_id, player)])
            await done.wait()

        call = table_pb2_grpc.TableAuthorityServiceStub(ch).Connect(requests())
        response = await asyncio.wait_for(call.read(), STEP_S)
        assert response.items[0].HasField("snapshot"), response
        try:
            yield
        finally:
            done.set()
            call.cancel()


async def test_a_table_someone_opened_is_not_cancelled(shard: Proc) -> None:
    async with aio_channel(shard, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        await stub.CreateTable(create("shard-0.open", "open"), timeout=STEP_S)
        async for _ in session(shard, "shard-0.open", "a"):
            assert await refused(stub.CancelTable(table_pb2.CancelTableRequest(
                table_id="shard-0.open", placement_id="open"), timeout=STEP_S)) \
                == (grpc.StatusCode.FAILED_PRECONDITION, "table/in-play")
        assert await missing(stub, "shard-0.open") == []  # it stays
        again = await stub.CreateTable(create("shard-0.open", "open"), timeout=STEP_S)
        assert again.table_id == "shard-0.open"  # and is still the placement's


async def test_a_cancellation_survives_a_crash(shard: Proc) -> None:
    async with aio_channel(shard, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        await stub.CreateTable(create("shard-0.gone", "gone"), timeout=STEP_S)
        await stub.CreateTable(create("shard-0.kept", "kept", ("d", "e", "f")), timeout=STEP_S)
        await stub.CancelTable(table_pb2.CancelTableRequest(table_id="shard-0.gone"),
                               timeout=STEP_S)
    os.kill(shard.popen.pid, signal.SIGKILL)
    assert shard.popen.wait(STEP_S) == -signal.SIGKILL
    assert shard.respawn()
    await asyncio.to_thread(wait_healthy, shard)
    async with aio_channel(shard, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        assert await missing(stub, "shard-0.gone", "shard-0.kept") == ["shard-0.gone"]
        load = await stub.GetLoad(table_pb2.GetLoadRequest(), timeout=STEP_S)
        assert load.tables == 1
