"""Fixtures of the end-to-end tests: real service processes on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import Proc, check_all_clean, free_port, start

KEY = "test-key-0123456789abcdef"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    shard_port = free_port()
    shard = start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                     "MACHIAVELOX_TABLE_PORT": str(shard_port)}, tmp_path)
    gateway = start("gateway", "gateway", {
        "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
        "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{shard_port}"}, tmp_path)
    procs = {"shard": shard, "gateway": gateway}
    yield procs
    check_all_clean(procs.values())


