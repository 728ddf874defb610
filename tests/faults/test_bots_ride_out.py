"""`machiavelox up`'s whole cluster with its supervisor: both shards killed by PID while three
bots are mid-match; the supervisor restarts them (same ports, same data dir), each recovers
its tables from its journal, and the bots, told `table/unavailable` in-band meanwhile, play on
to the end of their match by themselves. The result is stored exactly once.

Proves the pieces together: up restarts a crashed service by itself; a restarted shard is
back with the table; the bots ride out the outage (an action left unanswered by the dead
shard does not leave a bot waiting forever); matchmaking and scoring are unaffected. Without
the supervisor, the journal or the bots' handling, the bots would end without a result.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox._gen.v1 import gateway_pb2
from machiavelox.bots.player import Bot
from machiavelox.local.processes import Proc
from machiavelox.local.supervisor import Supervisor
from machiavelox.local.up import launch, stop_all

from .results import stored_results

SHARDS = ("shard-0", "shard-1")
NAMES = ("ava", "ben", "cid")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[dict[str, Proc], Supervisor]]:
    procs = launch(0, tmp_path, tmp_path, time_scale=40.0)
    supervisor = Supervisor(procs).start()
    try:
        yield procs, supervisor
    finally:
        supervisor.stop()
        assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"


async def test_bots_play_on_through_a_crash_of_their_shard(
        cluster: tuple[dict[str, Proc], Supervisor]) -> None:
    procs, supervisor = cluster
    gateway = procs["gateway"].address
    async with grpc.aio.insecure_channel(gateway) as ch:
        records: dict[str, list[gateway_pb2.PlayResponse]] = {n: [] for n in NAMES}
        bots = [Bot(name, ch, ch, interval_s=0.05, max_game_s=240, record=records[name])
                for name in NAMES]
        games = asyncio.gather(*(bot.run() for bot in bots))
        # Until play has begun (each bot has seen a card drawn), and no longer: a fixed wait
        # after the table's creation let the bots, 40 times faster than real, end their
        # match first on a loaded machine (seen once in CI: no `interrupted`).
        for _ in range(400):
            await asyncio.sleep(0.05)
            if all(any(r.WhichOneof("kind") == "event" and r.event.kind == "drew" for r in seen)
                   for seen in records.values()):
                break
        for shard in SHARDS:
            os.kill(procs[shard].popen.pid, signal.SIGKILL)
        outcomes = await games
    assert all(outcome.result is not None for outcome in outcomes), outcomes
    for name, seen in records.items():  # the crash came mid-match: each was told of it
        kinds = [r.event.kind for r in seen if r.WhichOneof("kind") == "event"]
        assert "interrupted" in kinds, name
    assert {supervisor.restarts(s) for s in SHARDS} == {1}
    [table_id] = {outcome.table_id for outcome in outcomes}
    stored = [r for r in await stored_results(procs["scoring"], want=1)
              if r.result.table_id == table_id]
    assert [r.result.smazzata for r in stored] == [1], "stored exactly once"
