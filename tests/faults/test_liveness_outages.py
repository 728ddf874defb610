"""Outages of presence cost nobody a seat (issue 13, item 1): missing data is unknown, never
absence.

Real processes on loopback: Redis (the machine's, under a fresh key prefix), presence, scoring,
one shard (rules clock x10: the 90 s of M11.2 are 9 s) and a gateway; three players at one
table as apps, heartbeating every second as apps do.

1. Two presence replicas on one Redis, as the chart deploys them: the gateway reports to
   replica A, the shard watches replica B. A loses Redis (a TCP proxy this test owns
   blackholes it) for 15 s, 150 s of table time. Proves: nobody is abandoned (as all three
   were before the fix: B saw no heartbeat in Redis and reported them silent). Two defences
   hold it: the gateway's first-hand word, which the shard prefers to presence's, and
   presence's own "unknown" for what it cannot see; either alone keeps the players seated.
2. One presence replica, killed by PID for 15 s while ann and bob heartbeat and cy closes his
   app. Proves: ann and bob are never abandoned (their gateway vouches for them, and the
   shard's broken stream to presence makes everyone unknown, not silent); cy is abandoned, but
   only 90 s of table time after presence can tell again, never earlier (before the fix his
   silence was dated from his last heartbeat before the outage: abandoned at once); and the
   shard retries its stream to presence once a second (its retry loop once spun without
   pause, thousands of reconnections a second, and never told the tables "unknown").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
import redis.asyncio as aioredis

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.local.processes import (
    Proc,
    check_all_clean,
    start,
    wait_healthy,
)
from tests.support.tcp_proxy import TcpProxy

from .cluster import seat_players, start_table_cluster
from .players import Player, acked

REDIS = ("127.0.0.1", 6379)
TABLE = "shard-0.t"
NAMES = ("ann", "bob", "cy")
SCALE = 10
OUTAGE_S = 15.0  # 150 s of table time: past the 90 s of M11.2
ABANDON_TABLE_MS = 90_000


class Cluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.prefix = f"mxv-test-{uuid.uuid4().hex[:8]}:"
        self.procs: dict[str, Proc] = {}

    def presence(self, name: str, redis_port: int) -> Proc:
        self.procs[name] = start(name, "presence", {
            "MACHIAVELOX_PRESENCE_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "MACHIAVELOX_PRESENCE_KEY_PREFIX": self.prefix}, self.tmp)
        return self.procs[name]

    def rest(self, gateway_presence: Proc, shard_presence: Proc) -> None:
        start_table_cluster(self.tmp, self.procs, shard_env={
            "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE),
            "MACHIAVELOX_PRESENCE_ADDRESS": shard_presence.address}, gateway_env={
            "MACHIAVELOX_PRESENCE_ADDRESS": gateway_presence.address})

    async def close(self) -> None:
        await asyncio.to_thread(check_all_clean, reversed(list(self.procs.values())))
        client = aioredis.Redis(host=REDIS[0], port=REDIS[1])
        try:
            keys = [k async for k in client.scan_iter(match=f"{self.prefix}*", count=500)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


@pytest.fixture
async def redis_proxy() -> AsyncIterator[TcpProxy]:
    proxy = TcpProxy(*REDIS)
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.close()


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    made = Cluster(tmp_path)
    try:
        yield made
    finally:
        await made.close()


class Heartbeats:
    """Each player's app: a heartbeat every second until stopped (per player)."""

    def __init__(self, players: dict[str, Player]) -> None:
        self._tasks = {name: asyncio.create_task(self._beat(p)) for name, p in players.items()}

    @staticmethod
    async def _beat(player: Player) -> None:
        for _ in range(600):  # (bounded: 10 minutes)
            player.client.send_raw(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))
            await asyncio.sleep(1.0)

    async def stop(self, name: str | None = None) -> None:
        for key in [name] if name else list(self._tasks):
            task = self._tasks.pop(key)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def abandoned(player: Player) -> list[common_pb2.Event]:
    return [ev for ev in player.events if ev.kind == "abandoned"]


