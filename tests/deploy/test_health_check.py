"""The `helm test` script (helm/machiavelox/files/health-check.py) against real services: it
passes only when every one answers SERVING on the standard health service. It checks each
service's plaintext health port (MACHIAVELOX_HEALTH_PORT, the one the probes use: the gRPC
port takes mutual TLS only)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import Proc, free_port, start
from tests.deploy.chart import CHART

SCRIPT = CHART / "files" / "health-check.py"


def health_address(proc: Proc) -> str:
    return f"127.0.0.1:{proc.env['MACHIAVELOX_HEALTH_PORT']}"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    procs = {"table": start("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                               "MACHIAVELOX_HEALTH_PORT": str(free_port())},
                            tmp_path),
             "presence": start("presence", "presence",
                               {"MACHIAVELOX_HEALTH_PORT": str(free_port())}, tmp_path)}
    yield procs
    for proc in procs.values():
        proc.check_clean()


def run(*targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *targets], capture_output=True,
                          text=True, timeout=60)


def test_every_service_serving_passes(services: dict[str, Proc]) -> None:
    done = run(*(f"{name}={health_address(proc)}" for name, proc in services.items()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"table {health_address(services['table'])}: SERVING" in done.stdout
    assert done.stdout.strip().endswith("all services SERVING")


def test_one_service_down_fails(services: dict[str, Proc]) -> None:
    gone = f"127.0.0.1:{free_port()}"
    done = run("--timeout", "0.5", f"table={health_address(services['table'])}",
               f"scoring={gone}")
    assert done.returncode == 1
    assert f"scoring {gone}: DEADLINE_EXCEEDED" in done.stdout or "UNAVAILABLE" in done.stdout
    assert "1 not SERVING" in done.stdout


def test_no_target_is_a_usage_error() -> None:
    assert run().returncode == 2


def test_the_grpc_port_refuses_a_plaintext_check(services: dict[str, Proc]) -> None:
    """The probes need the health port: the gRPC port completes no plaintext handshake."""
    done = run("--timeout", "1", f"table={services['table'].address}")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].endswith(("UNAVAILABLE", "DEADLINE_EXCEEDED")), done.stdout
