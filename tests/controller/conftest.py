"""Fixtures of the controller tests: a fake Kubernetes API server (the StatefulSet `shard` in
namespace `mx`, 2 replicas) and two real shard processes of CAPACITY tables each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import Proc, check_all_clean, start, wait_healthy
from tests.controller.fake_kube import FakeKube, running

CAPACITY = 4


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with running(namespace="mx", statefulset="shard", replicas=2) as k:
        yield k


@pytest.fixture
def shards(tmp_path: Path) -> Iterator[list[Proc]]:
    procs = [start(f"shard-{i}", "table", {"MACHIAVELOX_SHARD_ID": f"shard-{i}",
                                           "MACHIAVELOX_TABLE_CAPACITY": str(CAPACITY)},
                   tmp_path, wait=False) for i in (0, 1)]
    try:
        for proc in procs:
            wait_healthy(proc)
        yield procs
    finally:
        check_all_clean(procs)
