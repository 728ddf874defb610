"""A client in another language plays with the contract as is (Node.js, @grpc/grpc-js)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel

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
