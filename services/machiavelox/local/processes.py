"""Service processes on this machine: free ports, start, wait for health, stop with SIGTERM.

Used by `machiavelox up` and by the end-to-end tests. `Proc.check_clean()` is the tests'
check that a service stopped gracefully: exit 0 after SIGTERM and no ERROR line in its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

MACHIAVELOX = [sys.executable, "-m", "machiavelox.cli"]
PARENT_PID = "MACHIAVELOX_PARENT_PID"


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` different free ports (each socket stays bound until all are chosen: calling
    `free_port` repeatedly may give the same port twice)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


def check_all_clean(procs: Iterable[Proc]) -> None:
    """Stop every process (all of them, whatever fails), then fail if any did not stop cleanly
    (exit 0 after SIGTERM, no ERROR line): for test fixtures."""
    problems = []
    for proc in procs:
        try:
            proc.check_clean()
        except AssertionError as err:
            problems.append(str(err))
    assert not problems, "\n".join(problems)


def log_problems(text: str) -> list[str]:
    """The lines of a JSON-lines log that show trouble: ERROR/CRITICAL records, and raw lines
    that look like a crash (a traceback, a gRPC core error, an ERROR word)."""
    bad = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            if "Traceback" in line or line.startswith("E0") or "ERROR" in line:
                bad.append(line)
            continue
        if not isinstance(record, dict) or record.get("level") in ("ERROR", "CRITICAL"):
            bad.append(line)
    return bad


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    address: str
    log_path: Path
    allow_errors: bool = False
    env: dict[str, str] = field(default_factory=dict)

    def logs(self) -> list[dict[str, object]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"level": "RAW", "msg": line})
        return out

    def stop(self, timeout: float = 15.0) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
                raise AssertionError(f"{self.name} did not stop on SIGTERM") from None
        return self.popen.returncode

    def check_clean(self) -> None:
        code = self.stop()
        assert code == 0, f"{self.name} exited {code}: {self.log_path.read_text()[-2000:]}"
        if not self.allow_errors:
            errors = [r for r in self.logs() if r.get("level") in ("ERROR", "CRITICAL")]
            assert not errors, f"{self.name} logged errors: {errors}"


def start(name: str, command: str, env: dict[str, str], tmp: Path,
          allow_errors: bool = False, wait: bool = True) -> Proc:
    """Start `machiavelox <command>` with `env` (MACHIAVELOX_* settings) and wait for health."""
    port_key = {"table": "TABLE_PORT", "gateway": "GATEWAY_PORT", "scoring": "SCORING_PORT",
                "presence": "PRESENCE_PORT", "matchmaking": "MATCHMAKING_PORT"}[command]
    # the child asks to get SIGTERM when this process dies (cli.stop_with_parent), so a killed
    # test run or `machiavelox up` never leaves services behind
    full = {**os.environ, **env, PARENT_PID: str(os.getpid())}
    port = int(full.get(f"MACHIAVELOX_{port_key}", "0")) or free_port()
    full[f"MACHIAVELOX_{port_key}"] = str(port)
    log_path = tmp / f"{name}.log"
    popen = subprocess.Popen([*MACHIAVELOX, command], env=full,
                             stdout=subprocess.DEVNULL, stderr=log_path.open("wb"),
                             start_new_session=True)
    proc = Proc(name, popen, f"127.0.0.1:{port}", log_path, allow_errors, env)
    if wait:
        wait_healthy(proc)
    return proc


def wait_healthy(proc: Proc, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise AssertionError(f"{proc.name} exited: {proc.log_path.read_text()[-3000:]}")
        try:
            with grpc.insecure_channel(proc.address) as ch:
                reply = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    proc.stop()
    raise AssertionError(f"{proc.name} not healthy in {timeout} s: {proc.log_path.read_text()}")
