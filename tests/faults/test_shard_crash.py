"""A shard killed with SIGKILL mid-match loses no acknowledged action, and its tables play on.

Real processes on loopback: scoring, one shard (its journal: SQLite in its data dir, the
embedded default), a gateway; nine players on three tables, all through the gateway as apps:
- table A (single): ann's direct meld on the table, bob holding a card he took from it (M6.3),
  cy's calata open (M5.0.1);
- table B (single): a Stop! freeze in progress (M9);
- table C (long match): in its pause after a smazzata (M13.4).
Then the shard is killed by PID and started again (same port, same data dir) after an outage
longer than the calata, the hold and the pause at the rules clock used (x10).

Proves: sessions are told `table/unavailable` in-band while the shard is down (P: players are
never left hanging) and resume by themselves; every session's sequence numbers continue with
no gap and no duplicate, and the first event after the outage is the `interrupted` one, whose
detail is at least the outage; every acknowledged action is still there (fresh snapshots show
the meld, the hold, the open calata, the freeze and the pause: no timer fired for the
outage); the matches then end normally and each result is stored in scoring exactly once.
Without the journal the tables would be gone (`table/unknown`); without the clock pause the
hold, the calata and the pause would have expired at recovery.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator
from itertools import combinations
from pathlib import Path

import grpc
import pytest

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, table_pb2, table_pb2_grpc
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    free_port,
    start,
    wait_healthy,
)
from machiavelox.table.host import INTERRUPTED
from tests.support.client import PlayClient, login
from tests.support.shard_items import subscribe_item

from .players import STEP_S, Player, acked
from .results import stored_results

KEY = "fault-test-key-0123456789abcdef"
SEED = 141  # every table's first deal: ann's first four draws hold a run (4-5-6 of spades)
SCALE = 10  # the rules clock: calata 4 s, hold 1 s, pause 6 s, Stop! 18 s of wall time
OUTAGE_S = 7.0  # longer than the calata, the hold and the pause at that speed
TABLES = {"shard-0.a": ("ann", "bob", "cy"), "shard-0.b": ("dan", "eve", "fay"),
          "shard-0.c": ("gus", "hal", "ivy")}
P1, P2, P3 = rules.Seat.P1, rules.Seat.P2, rules.Seat.P3


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    started: dict[str, Proc] = {}
    try:
        started["scoring"] = start("scoring", "scoring", {}, tmp_path)
        shard_port = free_port()
        started["shard"] = start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(shard_port),
            "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE),
            "MACHIAVELOX_TABLE_DEAL_SEED": str(SEED),
            "MACHIAVELOX_SCORING_ADDRESS": started["scoring"].address}, tmp_path)
        started["gateway"] = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{shard_port}"}, tmp_path)
        yield started
    finally:
        check_all_clean(reversed(list(started.values())))


@pytest.fixture
async def players(procs: dict[str, Proc]) -> AsyncIterator[dict[str, Player]]:
    async with aio_channel(procs["shard"], "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        for table_id, names in TABLES.items():
            kind = table_pb2.MATCH_KIND_LONG if table_id.endswith("c") \
                else table_pb2.MATCH_KIND_SINGLE
            await stub.CreateTable(table_pb2.CreateTableRequest(
                table_id=table_id, player_ids=list(names), kind=kind,
                competitive=kind == table_pb2.MATCH_KIND_SINGLE), timeout=10)
    async with grpc.aio.insecure_channel(procs["gateway"].address) as ch:
        out: dict[str, Player] = {}
        for table_id, names in TABLES.items():
            for seat, name in zip(rules.SEATS, names, strict=True):
                client = PlayClient(ch, await login(ch, name))
                client.open(table_id)
                first = await client.next(STEP_S)
                assert first.WhichOneof("kind") == "snapshot"
                out[name] = Player(client, table_id, seat)
        yield out
        for player in out.values():
            await player.close()


async def snapshots(shard: Proc, wanted: list[tuple[str, str]]) -> list[common_pb2.PlayerView]:
    """Fresh views (table, player) straight from the shard, as a gateway subscribing anew
    gets them: at once after it serves again, before any gateway has reconnected."""
    request = table_pb2.ConnectRequest(items=[subscribe_item(table_id, player)
                                              for table_id, player in wanted])
    views: dict[tuple[str, str], common_pb2.PlayerView] = {}
    async with aio_channel(shard, "gateway") as ch:
        done = asyncio.Event()

        async def requests() -> AsyncIterator[table_pb2.ConnectRequest]:
            yield request
            await done.wait()

        call = table_pb2_grpc.TableAuthorityServiceStub(ch).Connect(requests())
        for _ in range(100):
            response = await asyncio.wait_for(call.read(), STEP_S)
            for item in response.items:
                if item.HasField("snapshot"):
                    views[(item.table_id, item.player_id)] = item.snapshot.view
            if len(views) == len(wanted):
                break
        done.set()
        call.cancel()
    return [views[key] for key in wanted]


async def set_up(p: dict[str, Player]) -> None:
    ann, bob, cy = p["ann"], p["bob"], p["cy"]
    await acked(p["dan"], rules.Stop(P1))  # table B freezes (M9)
    await acked(p["hal"], rules.Abandon(P2))  # table C: the smazzata ends, the pause begins
    await acked(p["ivy"], rules.Abandon(P3))
    for _ in range(4):
        await acked(ann, rules.Draw(P1))
    await ann.drain(0.1)
    hand = [codec.card_from_pb(c) for ev in ann.events if ev.kind == "drew" for c in ev.cards]
    [run] = [c for c in combinations(hand, 3) if rules.is_regular(c)][:1]
    await acked(ann, rules.Declare(P1, run))
    await acked(ann, rules.Direct(P1, run))  # one meld on the table, confirmed
    await ann.drain(0.1)
    [meld] = {ev.meld for ev in ann.events if ev.kind == "direct"}
    for player, seat in ((bob, P2), (cy, P3)):
        await acked(player, rules.Draw(seat))
        await player.drain(0.1)
        own = [codec.card_from_pb(c) for ev in player.events if ev.kind == "drew"
               for c in ev.cards]
        await acked(player, rules.Declare(seat, tuple(own)))  # a calata opens
    await acked(bob, rules.Take(P2, run[0], meld))  # bob holds a card (M6.3), 1 s of wall
    # time at x10: the shard is killed right after this


async def test_a_killed_shard_comes_back_with_every_table(procs: dict[str, Proc],
                                                         players: dict[str, Player]) -> None:
    await set_up(players)
    before = {name: list(player.seqs) for name, player in players.items()}
    shard = procs["shard"]
    os.kill(shard.popen.pid, signal.SIGKILL)
    assert await asyncio.to_thread(shard.popen.wait, 10) == -signal.SIGKILL
    for player in players.values():  # told in-band, the stream stays open
        for _ in range(50):
            if "table/unavailable" in player.refusals:
                break
            await player.next()
        assert "table/unavailable" in player.refusals
    await asyncio.sleep(OUTAGE_S)
    assert shard.respawn()
    await asyncio.to_thread(wait_healthy, shard)
    # every acknowledged action is there and no timer fired for the outage
    a, b, c = await snapshots(shard, [("shard-0.a", "bob"), ("shard-0.b", "dan"),
                                      ("shard-0.c", "gus")])
    assert a.seats[1].HasField("holding"), "bob still holds the card he took"
    assert a.seats[2].calata_open, "cy's calata is still open"
    assert len(a.table) == 1
    assert b.phase == common_pb2.PHASE_FROZEN
    assert c.phase == common_pb2.PHASE_PAUSE
    for player in players.values():  # resumed by the gateway, from where each session was
        gap = await player.until_event(INTERRUPTED)
        assert int(gap.detail) >= OUTAGE_S * 1000
    # the matches end normally
    await acked(players["bob"], rules.Abandon(P2))  # A: ann is the survivor (M11.6)
    await acked(players["cy"], rules.Abandon(P3))
    await acked(players["dan"], rules.GiveUp(P1))  # B: the stopper gives up (M9.6) ...
    await acked(players["eve"], rules.Abandon(P2))  # ... and fay survives
    await acked(players["gus"], rules.Leave(P1))  # C: leaving in the pause ends it (M13.5)
    for name, player in players.items():
        await player.drain()
        seqs = player.seqs
        assert seqs[:len(before[name])] == before[name]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"{name}: gap or duplicate"
    results = await stored_results(procs["scoring"], want=3)
    keys = [(r.result.table_id, r.result.smazzata) for r in results]
    assert sorted(keys) == [("shard-0.a", 1), ("shard-0.b", 1), ("shard-0.c", 1)]
