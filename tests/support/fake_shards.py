"""Fake table shards for placement tests: in-process gRPC servers that answer GetLoad and
CreateTable (not CreateTables: they stand for a shard older than matchmaking), and the
placing of tables over them (`placing.Placer` with a memory store)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.matchmaking.memory_store import MemoryStore
from machiavelox.matchmaking.placement import ShardClient
from machiavelox.matchmaking.placing import Done, Placer, Result
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

    async def CreateTables(self, request: table_pb2.CreateTablesRequest,
                           context: Any) -> table_pb2.CreateTablesResponse:
        """As a shard older than CreateTables answers it: UNIMPLEMENTED, nothing done."""
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        raise AssertionError("abort returned")  # pragma: no cover

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


@contextlib.asynccontextmanager
async def fake_shards() -> AsyncIterator[Fakes]:
    """Three fake shards on loopback (plaintext), loads 5, 2 and 3 tables of 100."""
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
    try:
        yield Fakes(shards, addresses)
    finally:
        for server in servers:
            await server.stop(0)
