"""The supervisor of `machiavelox up` restarts a crashed service in place, leaves deliberately
stopped ones alone, and gives up on a crash loop (real processes on loopback)."""

from __future__ import annotations

import io
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from machiavelox.local.processes import check_all_clean, start, wait_healthy
from machiavelox.local.supervisor import CrashHistory, Policy, Supervisor, describe_exit
from machiavelox.local.up import launch, stop_all

FAST = Policy(first_delay_s=0.01, max_delay_s=0.05, max_restarts=3)


def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not {what} after {timeout} s"
        time.sleep(0.05)


def test_a_killed_shard_comes_back_on_its_port_and_a_stopped_service_stays_down(
        tmp_path: Path) -> None:
    procs = launch(0, tmp_path, tmp_path, time_scale=1.0)
    out = io.StringIO()
    try:
        with Supervisor(procs, out=out) as supervisor:
            shard = procs["shard-0"]
            address, first = shard.address, shard.popen.pid
            os.kill(first, signal.SIGKILL)
            until(lambda: shard.popen.pid != first, "restarted")
            wait_healthy(shard)  # SERVING again, on the same port
            assert shard.address == address
            assert supervisor.restarts("shard-0") == 1
            [line] = out.getvalue().splitlines()
            assert "shard-0 killed by SIGKILL" in line and "restart 1" in line
            assert "shard-0 killed by SIGKILL" in shard.log_path.read_text()

            matchmaking = procs["matchmaking"]  # stopped on purpose while watched
            pid = matchmaking.popen.pid
            assert matchmaking.stop() == 0
            until(lambda: "matchmaking" in supervisor.stopped(), "seen stopped")
            assert matchmaking.popen.pid == pid and supervisor.restarts("matchmaking") == 0
        pids = {name: proc.popen.pid for name, proc in procs.items()}
    finally:
        bad = stop_all(procs)  # the restarted shard is the one `procs` holds
    assert bad == []
    assert {name: proc.popen.pid for name, proc in procs.items()} == pids
    assert all(proc.popen.poll() is not None for proc in procs.values())
    assert {n: supervisor.restarts(n) for n in procs} == {**dict.fromkeys(procs, 0),
                                                          "shard-0": 1}
    assert len(out.getvalue().splitlines()) == 1, "the deliberate stops restarted nothing"


def test_a_crash_loop_is_given_up_and_the_others_keep_running(tmp_path: Path) -> None:
    good = start("presence", "presence", {}, tmp_path)
    bad = start("bad", "presence", {"MACHIAVELOX_LOG_LEVEL": "LOUD"}, tmp_path,
                      wait=False)  # a bad setting: exits 2 at once, every time
    out = io.StringIO()
    try:
        with Supervisor([good, bad], policy=FAST, out=out) as supervisor:
            until(lambda: supervisor.given_up() == {"bad"}, "given up")
            assert supervisor.restarts("bad") == FAST.max_restarts
            assert bad.popen.poll() == 2
            assert good.popen.poll() is None and supervisor.restarts("presence") == 0
        lines = out.getvalue().splitlines()
        assert len(lines) == FAST.max_restarts + 1
        assert all("bad exited 2" in line for line in lines)
        assert "giving up" in lines[-1] and "giving up" not in lines[-2]
        assert bad.log_path.read_text().count("must be one of") == FAST.max_restarts + 1
    finally:
        bad.stop()
        check_all_clean([good])


def test_the_backoff_doubles_to_its_cap_and_starts_over_after_a_long_run() -> None:
    policy = Policy(first_delay_s=0.5, max_delay_s=10, reset_after_s=60, max_restarts=100,
                    window_s=60)
    history = CrashHistory(started=0.0)
    now, delays = 0.0, []
    for _ in range(7):  # crashes 1 s after each restart
        now += 1
        delay = history.on_exit(now, policy)
        assert delay is not None
        delays.append(delay)
        now += delay
        history.restarted(now)
    assert delays == [0.5, 1, 2, 4, 8, 10, 10]
    assert history.on_exit(now + 61, policy) == 0.5  # up a minute: a new series


def test_more_restarts_than_the_limit_within_the_window_give_up() -> None:
    policy = Policy(max_restarts=5, window_s=60)
    history = CrashHistory(started=0.0)
    for at in range(5):
        assert history.on_exit(at * 10.0, policy) is not None
        history.restarted(at * 10.0 + 1)
    assert history.on_exit(50.0, policy) is None  # a 6th restart within 60 s of the 1st
    assert history.on_exit(62.0, policy) is not None  # the first has left the window


def test_exits_are_described_by_code_or_signal() -> None:
    assert describe_exit(2) == "exited 2"
    assert describe_exit(-signal.SIGKILL) == "killed by SIGKILL"
