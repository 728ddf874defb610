"""Placement (`placing.Placer` over the gRPC `placement.ShardClient`) against in-process fake
shards: least loaded first, draining and unreachable shards skipped, the next shard tried when
CreateTable refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from machiavelox._gen.v1 import table_pb2
from machiavelox.local.processes import free_port
from machiavelox.matchmaking.placing import Done, Failed
from tests.support.fake_shards import Fakes, fake_shards, place, place_one


@pytest.fixture
async def fakes() -> AsyncIterator[Fakes]:
    async with fake_shards() as shards:
        yield shards


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
