"""Service processes on this machine: free ports, start, wait for health, stop with SIGTERM.

Used by `machiavelox up` and by the end-to-end tests. `Proc.check_clean()` is the tests'
check that a service stopped gracefully: exit 0 after SIGTERM and no ERROR line in its log.

Internal services speak mutual TLS (platform/tls.py): `start` gives each process the
certificate of its role from a throwaway PKI (`local/pki.py`: the caller's, or this process's
`session_pki`) unless the environment already names one (or sets MACHIAVELOX_INTERNAL_TLS).
`channel` and `aio_channel` open a channel to a started service as a given role, the way
tests talk to internal services directly.

A `Proc` keeps the command and environment it was started with, so `Proc.respawn` can start it
again after a crash (`local/supervisor.py` does, for `machiavelox up`): same port, settings and
log file (appended to), and the same `Proc` object, its `popen` replaced. `Proc.stop` marks it
stopped on purpose: it is never respawned after that.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from machiavelox.platform.tls import InternalTls, TlsSettings, tls_env

from .pki import Pki, session_pki

MACHIAVELOX = [sys.executable, "-m", "machiavelox.cli"]
PARENT_PID = "MACHIAVELOX_PARENT_PID"
# Each command's certificate role is the command's name; its gRPC port is internal (mutual
# TLS) except these: the gateway's port is the public one, the controller's serves health only.
PLAINTEXT = frozenset({"gateway", "controller"})
_TLS_KEYS = tuple(tls_env("", "", ""))  # MACHIAVELOX_INTERNAL_TLS, MACHIAVELOX_TLS_*
# Respawned services are started from this one long-lived thread: a child's PR_SET_PDEATHSIG
# (cli.stop_with_parent) fires when the *thread* that forked it ends, so a respawn from a
# short-lived thread (a supervisor's, stopped before the cluster is) would stop the service.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="machiavelox-spawn")


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


# Processes that call the others, stopped first (`check_all_clean`): a server stopping while a
# caller's stream into it is open (a gateway's link into a shard) waits its whole grace for it.
CALLERS_FIRST = ("bot-host", "gateway", "matchmaking", "controller")


def stop_order(proc: Proc) -> int:
    """0 for the callers (in `CALLERS_FIRST` order), then everything else."""
    for rank, prefix in enumerate(CALLERS_FIRST):
        if proc.name.startswith(prefix):
            return rank
    return len(CALLERS_FIRST)


def check_all_clean(procs: Iterable[Proc]) -> None:
    """Stop every process (all of them, whatever fails), the callers first (`stop_order`; the
    others in the order given), then fail if any did not stop cleanly (exit 0 after SIGTERM, no
    ERROR line): for test fixtures."""
    problems = []
    for proc in sorted(procs, key=stop_order):
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
    server_role: str = ""  # the role its port's certificate names; "" = a plaintext port
    pki: Pki | None = None  # the PKI whose certificates it got (None: the caller's own files)
    tls_env: dict[str, str] = field(default_factory=dict)  # its MACHIAVELOX_*TLS* settings
    argv: list[str] = field(default_factory=list)  # its command line ([]: cannot respawn)
    spawn_env: dict[str, str] = field(default_factory=dict, repr=False)  # its whole environment
    stopped: bool = False  # stopped on purpose (`stop`): never respawned
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def logs(self) -> list[dict[str, object]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"level": "RAW", "msg": line})
        return out

    def stop(self, timeout: float = 15.0) -> int:
        with self.lock:  # no respawn from now on, nor one half done
            self.stopped = True
            popen = self.popen
        if popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(timeout)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
                raise AssertionError(f"{self.name} did not stop on SIGTERM") from None
        return popen.returncode

    def respawn(self) -> bool:
        """Start its command again, with the same environment (port, settings, certificate),
        its stderr appended to the same log; `popen` becomes the new process. False, and
        nothing started, if it was stopped on purpose or is still running."""
        if not self.argv:
            raise ValueError(f"{self.name} was not started by `start`: its command is unknown")
        with self.lock:
            if self.stopped or self.popen.poll() is None:
                return False
            self.popen = _SPAWNER.submit(
                spawn, self.argv, self.spawn_env, self.log_path, True).result()
            return True

    def check_clean(self) -> None:
        code = self.stop()
        assert code == 0, f"{self.name} exited {code}: {self.log_path.read_text()[-2000:]}"
        if not self.allow_errors:
            errors = [r for r in self.logs() if r.get("level") in ("ERROR", "CRITICAL")]
            assert not errors, f"{self.name} logged errors: {errors}"


def with_certificate(env: dict[str, str], role: str, pki: Pki | None = None,
                     ) -> tuple[dict[str, str], Pki | None]:
    """`env` with the TLS settings of a process of `role`: those of `pki` when given, else
    the ones `env` has, else `session_pki()`'s; and the PKI used (None: `env`'s own)."""
    if pki is None and any(env.get(key) for key in _TLS_KEYS):
        return env, None
    chosen = pki or session_pki()
    return {**env, **chosen.env(role)}, chosen


def start(name: str, command: str, env: dict[str, str], tmp: Path,
          allow_errors: bool = False, wait: bool = True, pki: Pki | None = None) -> Proc:
    """Start `machiavelox <command>` with `env` (MACHIAVELOX_* settings) and wait for health.
    The process gets the certificate of its role (`with_certificate`)."""
    port_key = {"table": "TABLE_PORT", "gateway": "GATEWAY_PORT", "scoring": "SCORING_PORT",
                "presence": "PRESENCE_PORT", "matchmaking": "MATCHMAKING_PORT",
                "bot-host": "BOT_HOST_PORT"}[command]
    # the child asks to get SIGTERM when this process dies (cli.stop_with_parent), so a killed
    # test run or `machiavelox up` never leaves services behind
    full, used = with_certificate({**os.environ, **env}, command, pki)
    full[PARENT_PID] = str(os.getpid())
    port = int(full.get(f"MACHIAVELOX_{port_key}", "0")) or free_port()
    full[f"MACHIAVELOX_{port_key}"] = str(port)
    full.setdefault("MACHIAVELOX_DATA_DIR", str(tmp / f"{name}-data"))  # (a shard's journal)
    log_path = tmp / f"{name}.log"
    argv = [*MACHIAVELOX, command]
    proc = Proc(name, spawn(argv, full, log_path), f"127.0.0.1:{port}", log_path,
                allow_errors, env, server_role="" if command in PLAINTEXT else command,
                pki=used, tls_env={k: full[k] for k in _TLS_KEYS if k in full}, argv=argv,
                spawn_env=full)
    if wait:
        wait_healthy(proc)
    return proc


def spawn(argv: list[str], env: dict[str, str], log_path: Path,
          append: bool = False) -> subprocess.Popen[bytes]:
    """Start `argv` in its own session, its stderr (the JSON logs) to `log_path`."""
    with log_path.open("ab" if append else "wb") as log:  # the child keeps its own copy
        return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log,
                                start_new_session=True)


def credentials(proc: Proc, role: str) -> InternalTls:
    """The credentials of `role` for calls to `proc` (from the PKI it got its own from)."""
    if not proc.server_role or TlsSettings.from_env(proc.tls_env).mode == "off":
        return InternalTls.off()  # a plaintext port, or MACHIAVELOX_INTERNAL_TLS=off
    if proc.pki is None:
        raise ValueError(f"{proc.name} was started with its own certificate files: open "
                         "channels to it with InternalTls")
    return _role_tls(proc.pki, role)


@functools.cache
def _role_tls(pki: Pki, role: str) -> InternalTls:
    return pki.tls(role)


def channel(proc: Proc, role: str) -> grpc.Channel:
    """A blocking channel to `proc` presenting the certificate of `role` (plaintext to the
    gateway's public port)."""
    return credentials(proc, role).sync_channel(proc.address, proc.server_role or "gateway")


def aio_channel(proc: Proc, role: str,
                options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """An asyncio channel to `proc` as `role` (`options`: gRPC channel options)."""
    return credentials(proc, role).channel(proc.address, proc.server_role or "gateway",
                                           options=options)


def wait_healthy(proc: Proc, timeout: float = 20.0) -> None:
    # its own certificate will do: the health service is open to every role
    tls = (InternalTls.from_env(env=proc.tls_env) if proc.server_role and proc.tls_env
           else InternalTls.off())
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise AssertionError(f"{proc.name} exited: {proc.log_path.read_text()[-3000:]}")
        try:
            with tls.sync_channel(proc.address, proc.server_role or "gateway") as ch:
                reply = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(service=""), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError:
            pass
        time.sleep(0.1)
    proc.stop()
    raise AssertionError(f"{proc.name} not healthy in {timeout} s: {proc.log_path.read_text()}")
