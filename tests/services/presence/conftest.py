"""Fixtures: real `machiavelox presence` processes on loopback, and an isolated Redis prefix."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from machiavelox._gen.v1 import presence_pb2, presence_pb2_grpc
from machiavelox.local.pki import session_pki
from machiavelox.local.processes import MACHIAVELOX, PARENT_PID, free_port, log_problems
from tests.support.health import wait_serving
from tests.support.internal import RoleChannels

REDIS_URL = "redis://127.0.0.1:6379/0"
SERVICE = "machiavelox.v1.PresenceService"
SILENCE_MS = 400
"""Small, so tests are fast; the test heartbeats every 80 ms, a fifth of it."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path
    channels: RoleChannels  # mTLS, as gateways and shards call it
    stub: presence_pb2_grpc.PresenceServiceAsyncStub

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


class Launcher:
    """Starts presence processes with a common environment; stops and checks them at the end."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.replicas: list[Replica] = []

    async def start(self, **extra: str) -> Replica:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
        env.update(session_pki().env("presence"))
        env.update(self.env)
        env.update(extra)
        env["MACHIAVELOX_PRESENCE_PORT"] = str(port)
        env["MACHIAVELOX_PRESENCE_HOST"] = "127.0.0.1"
        env[PARENT_PID] = str(os.getpid())  # it stops if the test run dies
        stderr_path = self.workdir / f"presence-{port}.stderr"
        with stderr_path.open("wb") as err:
            proc = subprocess.Popen([*MACHIAVELOX, "presence"], env=env,
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        channels = RoleChannels(f"127.0.0.1:{port}", "presence")
        stub = cast("presence_pb2_grpc.PresenceServiceAsyncStub",
                    channels.stub(presence_pb2_grpc.PresenceServiceStub, SERVICE))
        replica = Replica(proc, port, stderr_path, channels, stub)
        self.replicas.append(replica)
        await wait_serving(channels("gateway"), SERVICE, proc, "presence", replica.stderr)
        return replica

    async def stop(self, replica: Replica, timeout_s: float = 15.0) -> int:
        """SIGTERM, wait, and return the exit code (killing it after `timeout_s`)."""
        await replica.channels.close()
        if replica.proc.poll() is None:
            replica.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.to_thread(replica.proc.wait, timeout_s)
        except subprocess.TimeoutExpired:
            replica.proc.kill()
            replica.proc.wait()
            pytest.fail(f"presence ignored SIGTERM for {timeout_s} s:\n{replica.stderr()}")

    async def stop_all_and_check(self) -> None:
        failures = []
        for replica in self.replicas:
            code = await self.stop(replica)
            log = replica.stderr()
            if code != 0:
                failures.append(f"port {replica.port}: exit code {code}\n{log}")
            bad = log_problems(log)
            if bad:
                failures.append(f"port {replica.port}: error lines\n" + "\n".join(bad))
        if failures:
            pytest.fail("\n\n".join(failures))


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    prefix = f"mxv-test-{uuid.uuid4().hex[:12]}:"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def redis_keys(prefix: str) -> list[str]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return sorted(client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def backend_env(backend: str, redis_prefix: str) -> dict[str, str]:
    env = {"MACHIAVELOX_PRESENCE_SILENCE_MS": str(SILENCE_MS),
           "MACHIAVELOX_LOG_LEVEL": "INFO", "MACHIAVELOX_GRACE_S": "2"}
    if backend == "redis":
        env["MACHIAVELOX_PRESENCE_REDIS_URL"] = REDIS_URL
        env["MACHIAVELOX_PRESENCE_KEY_PREFIX"] = redis_prefix
    return env


@pytest.fixture
async def launcher(tmp_path: Path, backend_env: dict[str, str]) -> AsyncIterator[Launcher]:
    launch = Launcher(tmp_path, backend_env)
    try:
        yield launch
    finally:
        await launch.stop_all_and_check()


class ChangeStream:
    """A WatchLiveness call read by a background task, so waiting with a timeout is safe."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.queue: asyncio.Queue[presence_pb2.LivenessChange | BaseException | None] = (
            asyncio.Queue())
        self.task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for reply in self.call:
                await self.queue.put(reply.change)
            await self.queue.put(None)
        except BaseException as exc:  # handed to the test, including cancellation
            await self.queue.put(exc)
            raise

    async def next(self, timeout_s: float = 5.0) -> presence_pb2.LivenessChange:
        item = await asyncio.wait_for(self.queue.get(), timeout_s)
        if isinstance(item, BaseException):
            raise item
        assert item is not None, "the watch stream ended"
        return item

    async def expect_end(self, timeout_s: float = 5.0) -> None:
        item = await asyncio.wait_for(self.queue.get(), timeout_s)
        if isinstance(item, BaseException):
            raise item
        assert item is None, f"expected the end of the stream, got {item}"

    async def expect_nothing(self, for_s: float) -> None:
        try:
            item = await asyncio.wait_for(self.queue.get(), for_s)
        except TimeoutError:
            return
        pytest.fail(f"unexpected item on the watch stream: {item}")

    async def close(self) -> None:
        self.call.cancel()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
