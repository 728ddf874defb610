"""CreateTables: a round's placements on one shard in one call (issue 13, the agorà's rate),
on a real shard process (journal: SQLite in its data dir) and matchmaking's ShardClient.

Proves: creations asked of one shard in the same moment go as one CreateTables call, each
table answered in its place (created, or refused as its CreateTable would be: a full shard
`shard/full`, a cancelled id `table/cancelled`), idempotent by placement as CreateTable is;
the call is bounded and matchmaking's alone; a call that fails as a whole (a deadline, a
refusal with a shard's reason, an answer of the wrong length) leaves matchmaking unsure of
each table (so each is cancelled before another shard is asked), and only a refusal before
any table was made refuses them all; and a shard that serves no CreateTables (older than
matchmaking) gets a CreateTable a table. Would fail if the creations went a call each, if one
table's refusal failed the others, if a failed call were taken as "no table there", or
without the fallback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    credentials,
    free_port,
    start,
)
from machiavelox.matchmaking.placement import ShardClient
from machiavelox.matchmaking.placing import Answer, Done
from machiavelox.matchmaking.store import Placement
from machiavelox.platform.errors import ErrorInterceptor, failed_precondition, malformed_request
from machiavelox.platform.tls import InternalTls
from machiavelox.rules import MatchKind
from tests.support.agora import STEP_S, reason
from tests.support.fake_shards import fake_shards, place
from tests.support.scrape import handled

pytestmark = pytest.mark.timeout(60)

CAPACITY = 4


@pytest.fixture
def shard(tmp_path: Path) -> Iterator[Proc]:
    proc = start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                    "MACHIAVELOX_SCORING_ADDRESS": "",
                                    "MACHIAVELOX_PRESENCE_ADDRESS": "",
                                    "MACHIAVELOX_TABLE_CAPACITY": str(CAPACITY),
                                    "MACHIAVELOX_METRICS_PORT": str(free_port())}, tmp_path)
    try:
        yield proc
    finally:
        check_all_clean([proc])


def placement(n: int) -> Placement:
    return Placement(f"p{n}", (f"a{n}", f"b{n}", f"c{n}"), MatchKind.SINGLE, True)


async def create_all(client: ShardClient, *ns: int) -> list[Answer]:
    return list(await asyncio.gather(*(client.create("shard-0", f"shard-0.p{n}", placement(n))
                                       for n in ns)))


async def test_a_round_goes_in_one_call_each_table_answered(shard: Proc) -> None:
    client = ShardClient({"shard-0": shard.address},
                         credentials(shard, "matchmaking").connector("table"))
    async with aio_channel(shard, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        await stub.CancelTable(table_pb2.CancelTableRequest(table_id="shard-0.p1",
                                                            placement_id="p1"), timeout=STEP_S)
        try:
            answers = await create_all(client, *range(7))
            assert [a.kind for a in answers] == ["created", "refused", "created", "created",
                                                 "created", "refused", "refused"]
            assert answers[1].why == "FAILED_PRECONDITION table/cancelled"
            assert answers[5].why == answers[6].why == "FAILED_PRECONDITION shard/full"
            assert handled(shard, "CreateTables") == {"OK": 1} and not handled(shard, "CreateTable")
            # the same placements again: their tables (idempotent), the full shard still full
            again = await create_all(client, 0, 2, 7)
            assert [a.kind for a in again] == ["created", "created", "refused"]
            assert handled(shard, "CreateTables") == {"OK": 2}
            load = await stub.GetLoad(table_pb2.GetLoadRequest(), timeout=STEP_S)
            assert load.tables == CAPACITY
            missing = await stub.CheckTables(table_pb2.CheckTablesRequest(
                table_ids=[f"shard-0.p{n}" for n in range(8)]), timeout=STEP_S)
            assert list(missing.missing_table_ids) == [
                "shard-0.p1", "shard-0.p5", "shard-0.p6", "shard-0.p7"]
        finally:
            await client.close()

        with pytest.raises(grpc.aio.AioRpcError) as err:  # bounded
            await stub.CreateTables(table_pb2.CreateTablesRequest(tables=[
                table_pb2.CreateTableRequest(table_id=f"shard-0.x{i}", player_ids=["a", "b", "c"],
                                             kind=table_pb2.MATCH_KIND_SINGLE)
                for i in range(257)]), timeout=STEP_S)
        assert (err.value.code(), reason(err.value)) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                         "request/too-many")
    async with aio_channel(shard, "gateway") as ch:  # matchmaking's alone
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTables(
                table_pb2.CreateTablesRequest(), timeout=STEP_S)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_a_shard_without_create_tables_gets_a_call_a_table() -> None:
    async with fake_shards() as fakes:  # (they serve CreateTable alone)
        client = fakes.client()
        try:
            placed = await place(client, "t0", "t1", "t2", "t3")
            assert all(isinstance(p, Done) for p in placed), placed
            assert sum(len(f.created) for f in fakes.shards.values()) == 4
        finally:
            await client.close()


class NewShard(table_pb2_grpc.TableAuthorityServiceServicer):
    """A shard whose CreateTables fails as a whole, as `how` says."""

    def __init__(self, how: str) -> None:
        self.how = how

    async def CreateTables(self, request: table_pb2.CreateTablesRequest,
                           context: Any) -> table_pb2.CreateTablesResponse:
        if self.how == "stall":  # past the client's deadline (1 s)
            await asyncio.sleep(3)
        if self.how == "refused":  # a reason of the shard's, for the whole call
            raise failed_precondition("shard/journal", "cannot write")
        if self.how == "malformed":  # refused before any table was looked at
            raise malformed_request("bad bytes")
        created = table_pb2.CreateTableOutcome(created=table_pb2.CreateTableResponse())
        return table_pb2.CreateTablesResponse(outcomes=[created] * (len(request.tables) - 1))


@pytest.mark.parametrize(("how", "kind"), [("stall", "unsure"), ("refused", "unsure"),
                                           ("short", "unsure"), ("malformed", "invalid")])
async def test_a_call_failed_as_a_whole_leaves_each_table_unsure(how: str, kind: str) -> None:
    server = grpc.aio.server(interceptors=[ErrorInterceptor()])
    table_pb2_grpc.add_TableAuthorityServiceServicer_to_server(
        NewShard(how), server)  # type: ignore[abstract]  # CreateTables alone
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    await server.start()
    client = ShardClient({"shard-0": address}, InternalTls.off().connector("table"),
                         timeout_s=1.0)
    try:
        answers = await create_all(client, 0, 1, 2)
        assert [a.kind for a in answers] == [kind] * 3, answers
    finally:
        await client.close()
        await server.stop(0)
