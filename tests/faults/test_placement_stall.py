"""A CreateTable stalled 3 s on its way to the shard makes no twin table and no orphan
(issue 13 item 3).

Real processes on loopback: two table shards (journal: SQLite), scoring, and
`machiavelox matchmaking` reaching shard-0 through a TCP proxy the test owns (the emptier
shard by id, so the first to be asked). The proxy relays everything until it sees the
CreateTable of the three players (their ids are in its body: the cluster runs with
MACHIAVELOX_INTERNAL_TLS=off so that the proxy can read it, a supported setting), then holds
for 3 s, past matchmaking's 2 s deadline, either
- the answers: the shard creates the table at once, and its answer comes too late; or
- the requests: the CreateTable reaches the shard 3 s late (with its cancellation by the
  deadline right behind it, and whatever matchmaking sent meanwhile).

Proves: matchmaking, unsure whether shard-0 has the table, cancels it there before any other
shard is asked (the CancelTable goes behind the held CreateTable, or a late CreateTable finds
its id cancelled), so once the stall is over exactly one table exists, where the three players
are assigned: on shard-1, or, when the machine is loaded enough that the cancellation's answer
is late too, on whichever shard a new placement picks once the first, still cancelling, has
been resolved and given up (placing.py); the stalled table exists nowhere (no twin, and no
orphan to end by abandonment with points: nothing for scoring to store). It shows in the metrics
(placement_cancels_total{outcome="gone"}) and matchmaking's WARNING. Without the cancellation
(an unsure answer taken as a refusal, as before), shard-0 keeps the table it created, a twin
of shard-1's (the answers held), and nothing is cancelled (either way).
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, free_port, start
from tests.support.agora import STEP_S, next_update, tokens
from tests.support.client import bearer
from tests.support.tcp_proxy import TcpProxy

from .cluster import KEY, start_two_shards

STALL_S = 3.0
PLAYERS = ("stall-ann", "stall-bob", "stall-cy")
PLAIN = {"MACHIAVELOX_INTERNAL_TLS": "off"}

pytestmark = pytest.mark.timeout(90)


class StallOnce(TcpProxy):
    """Relays until a request carries `marker`, then holds for `stall_s` every byte of the
    replies (`replies_only`: that request passes) or of the requests (from that one)."""

    def __init__(self, host: str, port: int, marker: bytes, stall_s: float,
                 replies_only: bool) -> None:
        super().__init__(host, port)
        self.marker = marker
        self.stall_s = stall_s
        self.replies_only = replies_only
        self.fired = asyncio.Event()
        self.resumed = asyncio.Event()

    def _resume(self) -> None:
        self.resume()
        self.resumed.set()

    async def _pump(self, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, flowing: asyncio.Event) -> None:
        with contextlib.suppress(OSError):
            while data := await reader.read(65536):
                if flowing is self._requests and not self.fired.is_set() \
                        and self.marker in data:
                    self.fired.set()
                    self.stall(self.replies_only)
                    asyncio.get_running_loop().call_later(self.stall_s, self._resume)
                await flowing.wait()
                writer.write(data)
                await writer.drain()


@dataclass
class Cluster:
    shards: dict[str, Proc]
    scoring: Proc
    gateway: Proc
    matchmaking: Proc
    proxy: StallOnce


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    started: dict[str, Proc] = {}
    try:
        start_two_shards(tmp_path, started, PLAIN)
        yield started
    finally:
        check_all_clean(reversed(list(started.values())))


@pytest.fixture(params=["answers", "requests"])
async def cluster(procs: dict[str, Proc], tmp_path: Path,
                  request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    host, port = procs["shard-0"].address.split(":")
    proxy = StallOnce(host, int(port), PLAYERS[0].encode(), STALL_S,
                      replies_only=request.param == "answers")
    await proxy.start()
    matchmaking = await asyncio.to_thread(start, "matchmaking", "matchmaking", {
        **PLAIN, "MACHIAVELOX_TOKEN_KEY": KEY,
        "MACHIAVELOX_MATCHMAKING_SHARDS": f"shard-0=127.0.0.1:{proxy.port},"
                                          f"shard-1={procs['shard-1'].address}",
        "MACHIAVELOX_SCORING_ADDRESS": procs["scoring"].address,
        "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
        "MACHIAVELOX_METRICS_PORT": str(free_port()),
        "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
    try:
        yield Cluster({sid: procs[sid] for sid in ("shard-0", "shard-1")}, procs["scoring"],
                      procs["gateway"], matchmaking, proxy)
    finally:
        await asyncio.to_thread(matchmaking.check_clean)
        await proxy.close()


async def assignment(call: object) -> matchmaking_pb2.Assignment:
    for _ in range(100):
        update = await next_update(call)
        if update.WhichOneof("kind") == "assignment":
            found: matchmaking_pb2.Assignment = update.assignment
            return found
    raise AssertionError("no assignment")


async def shard_view(proc: Proc, table_ids: list[str]) -> tuple[int, list[str]]:
    """The shard's tables in play, and which of `table_ids` it does not have."""
    async with aio_channel(proc, "matchmaking") as ch:
        stub = table_pb2_grpc.TableAuthorityServiceStub(ch)
        load = await stub.GetLoad(table_pb2.GetLoadRequest(), timeout=STEP_S)
        check = await stub.CheckTables(table_pb2.CheckTablesRequest(table_ids=table_ids),
                                       timeout=STEP_S)
    return load.tables, list(check.missing_table_ids)


def metric(proc: Proc, name: str, **labels: str) -> float:
    port = proc.env["MACHIAVELOX_METRICS_PORT"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    want = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
                   if labels else "")
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head == want:
            return float(value)
    return 0.0


async def test_a_stalled_create_table_makes_no_twin(cluster: Cluster) -> None:
    toks = await tokens(cluster.gateway, *PLAYERS)
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(t))
                 for t in toks.values()]
        try:
            got = await asyncio.wait_for(asyncio.gather(*(assignment(c) for c in calls)),
                                         STALL_S + 3 * STEP_S)
        finally:
            for call in calls:
                call.cancel()
    assert cluster.proxy.fired.is_set(), "the CreateTable never went through the proxy"
    assert len({a.table_id for a in got}) == 1
    table = got[0]
    assert sorted(table.player_ids) == sorted(PLAYERS)
    assert table.table_id.startswith(f"{table.shard_id}.")
    warnings = [r for r in cluster.matchmaking.logs()
                if "cancelling it there" in str(r.get("msg")) and r["level"] == "WARNING"]
    assert len(warnings) == 1, warnings  # the one stalled creation, on shard-0
    stalled = str(warnings[0].get("table_id"))
    assert stalled.startswith("shard-0.") and stalled != table.table_id

    await asyncio.wait_for(cluster.proxy.resumed.wait(), STEP_S)
    await asyncio.sleep(1.0)  # what the proxy held has reached shard-0 by now
    ids = [table.table_id, stalled]
    home = table.shard_id
    other = "shard-1" if home == "shard-0" else "shard-0"
    assert await shard_view(cluster.shards[home], ids) == (1, [stalled])  # no twin
    assert await shard_view(cluster.shards[other], ids) == (0, ids)  # no orphan

    assert metric(cluster.matchmaking, "machiavelox_matchmaking_placement_cancels_total",
                  outcome="gone") >= 1
    async with aio_channel(cluster.scoring, "results-reader") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100), timeout=STEP_S)
    assert not board.rows  # nobody scored anything
