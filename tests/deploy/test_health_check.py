"""The `helm test` script (helm/machiavelox/files/health-check.py) against real services: it
passes only when every one answers SERVING on the standard health service."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import Proc, free_port, start
from tests.deploy.chart import CHART

SCRIPT = CHART / "files" / "health-check.py"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    procs = {"table": start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0"}, tmp_path),
             "presence": start("presence", "presence", {}, tmp_path)}
    yield procs
    for proc in procs.values():
        proc.check_clean()


def run(*targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *targets], capture_output=True,
                          text=True, timeout=60)


def test_every_service_serving_passes(services: dict[str, Proc]) -> None:
    done = run(*(f"{name}={proc.address}" for name, proc in services.items()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"table {services['table'].address}: SERVING" in done.stdout
    assert done.stdout.strip().endswith("all services SERVING")


def test_one_service_down_fails(services: dict[str, Proc]) -> None:
    gone = f"127.0.0.1:{free_port()}"
    done = run("--timeout", "0.5", f"table={services['table'].address}", f"scoring={gone}")
    assert done.returncode == 1
    assert f"scoring {gone}: DEADLINE_EXCEEDED" in done.stdout or "UNAVAILABLE" in done.stdout
    assert "1 not SERVING" in done.stdout


def test_no_target_is_a_usage_error() -> None:
    assert run().returncode == 2
