"""Restart the service processes of `machiavelox up` that crash, on their own.

`Supervisor(procs).start()` watches the processes `start`/`launch` started, from a background
thread (so it works whether up's main thread waits for a signal or runs the demo). A process
that exits while watched (SIGKILL, the OOM killer, a non-zero exit, even exit 0) and was not
stopped on purpose (`Proc.stop`) is reported in one line and started again by
`Proc.respawn`: same command, environment, port and data dir, its log appended to the same
file after a WARNING line saying why. The callers' `Proc` objects stay valid: their `popen` is
the new process, so `stop_all` stops it.

Crash loops are bounded (`Policy`): the restarts back off exponentially (0.5 s doubling to
10 s, from 0.5 s again once a process has stayed up 60 s), and a service that needs more than 5
restarts within 60 s is given up on, with a message; the others keep being watched.

Stop the supervisor (`stop`, or leave its `with` block) before stopping the services: a
deliberate stop is then never mistaken for a crash (`Proc.stop` marks the process stopped, so
one stopped while the supervisor runs is not restarted either).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TextIO

from .processes import Proc

POLL_S = 0.1  # how often the processes are looked at


@dataclass(frozen=True)
class Policy:
    """When to restart a crashed service, and when to give up on it."""

    first_delay_s: float = 0.5  # before the first restart of a series
    max_delay_s: float = 10.0  # the backoff doubles up to this
    reset_after_s: float = 60.0  # up this long: the next crash starts a new series
    max_restarts: int = 5  # more restarts than this within `window_s`: give up
    window_s: float = 60.0


@dataclass
class CrashHistory:
    """The restarts of one service so far, which decide the next one (`Policy`)."""

    started: float  # when its current process started (monotonic)
    series: int = 0  # crashes in a row, each soon after its restart
    restarts: int = 0  # in all
    recent: deque[float] = field(default_factory=deque)  # restart times within the window

    def on_exit(self, now: float, policy: Policy) -> float | None:
        """The delay before restarting after an exit at `now`, None to give up."""
        while self.recent and now - self.recent[0] >= policy.window_s:
            self.recent.popleft()
        if len(self.recent) >= policy.max_restarts:
            return None
        if now - self.started >= policy.reset_after_s:
            self.series = 0
        delay = min(policy.first_delay_s * 2.0 ** min(self.series, 30), policy.max_delay_s)
        self.series += 1
        return delay

    def restarted(self, now: float) -> None:
        self.started = now
        self.restarts += 1
        self.recent.append(now)


@dataclass
class _Watch:
    proc: Proc
    history: CrashHistory
    due: float | None = None  # a restart is scheduled then
    done: str = ""  # "stopped" (on purpose) or "given up": no longer watched


def describe_exit(code: int) -> str:
    """'exited 2', 'killed by SIGKILL' (Popen's negative return code: the signal)."""
    if code >= 0:
        return f"exited {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


class Supervisor:
    """Restarts the crashed processes of `procs` (see the module docstring)."""

    def __init__(self, procs: Mapping[str, Proc] | Iterable[Proc],
                 policy: Policy | None = None, out: TextIO | None = None) -> None:
        chosen = list(procs.values() if isinstance(procs, Mapping) else procs)
        unknown = [p.name for p in chosen if not p.argv]
        if unknown:
            raise ValueError(f"not started by `start`, cannot be restarted: {unknown}")
        self.policy = policy or Policy()
        self._out = out
        now = time.monotonic()
        self._watches = {p.name: _Watch(p, CrashHistory(now)) for p in chosen}
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Supervisor:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="machiavelox-supervisor",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop watching (a restart under way completes first); the processes keep running."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> Supervisor:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def restarts(self, name: str) -> int:
        """How many times the service `name` was restarted."""
        return self._watches[name].history.restarts

    def given_up(self) -> set[str]:
        """The services that crashed too often and are no longer restarted."""
        return {n for n, w in self._watches.items() if w.done == "given up"}

    def stopped(self) -> set[str]:
        """The services seen exiting after a deliberate stop (not restarted)."""
        return {n for n, w in self._watches.items() if w.done == "stopped"}

    def _run(self) -> None:
        while not self._halt.wait(POLL_S):
            for watch in self._watches.values():
                if self._halt.is_set():
                    return
                if not watch.done:
                    self._look_at(watch, time.monotonic())

    def _look_at(self, watch: _Watch, now: float) -> None:
        proc = watch.proc
        if watch.due is not None:
            if now >= watch.due:
                watch.due = None
                self._restart(watch)
            return
        code = proc.popen.poll()
        if code is None:
            return
        if proc.stopped:
            watch.done = "stopped"
            return
        history = watch.history
        why = f"{describe_exit(code)} after {now - history.started:.1f} s up"
        delay = history.on_exit(now, self.policy)
        if delay is None:
            watch.done = "given up"
            self._say(proc, f"{proc.name} {why}, restarted {len(history.recent)} times within "
                            f"{self.policy.window_s:g} s ({history.restarts} in all): giving "
                            f"up on it, the other services keep running (log: {proc.log_path})")
            return
        self._say(proc, f"{proc.name} {why}: restart {history.restarts + 1} in {delay:g} s "
                        f"(log appended: {proc.log_path})")
        watch.due = now + delay

    def _restart(self, watch: _Watch) -> None:
        proc = watch.proc
        try:
            started = proc.respawn()
        except OSError as exc:  # the command could not even start
            watch.done = "given up"
            self._say(proc, f"{proc.name} could not be restarted ({exc}): giving up on it")
            return
        if started:
            watch.history.restarted(time.monotonic())
        elif proc.stopped:
            watch.done = "stopped"

    def _say(self, proc: Proc, text: str) -> None:
        """One line on the output, and the same as a WARNING record in the service's log."""
        line = f"supervisor: {text}"
        print(line, file=self._out or sys.stdout, flush=True)
        with contextlib.suppress(OSError):  # a log deleted under us: the line above will do
            _append_record(proc.log_path, proc.name, line)


def _append_record(log_path: Path, service: str, text: str) -> None:
    record = {"ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "level": "WARNING",
              "service": service, "logger": "machiavelox.local.supervisor", "msg": text}
    with log_path.open("a") as log:
        log.write(json.dumps(record) + "\n")
