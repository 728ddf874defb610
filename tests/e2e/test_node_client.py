"""A client in another language plays with the contract as is (Node.js, @grpc/grpc-js)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, wait_healthy

NODE_DIR = Path(__file__).parent / "node"
PROTO_DIR = Path(__file__).resolve().parents[2] / "proto"


@pytest.fixture(scope="module")
def node_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test setup installs the two npm packages (the machine reaches the npm registry)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("node and npm are needed for this test (apt-get install nodejs npm)")
    work = tmp_path_factory.mktemp("node")
    for name in ("package.json", "client.js"):
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
