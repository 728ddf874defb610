"""The cluster bench's processes: helper processes spoken to in JSON lines, CPU accounting from
/proc (per process and for the machine), waiting for a quiet machine, and py-spy output read
into the hottest functions."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from bench_common import DISTURBED, OPTIONS, REPLY_TIMEOUT_S, helper_env


# ============================================================================ helper processes
class Helper:
    """A child process spoken to in JSON lines (stdin commands, stdout replies)."""

    def __init__(self, name: str, argv: list[str], log_dir: Path) -> None:
        self.name = name
        self.log_path = log_dir / f"{name}.log"
        self.popen = subprocess.Popen(
            [sys.executable, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log_path.open("wb"), text=True, start_new_session=True,
            env={**os.environ, **helper_env()})  # the services' PKI, for internal calls
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self._lines.put(line)
        self._lines.put("")  # the end

    @property
    def pid(self) -> int:
        return self.popen.pid

    def send(self, command: dict[str, Any]) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps(command) + "\n")
        self.popen.stdin.flush()

    def reply(self, timeout: float = REPLY_TIMEOUT_S) -> Any:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise RuntimeError(f"{self.name} did not answer in {timeout:.0f} s") from None
        if not line:
            raise RuntimeError(f"{self.name} died: {self.log_path.read_text()[-3000:]}")
        return json.loads(line) if line.strip() != "ready" else "ready"

    def ask(self, command: dict[str, Any]) -> Any:
        self.send(command)
        return self.reply()

    def stop(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(OSError):
                assert self.popen.stdin is not None
                self.popen.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def loadgen(name: str, log_dir: Path, gateway: str, shard: str, per_conn: int,
            via: str = "") -> Helper:
    return Helper(name, [str(Path(__file__).resolve().parent / "cluster_bench.py"), "--role",
                         "loadgen", "--name", name,
                         "--gateway", gateway, "--shard", shard, "--per-conn", str(per_conn),
                         "--via", via or OPTIONS["via"],
                         *([] if OPTIONS["batched"] else ["--single"])],
                  log_dir)


# ============================================================================ CPU sampling
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid: int) -> int:
    """utime + stime of a process (all its threads), in clock ticks."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, all cores."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuWindow:
    """CPU% of some processes between `begin()` and `end()` (100% = one core)."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids
        self._t0 = 0.0
        self._ticks: dict[str, int] = {}
        self._machine = (0, 0)

    def _sample(self) -> dict[str, int]:
        return {name: sum(cpu_ticks(p) for p in pids) for name, pids in self.pids.items()}

    def begin(self) -> None:
        self._t0 = time.monotonic()
        self._ticks = self._sample()
        self._machine = machine_ticks()

    def end(self) -> dict[str, float]:
        elapsed = time.monotonic() - self._t0
        ticks = self._sample()
        out = {name: 100.0 * (ticks[name] - self._ticks[name]) / CLK_TCK / elapsed
               for name in ticks}
        busy, total = machine_ticks()
        cores = os.cpu_count() or 1
        out["machine"] = 100.0 * cores * (busy - self._machine[0]) / max(1, total
                                                                         - self._machine[1])
        out["other"] = max(0.0, out["machine"] - sum(out[name] for name in ticks))
        return out


class CpuMeter:
    """CPU time of some processes per operation, in microseconds, over several intervals."""

    def __init__(self, pids: dict[str, list[int]]) -> None:
        self.pids = pids
        self._ticks: dict[str, int] = {}
        self.spent = dict.fromkeys(pids, 0)
        self.operations = 0

    def _sample(self) -> dict[str, int]:
        return {name: sum(cpu_ticks(p) for p in pids) for name, pids in self.pids.items()}

    def begin(self) -> None:
        self._ticks = self._sample()

    def end(self, operations: int) -> None:
        ticks = self._sample()
        for name in ticks:
            self.spent[name] += ticks[name] - self._ticks[name]
        self.operations += operations

    def per(self) -> dict[str, float]:
        return {name: 1e6 * spent / CLK_TCK / max(1, self.operations)
                for name, spent in self.spent.items()}


def cpu_line(cpu: dict[str, float]) -> str:
    return "  CPU per round trip: " + ", ".join(f"{k} {v:.0f} us" for k, v in cpu.items())


def wait_quiet(out: TextIO, limit_s: float | None = None) -> float:
    """Wait (at most `limit_s`, default --quiet-wait) for other processes to use under
    DISTURBED% CPU; their use."""
    if limit_s is None:
        limit_s = float(OPTIONS["quiet_wait_s"])
    end = time.monotonic() + limit_s
    said = False
    while True:
        other = background_load(2.0)
        if other <= DISTURBED or time.monotonic() >= end:
            return other
        if not said:
            print(f"  (other processes use {other:.0f}% CPU: waiting up to {limit_s:.0f} s for "
                  "them to quiet down)", file=out, flush=True)
            said = True


def background_load(seconds: float = 2.0) -> float:
    """CPU% (100% = one core) used on this machine by processes other than this one."""
    window = CpuWindow({"bench": [os.getpid()]})
    window.begin()
    time.sleep(seconds)
    return window.end()["other"]


_FRAME = re.compile(r"^(?P<fn>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _frame_name(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if m is None:
        return frame.strip()
    file = m["file"]
    for marker in ("site-packages/", "services/", "lib/python3.11/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    fn = "[native code]" if m["fn"].startswith("0x") else m["fn"]
    return f"{fn} ({file.rsplit('/', 1)[-1] if fn == '[native code]' else file})"


def hottest(raw: str, top: int = 14) -> list[tuple[str, float]]:
    """Own and inclusive shares of functions in py-spy's raw (collapsed) output; inclusive
    shares only for the project's and grpc's Python functions."""
    own: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [_frame_name(f) for f in stack.split(";")]
        total += n
        own[frames[-1]] += n
        for name in set(frames):
            if ("machiavelox/" in name or "grpc/aio" in name or "asyncio/queues" in name) and \
                    not name.startswith(("main ", "<module> ", "serve ")):
                incl[name] += n
    if not total:
        return []
    out = [(f"own  {name}", 100.0 * n / total) for name, n in own.most_common(top)]
    out += [(f"incl {name}", 100.0 * n / total) for name, n in incl.most_common(top)]
    out.append((f"samples {total} (with the GIL held)", 100.0))
    return out
