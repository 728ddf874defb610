"""Placement (`placing.Placer` over the gRPC `placement.ShardClient`) against in-process fake
shards: least loaded first, draining and unreachable shards skipped, the next shard tried when
CreateTable refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import free_port
from machiavelox.matchmaking.memory_store import MemoryStore
from machiavelox.matchmaking.placement import ShardClient
from machiavelox.matchmaking.placing import Done, Failed, Placer, Result
from machiavelox.matchmaking.queue import Ticket
from machiavelox.matchmaking.store import Group
from machiavelox.platform.errors import ErrorInterceptor, failed_precondition
from machiavelox.platform.tls import InternalTls


class FakeShard(table_pb2_grpc.TableAuthorityServiceServicer):
    def __init__(self, shard_id: str, tables: int, capacity: int = 100,
                 draining: bool = False, refuse: bool = False) -> None:
        self.shard_id = shard_id
        self.tables = tables
        self.capacity = capacity
        self.draining = draining
        self.refuse = refuse
        self.created: list[table_pb2.CreateTableRequest] = []

    async def GetLoad(self, request: table_pb2.GetLoadRequest,
                      context: Any) -> table_pb2.GetLoadResponse:
        return table_pb2.GetLoadResponse(shard_id=self.shard_id, tables=self.tables,
                                         capacity=self.capacity, draining=self.draining)

    async def CreateTable(self, request: table_pb2.CreateTableRequest,
                          context: Any) -> table_pb2.CreateTableResponse:
        if self.refuse:
            raise failed_precondition("shard/full", f"{self.shard_id} is full")
        self.created.append(request)
        self.tables += 1
        return table_pb2.CreateTableResponse(table_id=request.table_id, shard_id=self.shard_id)


@dataclass
class Fakes:
    shards: dict[str, FakeShard]
    addresses: dict[str, str]

    def client(self, **extra: str) -> ShardClient:
        return ShardClient({**self.addresses, **extra}, InternalTls.off().connector("table"),
                           timeout_s=1.0)  # in-process fakes: plaintext


async def place(client: ShardClient, *ids: str) -> list[Result]:
    """Place one table per placement id: ann, bob and cy (then ann1, bob1, cy1...)."""
    store = MemoryStore()
    groups = []
    for i, pid in enumerate(ids):
        tickets = tuple(Ticket(f"{name}{i or ''}", f"{name}{i or ''}", 0.0, 0)
                        for name in ("ann", "bob", "cy"))
        for ticket in tickets:
            await store.add_ticket(ticket, f"watch-{ticket.ticket_id}")
        groups.append(Group(pid, tickets, tuple(t.player for t in tickets)))
    placements = await store.form(groups, "me", 0)
    return await Placer(store, client, "me", lambda: 0).place(placements)


async def place_one(client: ShardClient) -> Done:
    (result,) = await place(client, "abc")
    assert isinstance(result, Done), result
    return result


@pytest.fixture
async def fakes() -> AsyncIterator[Fakes]:
    shards = {sid: FakeShard(sid, tables)  # type: ignore[abstract]  # no Connect/SetDraining
              for sid, tables in (("s0", 5), ("s1", 2), ("s2", 3))}
    servers = []
    addresses = {}
    for sid, fake in shards.items():
        server = grpc.aio.server(interceptors=[ErrorInterceptor()])
        table_pb2_grpc.add_TableAuthorityServiceServicer_to_server(fake, server)
        addresses[sid] = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
        await server.start()
        servers.append(server)
    yield Fakes(shards, addresses)
    for server in servers:
        await server.stop(0)


async def test_the_least_loaded_shard_gets_the_table_with_its_prefix(fakes: Fakes) -> None:
    client = fakes.client()
    placed = (await place_one(client)).seated
    assert (placed.table_id, placed.shard_id) == ("s1.abc", "s1")
    (created,) = fakes.shards["s1"].created
    assert created.table_id == "s1.abc" and list(created.player_ids) == ["ann", "bob", "cy"]
    assert created.kind == table_pb2.MATCH_KIND_SINGLE and created.competitive
    await client.close()


async def test_load_is_a_share_of_capacity(fakes: Fakes) -> None:
    fakes.shards["s1"].capacity = 4  # 2 of 4 busy: fuller than s0 (5 of 100)
    fakes.shards["s2"].capacity = 3  # 3 of 3: full, skipped
    client = fakes.client()
    assert (await place_one(client)).seated.shard_id == "s0"
    await client.close()


async def test_draining_and_unreachable_shards_are_skipped(fakes: Fakes) -> None:
    fakes.shards["s1"].draining = True
    client = fakes.client(gone=f"127.0.0.1:{free_port()}")
    assert (await place_one(client)).seated.table_id == "s2.abc"
    await client.close()


async def test_a_refusal_sends_the_table_to_the_next_shard(fakes: Fakes) -> None:
    fakes.shards["s1"].refuse = True
    client = fakes.client()
    placed = (await place_one(client)).seated
    assert (placed.table_id, placed.shard_id) == ("s2.abc", "s2")
    for sid in ("s0", "s1", "s2"):
        fakes.shards[sid].refuse = True
    (result,) = await place(client, "def")
    assert isinstance(result, Failed)
    await client.close()


async def test_a_burst_spreads_over_the_shards(fakes: Fakes) -> None:
    client = fakes.client()
    placed = await place(client, *(f"t{i}" for i in range(5)))
    shards = [p.seated.shard_id for p in placed if isinstance(p, Done)]
    # Loads 5/2/3: s1 first, then s1 and s2 alternate; nobody passes s0's 5.
    assert shards == ["s1", "s1", "s2", "s1", "s2"]
    assert {sid: f.tables for sid, f in fakes.shards.items()} == {"s0": 5, "s1": 5, "s2": 5}
    await client.close()
