"""A client in another language plays with the contract as is (Node.js, @grpc/grpc-js):
a Machiavelox table (a draw, a shard restart ridden out) and a classic one (issue 16, part 3:
joined by invite code through the gateway's agorà, its classic snapshot, a classic draw)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import (
    classic_pb2,
    gateway_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    free_port,
    start,
    wait_healthy,
)
from tests.services.matchmaking.test_lost_tables import until_assigned
from tests.support.agora import next_update, tokens
from tests.support.client import PlayClient, bearer

from .conftest import KEY

NODE_DIR = Path(__file__).parent / "node"
PROTO_DIR = Path(__file__).resolve().parents[2] / "proto"
MAX_READS = 300  # the most messages (or 1 s silences) the scripted classic app reads


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test setup installs the two npm packages (the machine reaches the npm registry)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for this test (apt-get install nodejs npm)")
    work = tmp_path_factory.mktemp("node")
    for name in ("package.json", "client.js", "classic.js"):
        shutil.copy(NODE_DIR / name, work / name)
    run = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                         cwd=work, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return work


async def test_node_client_logs_in_draws_and_sees_the_event(
        cluster: dict[str, Proc], node_modules: Path) -> None:
    async with aio_channel(cluster["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id="shard-0.node", player_ids=["nodey", "b", "c"],
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)
    run = subprocess.run(["node", "client.js", cluster["gateway"].address, str(PROTO_DIR),
                          "nodey", "shard-0.node"], cwd=node_modules, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "snapshot seq=0" in run.stdout
    assert "event drew seq=1 cards=1" in run.stdout
    assert run.stdout.strip().endswith("OK")


async def test_node_client_rides_out_a_shard_restart(
        cluster: dict[str, Proc], node_modules: Path) -> None:
    """The app's side of an outage (docs/protocol.md): the shard is killed by PID after the
    client's first ack; the client is told `table/unavailable` in-band, keeps its stream, and
    once the shard is back gets the `interrupted` event with the next sequence number and
    plays on. Fails if the stream ended, a sequence number were skipped or repeated, or the
    table were gone after the restart."""
    async with aio_channel(cluster["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id="shard-0.out", player_ids=["nodey", "b", "c"],
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)
    node = subprocess.Popen(["node", "client.js", cluster["gateway"].address, str(PROTO_DIR),
                             "nodey", "shard-0.out", "ride-out"], cwd=node_modules,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert node.stdout is not None
        for line in node.stdout:  # (bounded: the client times out by itself after 90 s)
            lines.append(line.strip())
            if line.startswith("ack node-1"):
                break
        shard = cluster["shard"]
        os.kill(shard.popen.pid, signal.SIGKILL)
        await asyncio.to_thread(shard.popen.wait, 10)
        for line in node.stdout:
            lines.append(line.strip())
            if line.startswith("unavailable"):
                break
        assert shard.respawn()
        await asyncio.to_thread(wait_healthy, shard)
        out, _ = await asyncio.to_thread(node.communicate, timeout=90)
        lines += out.splitlines()
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
    assert node.returncode == 0, "\n".join(lines)
    assert "event drew seq=1 cards=1" in lines
    assert "event interrupted seq=2 cards=0" in lines
    assert lines[-1] == "OK"


@pytest.fixture
def classic_cluster(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    """A shard, matchmaking and the gateway relaying the agorà (friendly classic tables)."""
    procs: dict[str, Proc] = {}
    try:
        shard_port = free_port()
        shards = f"shard-0=127.0.0.1:{shard_port}"
        procs["shard"] = start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(shard_port),
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_TABLE_DEAL_SEED": "3"}, tmp_path)
        procs["matchmaking"] = start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50"},
            tmp_path)
        procs["gateway"] = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": shards, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": procs["matchmaking"].address},
            tmp_path)
        yield procs
    finally:
        check_all_clean(reversed(list(procs.values())))


async def scripted_drawer(channel: grpc.aio.Channel, token: str, code: str,
                          seated: asyncio.Event) -> None:
    """A scripted Python app at a friendly classic table: takes its seat by code (`seated`
    set once it holds it: the first seat), then draws on each of its turns (C5), heartbeating
    (A1). Runs until cancelled (bounded: MAX_READS reads)."""
    stub = matchmaking_pb2_grpc.MatchmakingServiceStub(channel)
    join = stub.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code),
                                  metadata=bearer(token))
    first = await next_update(join)
    assert first.WhichOneof("kind") == "waiting", first
    seated.set()
    table = await until_assigned(join)
    join.cancel()
    app = PlayClient(channel, token)
    app.open(table.table_id)
    seat = None
    ids = itertools.count(1)
    try:
        for _ in range(MAX_READS):
            app.send_raw(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))
            try:
                got = await app.next(timeout=1.0)
            except TimeoutError:
                continue
            kind = got.WhichOneof("kind")
            if kind == "classic_snapshot":
                view = got.classic_snapshot.view
                seat = view.viewer
                ours = view.turn == seat
            else:
                ours = kind == "event" and got.event.kind == "turn" and got.event.player == seat
            if ours and seat is not None:
                app.send_raw(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
                    client_action_id=f"py-{next(ids)}",
                    classic_action=classic_codec.action_to_pb(
                        classic.Draw(classic_codec.seat_from_pb(seat))))))
    finally:
        await app.close()


async def test_node_client_joins_a_classic_table_by_code_and_draws(
        classic_cluster: dict[str, Proc], node_modules: Path) -> None:
    """A scripted Python app creates a friendly two-player classic table (2 jokers, the
    36-point opening), takes its first seat by code and draws on its turns; the Node client
    takes the other seat by code, gets its `classic_snapshot` (its own hand only: as many
    cards as its seat's count), draws on its turn (C5) and sees its `drew` event with the
    card, then the app's draw without it (P5). Fails if the client could not speak the
    classic messages (a Machiavelox snapshot, a refusal, no ack, no event)."""
    gateway = classic_cluster["gateway"]
    toks = await tokens(gateway, "pyhost")
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        created = await matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(
                ruleset=classic_pb2.RULESET_CLASSIC,
                classic=classic_pb2.ClassicVariants(players=2, jokers=2, opening=36)),
            metadata=bearer(toks["pyhost"]), timeout=10)
        seated = asyncio.Event()
        app = asyncio.create_task(
            scripted_drawer(ch, toks["pyhost"], created.invite_code, seated))
        try:
            await asyncio.wait_for(seated.wait(), 10)
            run = await asyncio.to_thread(
                subprocess.run, ["node", "client.js", gateway.address, str(PROTO_DIR), "nodey",
                                 created.invite_code, "classic"],
                cwd=node_modules, capture_output=True, text=True, timeout=60)
        finally:
            app.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await app
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.fullmatch(r"assigned shard-0\.\S+ players=2", lines[0]), lines
    snapshot = re.fullmatch(r"classic snapshot seq=\d+ seat=SEAT_P2 hand=(\d+) own=(\d+)"
                            r" stock=\d+", lines[1])
    assert snapshot is not None, lines  # (the app took the first seat)
    hand, own = snapshot.groups()
    assert hand == own and int(hand) > 0
    draws = [m.groups() for line in lines
             if (m := re.fullmatch(r"event drew seq=\d+ player=(\S+) cards=(\d)", line))]
    assert ("SEAT_P2", "1") in draws, lines  # its own draw, with the card
    assert ("SEAT_P1", "0") in draws, lines  # the app's, without (P5)
    assert ("SEAT_P1", "1") not in draws, lines
    assert "ack node-c1 arrival=" in run.stdout
    assert lines[-1] == "OK"
