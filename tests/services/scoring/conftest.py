"""Fixtures for the scoring tests: a database per test (SQLite file or PostgreSQL schema) and
real `machiavelox scoring` processes on loopback, stopped with SIGTERM and checked at teardown.

PostgreSQL is the machine's server (MACHIAVELOX_TEST_PG_URL, default
postgresql://root@127.0.0.1:5432/test); each test gets a fresh schema, dropped afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from machiavelox._gen.v1 import scoring_pb2_grpc
from machiavelox.local.pki import session_pki
from machiavelox.local.processes import MACHIAVELOX, PARENT_PID, free_port, log_problems
from tests.support.health import wait_serving
from tests.support.internal import RoleChannels
from tests.support.pg import PG_URL as PG_URL  # re-exported: the tests connect to it too
from tests.support.pg import pg_schema

if TYPE_CHECKING:  # the async stub type exists in the .pyi only
    from machiavelox._gen.v1.scoring_pb2_grpc import ScoringServiceAsyncStub

SERVICE = "machiavelox.v1.ScoringService"
READY_DEADLINE_S = 15.0
STOP_DEADLINE_S = 15.0
# While the process starts, the channel's connection attempts fail; gRPC's default backoff
# (1 s and up) would then delay readiness by a second.
FAST_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 50), ("grpc.min_reconnect_backoff_ms", 50),
                  ("grpc.max_reconnect_backoff_ms", 200)]


@dataclass(frozen=True)
class Backend:
    kind: str  # "sqlite" or "postgres"
    url: str
    schema: str = ""  # PostgreSQL: the test's schema, also the service's application_name


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield Backend("sqlite", f"sqlite:///{tmp_path / 'scoring.sqlite3'}")
        return
    with pg_schema("test_scoring") as (url, schema):
        yield Backend("postgres", url, schema)


class ScoringProcess:
    """One `machiavelox scoring` process and channels to it (mTLS: `stub` calls each method
    as a role allowed to, `channels(role)` as a given role)."""

    def __init__(self, url: str, workdir: Path, name: str, env: dict[str, str]) -> None:
        self.url = url
        self.workdir = workdir
        self.name = name
        self.extra_env = env
        self.popen: subprocess.Popen[bytes] | None = None
        self.channels: RoleChannels | None = None
        self.stub: ScoringServiceAsyncStub
        self.log_paths: list[Path] = []

    async def start(self) -> None:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
        env.update({
            "MACHIAVELOX_SCORING_HOST": "127.0.0.1",
            "MACHIAVELOX_SCORING_PORT": str(port),
            "MACHIAVELOX_SCORING_DATABASE_URL": self.url,
            "MACHIAVELOX_DATA_DIR": str(self.workdir / "data"),
            "MACHIAVELOX_GRACE_S": "3",
            **session_pki().env("scoring"),
            **self.extra_env,
            PARENT_PID: str(os.getpid()),  # it stops if the test run dies
        })
        log_path = self.workdir / f"{self.name}-{len(self.log_paths) + 1}.log"
        self.log_paths.append(log_path)
        with log_path.open("wb") as stderr:
            self.popen = subprocess.Popen(
                [*MACHIAVELOX, "scoring"], env=env,
                cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr)
        self.channels = RoleChannels(f"127.0.0.1:{port}", "scoring", options=FAST_RECONNECT)
        self.stub = cast("ScoringServiceAsyncStub",
                         self.channels.stub(scoring_pb2_grpc.ScoringServiceStub, SERVICE))
        await wait_serving(self.channels("results-reader"), SERVICE, self.popen, self.name,
                           self.log_text, READY_DEADLINE_S)

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log_text(self) -> str:
        return self.log_paths[-1].read_text(errors="replace") if self.log_paths else ""

    def error_lines(self) -> list[str]:
        """ERROR or CRITICAL records, tracebacks and gRPC core errors of the current run."""
        return log_problems(self.log_text())

    async def _close_channel(self) -> None:
        if self.channels is not None:
            await self.channels.close()
            self.channels = None

    async def stop(self) -> None:
        """SIGTERM; the process must exit 0 without having logged an error."""
        assert self.popen is not None
        popen = self.popen
        if popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.to_thread(popen.wait, STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
            pytest.fail(f"{self.name} ignored SIGTERM for {STOP_DEADLINE_S} s:\n"
                        f"{self.log_text()}")
        finally:
            await self._close_channel()
        assert code == 0, f"{self.name} exited with {code}:\n{self.log_text()}"
        assert self.error_lines() == [], f"{self.name} logged errors:\n{self.log_text()}"

    async def kill(self) -> None:
        """SIGKILL: a crash, nothing flushed or closed."""
        assert self.popen is not None
        self.popen.kill()
        await asyncio.to_thread(self.popen.wait, STOP_DEADLINE_S)
        await self._close_channel()

    async def restart(self) -> None:
        await self.stop()
        await self.start()


Spawn = Callable[..., Awaitable[ScoringProcess]]


@pytest.fixture
async def spawn(backend: Backend, tmp_path: Path) -> AsyncIterator[Spawn]:
    """Start scoring processes on the test's database; every running one is stopped and
    checked at teardown."""
    started: list[ScoringProcess] = []

    async def start(**env: str) -> ScoringProcess:
        proc = ScoringProcess(backend.url, tmp_path, f"scoring{len(started) + 1}",
                              {f"MACHIAVELOX_{k.upper()}": v for k, v in env.items()})
        started.append(proc)
        await proc.start()
        return proc

    yield start
    failures = []
    for proc in started:
        if proc.running:
            try:
                await proc.stop()
            except AssertionError as exc:
                failures.append(str(exc))
        elif proc.channels is not None:
            await proc._close_channel()
    assert not failures, "\n".join(failures)


@pytest.fixture
async def scoring(spawn: Spawn) -> ScoringProcess:
    return await spawn()
