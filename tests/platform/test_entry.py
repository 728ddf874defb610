"""The entry point every command shares (platform/entry.py), run as a real `machiavelox`
process: `--help` prints the usage and, for a service, every setting it reads, and exits 0
without starting anything (its ports are held by the test: a service that tried to listen
would fail); a bad setting exits 2 with one line on stderr, no traceback."""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.local.processes import MACHIAVELOX
from machiavelox.platform.entry import documented, mentioned, settings_read

SERVICES = {"gateway": "GATEWAY_PORT", "table": "TABLE_PORT",
            "matchmaking": "MATCHMAKING_PORT", "scoring": "SCORING_PORT",
            "presence": "PRESENCE_PORT", "controller": "CONTROLLER_PORT",
            "bot-host": "BOT_HOST_PORT"}
# where a service's settings live, when not in machiavelox.<command>.settings
SETTINGS_MODULE = {"bot-host": "machiavelox.bots.host_settings"}
COMMANDS = [*SERVICES, "up", "bots"]
# A few settings each --help must name, whatever else it says.
EXPECTED = {
    "gateway": ["MACHIAVELOX_GATEWAY_SHARDS", "MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT"],
    "table": ["MACHIAVELOX_TABLE_CAPACITY", "MACHIAVELOX_TABLE_DRAIN_S"],
    "matchmaking": ["MACHIAVELOX_MATCHMAKING_SHARDS", "MACHIAVELOX_MATCHMAKING_TICK_MS"],
    "scoring": ["MACHIAVELOX_SCORING_DATABASE_URL"],
    "presence": ["MACHIAVELOX_PRESENCE_REDIS_URL", "MACHIAVELOX_PRESENCE_SILENCE_MS"],
    "controller": ["MACHIAVELOX_CONTROLLER_STATEFULSET", "MACHIAVELOX_CONTROLLER_BUFFER"],
    "bot-host": ["MACHIAVELOX_BOT_HOST_MAX_BOTS", "MACHIAVELOX_BOT_HOST_GATEWAY_ADDRESS"],
}
EVERY_SERVICE = ["MACHIAVELOX_GRACE_S", "MACHIAVELOX_LOG_LEVEL", "MACHIAVELOX_METRICS_PORT",
                 "MACHIAVELOX_REFLECTION", "OTEL_TRACES_SAMPLER", "OTEL_EXPORTER_OTLP_ENDPOINT"]


@contextlib.contextmanager
def held_ports(count: int) -> Iterator[list[int]]:
    """Ports this test listens on (without SO_REUSEPORT: nobody else can bind them)."""
    with contextlib.ExitStack() as stack:
        ports = []
        for _ in range(count):
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            s.listen()
            ports.append(int(s.getsockname()[1]))
        yield ports


def clean_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MACHIAVELOX_", "OTEL_"))}
    return {**env, **{f"MACHIAVELOX_{k}": v for k, v in settings.items()}}


def run(command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MACHIAVELOX, command, *args], env=env, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_prints_the_usage_and_starts_nothing(command: str) -> None:
    with held_ports(2) as (port, metrics_port):
        settings = {"METRICS_PORT": str(metrics_port)}
        if command in SERVICES:
            settings[SERVICES[command]] = str(port)
        done = run(command, "--help", env=clean_env(**settings))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: machiavelox {command}"), done.stdout[:200]
    assert done.stderr == "", "nothing started, nothing logged"
    if command not in SERVICES:
        return
    names = mentioned(done.stdout)
    for name in [*EXPECTED[command], *EVERY_SERVICE]:
        assert name in names, f"{command} --help does not name {name}"
    module = importlib.import_module(
        SETTINGS_MODULE.get(command, f"machiavelox.{command}.settings"))
    unlisted = [n for n in settings_read(module) if n not in names]
    assert unlisted == [], f"{command} --help misses settings its code reads"
    assert "exit codes:" in done.stdout


@pytest.mark.parametrize("command", list(SERVICES))
def test_a_bad_setting_exits_2_with_one_line(command: str) -> None:
    done = run(command, env=clean_env(**{SERVICES[command]: "not-a-port",
                                         "CONTROLLER_STATEFULSET": "shards",
                                         "CONTROLLER_SHARDS": "shards-0=127.0.0.1:1"}))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"machiavelox {command}: "), done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_setting_read_while_starting_exits_2_too() -> None:
    """MACHIAVELOX_REFLECTION is read as the server is built, inside `serve`."""
    with held_ports(2) as (port, metrics_port):
        done = run("table", env=clean_env(TABLE_PORT=str(port), METRICS_PORT=str(metrics_port),
                                          INTERNAL_TLS="off", REFLECTION="maybe"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(
        "machiavelox table: MACHIAVELOX_REFLECTION must be true or false")
    assert "Traceback" not in done.stderr


def test_a_bad_argument_exits_2_with_the_usage() -> None:
    done = run("presence", "--no-such-flag", env=clean_env())
    assert done.returncode == 2
    assert "usage: machiavelox presence" in done.stderr and "Traceback" not in done.stderr


# ---------------------------------------------------------------------------------- in process
def test_a_setting_is_documented_with_its_continuation_lines() -> None:
    import machiavelox.controller.settings as controller

    [entry] = [e for e in documented(controller) if e.startswith(
        "MACHIAVELOX_CONTROLLER_INTERVAL_S")]
    assert "seconds between rounds" in entry and "StatefulSet starts one at once" in entry


def test_short_forms_are_spelled_out() -> None:
    text = ("MACHIAVELOX_GATEWAY_ACTION_RATE/_BURST, _RESYNC_RATE/_BURST and "
            "MACHIAVELOX_X_{A,B}_RATE")
    assert mentioned(text) == {
        "MACHIAVELOX_GATEWAY_ACTION_RATE", "MACHIAVELOX_GATEWAY_ACTION_BURST",
        "MACHIAVELOX_GATEWAY_RESYNC_RATE", "MACHIAVELOX_GATEWAY_RESYNC_BURST",
        "MACHIAVELOX_X_A_RATE", "MACHIAVELOX_X_B_RATE"}


def test_sigterm_while_starting_stops_cleanly(tmp_path: Path) -> None:
    """A shard still starting (its journal's PostgreSQL is a socket this test holds, which
    accepts and never answers) gets SIGTERM: it stops at once, exit code 0, as a serving one
    does (a supervisor or Kubernetes may stop a service it has just restarted). Would fail
    with Python's default SIGTERM, which ends it by the signal (exit -15)."""
    with held_ports(3) as (silent, port, metrics_port):
        env = clean_env(TABLE_PORT=str(port), METRICS_PORT=str(metrics_port),
                        INTERNAL_TLS="off", DATA_DIR=str(tmp_path), SCORING_ADDRESS="",
                        PRESENCE_ADDRESS="",
                        TABLE_JOURNAL=f"postgresql://test@127.0.0.1:{silent}/test",
                        TABLE_JOURNAL_TIMEOUT_S="30")
        proc = subprocess.Popen([*MACHIAVELOX, "table"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)  # (its imports done: waiting for the silent journal)
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                proc.stderr.close()
