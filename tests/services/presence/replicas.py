"""Presence processes and streams for tests (tests/services/presence, tests/faults): real
`machiavelox presence` processes on loopback, a WatchLiveness stream read by a task, and the
Redis key prefix of a test."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
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


def new_prefix() -> str:
    return f"mxv-test-{uuid.uuid4().hex[:12]}:"


def redis_keys(prefix: str) -> list[str]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return sorted(client.scan_iter(match=prefix + "*", count=1000))
    finally:
        client.close()


def delete_prefix(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=prefix + "*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@dataclass
class Replica:
    proc: subprocess.Popen[bytes]
    port: int
    stderr_path: Path
    channels: RoleChannels  # mTLS, as gateways and shards call it
    stub: presence_pb2_grpc.PresenceServiceAsyncStub
    started: float  # time.monotonic() when it was launched

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")


class Launcher:
    """Starts presence processes with a common environment; stops and checks them at the end."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self.workdir = workdir
        self.env = env
        self.replicas: list[Replica] = []

    async def start(self, port: int = 0, env: dict[str, str] | None = None, **extra: str
                    ) -> Replica:
        """A replica on `port` (0: a free one), with `env` and `extra` over the common
        environment."""
        extra = {**(env or {}), **extra}
        port = port or free_port()
        full = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
        full.update(session_pki().env("presence"))
        full.update(self.env)
        full.update(extra)
        full["MACHIAVELOX_PRESENCE_PORT"] = str(port)
        full["MACHIAVELOX_PRESENCE_HOST"] = "127.0.0.1"
        full[PARENT_PID] = str(os.getpid())  # it stops if the test run dies
        stderr_path = self.workdir / f"presence-{port}-{len(self.replicas)}.stderr"
        started = time.monotonic()
        with stderr_path.open("wb") as err:
            proc = subprocess.Popen([*MACHIAVELOX, "presence"], env=full,
                                    stdin=subprocess.DEVNULL, stdout=err, stderr=err)
        channels = RoleChannels(f"127.0.0.1:{port}", "presence")
        stub = cast("presence_pb2_grpc.PresenceServiceAsyncStub",
                    channels.stub(presence_pb2_grpc.PresenceServiceStub, SERVICE))
        replica = Replica(proc, port, stderr_path, channels, stub, started)
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


async def heartbeat(replica: Replica, player: str) -> int:
    reply = await replica.stub.Heartbeat(presence_pb2.HeartbeatRequest(player_id=player),
                                         timeout=5)
    at: int = reply.at_ms
    return at


class Heard:
    """A LivenessChange and when the test read it (time.monotonic())."""

    def __init__(self, change: presence_pb2.LivenessChange, at: float) -> None:
        self.change = change
        self.at = at

    @property
    def kind(self) -> str:
        if self.change.unknown:
            return "unknown"
        return "alive" if self.change.alive else "silent"


class ChangeStream:
    """A WatchLiveness call read by a background task, so waiting with a timeout is safe;
    every change is also kept in `heard`, with when it was read."""

    def __init__(self, call: Any) -> None:
        self.call = call
        self.heard: list[Heard] = []
        self.queue: asyncio.Queue[presence_pb2.LivenessChange | BaseException | None] = (
            asyncio.Queue())
        self.task = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        try:
            async for reply in self.call:
                self.heard.append(Heard(reply.change, time.monotonic()))
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

    async def until(self, player: str, kind: str, timeout_s: float = 10.0
                    ) -> presence_pb2.LivenessChange:
        """Read on until `player`'s view is `kind` (alive, silent, unknown); fails after
        `timeout_s` (a bound, not a measurement) or 100 other changes."""
        return (await self.until_all({player: kind}, timeout_s))[player]

    async def until_each(self, players: list[str], kind: str, timeout_s: float = 10.0
                         ) -> dict[str, presence_pb2.LivenessChange]:
        """Read on until each of `players` has been `kind`, in any order (see `until`)."""
        return await self.until_all(dict.fromkeys(players, kind), timeout_s)

    async def until_all(self, wanted: dict[str, str], timeout_s: float = 10.0
                        ) -> dict[str, presence_pb2.LivenessChange]:
        """Read on until each player of `wanted` has been told its kind there, in any order;
        the first such change of each."""
        deadline = time.monotonic() + timeout_s
        found: dict[str, presence_pb2.LivenessChange] = {}
        read = len(self.heard)
        for _ in range(100 + len(wanted)):
            if len(found) == len(wanted):
                return found
            try:
                change = await self.next(max(0.01, deadline - time.monotonic()))
            except TimeoutError:
                break
            if wanted.get(change.player_id) == Heard(change, 0).kind:
                found.setdefault(change.player_id, change)
        heard = [f"{h.change.player_id}: {h.kind} {h.change.silent_for_ms}"
                 for h in self.heard[read:]]
        pytest.fail(f"not told {wanted} (missing {sorted(set(wanted) - set(found))}); "
                    f"heard meanwhile: {heard}")

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


@contextlib.asynccontextmanager
async def watching(replica: Replica, *players: str) -> AsyncIterator[ChangeStream]:
    stream = ChangeStream(replica.stub.WatchLiveness(
        presence_pb2.WatchLivenessRequest(player_ids=list(players))))
    try:
        yield stream
    finally:
        await stream.close()


class KeepAlive:
    """Heartbeats a player every `every_s`, like an app (a failed heartbeat is counted, and the
    next one comes anyway). `stop` lets a heartbeat in flight finish, so `last_sent` is when
    the last sign of life the server may have recorded was sent (time.monotonic())."""

    def __init__(self, replica: Replica, player: str, every_s: float) -> None:
        self.replica, self.player, self.every_s = replica, player, every_s
        self.last_at = 0
        self.last_sent = 0.0
        self.max_gap_s = 0.0  # the longest time between two heartbeats sent (the premise)
        self.failures: list[str] = []
        self.stopping = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while not self.stopping.is_set():
            sent = time.monotonic()
            if self.last_sent:
                self.max_gap_s = max(self.max_gap_s, sent - self.last_sent)
            self.last_sent = sent
            try:
                self.last_at = await heartbeat(self.replica, self.player)
            except Exception as exc:  # grpc.aio.AioRpcError, kept for the test
                code = getattr(exc, "code", None)
                self.failures.append(code().name if callable(code) else repr(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.every_s)

    async def stop(self) -> int:
        self.stopping.set()
        await self.task
        return self.last_at


def check_premise(keepers: list[KeepAlive], silence_ms: int) -> None:
    """The test's apps really did heartbeat well within the threshold (else a silence would be
    presence's right answer, not a fault): a machine too loaded to send them in time fails the
    test, saying so."""
    gaps = {k.player: round(k.max_gap_s, 2) for k in keepers}
    assert max(gaps.values()) < silence_ms / 1000 / 2, (
        f"the machine held the test's heartbeats back: gaps {gaps} s against a "
        f"{silence_ms} ms threshold; nothing can be judged")