async def test_a_presence_replica_cut_from_redis_abandons_nobody(
        cluster: Cluster, redis_proxy: TcpProxy) -> None:
    # (started from threads: this loop relays A's Redis connection meanwhile)
    a = await asyncio.to_thread(cluster.presence, "presence-a", redis_proxy.port)
    b = await asyncio.to_thread(cluster.presence, "presence-b", REDIS[1])
    await asyncio.to_thread(cluster.rest, a, b)
    async with grpc.aio.insecure_channel(cluster.procs["gateway"].address) as ch:
        players = await seat_players(cluster.procs, TABLE, NAMES, ch)
        beats = Heartbeats(players)
        try:
            for p in players.values():
                await acked(p, rules.Draw(p.seat))
            redis_proxy.blackhole()  # A can no longer store the heartbeats it gets
            await asyncio.sleep(OUTAGE_S)
            redis_proxy.resume()
            await asyncio.sleep(3.0)
            for p in players.values():
                await acked(p, rules.Draw(p.seat))  # everyone still plays
                await p.drain(0.5)
                assert not abandoned(p), [ev.player for ev in abandoned(p)]
        finally:
            await beats.stop()
            for p in players.values():
                await p.close()


async def test_presence_killed_abandons_only_a_real_leaver_and_not_early(
        cluster: Cluster) -> None:
    presence = await asyncio.to_thread(cluster.presence, "presence", REDIS[1])
    await asyncio.to_thread(cluster.rest, presence, presence)
    async with grpc.aio.insecure_channel(cluster.procs["gateway"].address) as ch:
        players = await seat_players(cluster.procs, TABLE, NAMES, ch)
        ann, bob, cy = players["ann"], players["bob"], players["cy"]
        beats = Heartbeats(players)
        try:
            for p in players.values():
                await acked(p, rules.Draw(p.seat))
            os.kill(presence.popen.pid, signal.SIGKILL)
            assert await asyncio.to_thread(presence.popen.wait, 10) == -signal.SIGKILL
            await beats.stop("cy")
            await cy.close()  # cy leaves for good while presence is down
            await asyncio.sleep(OUTAGE_S)
            # the shard retried its stream to presence once a second, no faster (a retry
            # loop that spun would flood its log and starve its event loop: it did)
            broken = [r for r in cluster.procs["shard"].logs()
                      if r.get("msg") == "presence stream broken: UNAVAILABLE"]
            assert 1 <= len(broken) <= 2 * OUTAGE_S + 5, len(broken)
            assert presence.respawn()
            await asyncio.to_thread(wait_healthy, presence)
            await asyncio.sleep(2.0)  # the shard's stream to presence is back (1 s retry)
            back = await ann.act(rules.Draw(ann.seat))
            assert back.WhichOneof("kind") == "ack"
            await ann.drain(0.3)
            back_ms = ann.events[-1].at_ms  # table time when presence could tell again
            assert not abandoned(ann), "cy abandoned for presence's outage, not for his own"
            for _ in range(60):  # (bounded: 30 s; cy's 90 s of table time are 9 s)
                await ann.drain(0.5)
                if abandoned(ann):
                    break
            [gone] = abandoned(ann)
            assert gone.player == common_pb2.SEAT_P3
            # counted from when presence could tell, not from cy's last heartbeat 150 s
            # of table time before (room for the 1 s stream retry and the 2 s wait: x10)
            assert gone.at_ms >= back_ms + ABANDON_TABLE_MS - 40_000, (gone.at_ms, back_ms)
            await acked(bob, rules.Draw(bob.seat))
            await bob.drain(0.3)
            assert [ev.player for ev in abandoned(bob)] == [common_pb2.SEAT_P3]
        finally:
            await beats.stop()
            for name in ("ann", "bob"):
                await players[name].close()
