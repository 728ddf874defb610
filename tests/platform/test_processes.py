"""Service processes started by `machiavelox.local.processes` never outlive what started them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

STARTER = """
import pathlib, sys, time
from machiavelox.local.processes import start
proc = start("orphan", "presence", {}, pathlib.Path(sys.argv[1]))
print(proc.popen.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is gone for our purpose
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_service_stops_when_its_starter_is_killed(tmp_path: Path) -> None:
    starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)],
                               stdout=subprocess.PIPE, text=True)
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    assert alive(pid)
    starter.send_signal(signal.SIGKILL)  # no cleanup code runs in the starter
    starter.wait()
    deadline = time.monotonic() + 20
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "the service outlived the process that started it"
