"""Clocks (issue 13, item 2): durations from a monotonic clock, the wall clock only for
timestamps that are shown or stored, never subtracted across machines.

`wall_ms()` is the machine's wall clock, Unix ms. Fault injection: when the environment names
a file in MACHIAVELOX_CLOCK_SKEW_FILE, the integer number of ms in it (read at most every
100 ms; missing or unreadable: 0) is added, so a test can step a process's wall clock forwards
or backwards while it runs (tests/faults/). Nothing sets it in production.

`Timeline` is what a service measures time on: ms anchored to the wall clock once, at start,
then advanced by the monotonic clock. A wall clock step while it runs moves nothing on it (a
timer due in 10 s is due in 10 s); two processes' timelines agree only as well as their wall
clocks did at their starts, so only one process's differences are meaningful.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

SKEW_ENV = "MACHIAVELOX_CLOCK_SKEW_FILE"
_RECHECK_NS = 100_000_000


class _Skew:
    __slots__ = ("checked_ns", "ms", "path")

    def __init__(self, path: str) -> None:
        self.path = Path(path) if path else None
        self.ms = 0
        self.checked_ns = -_RECHECK_NS

    def now_ms(self) -> int:
        if self.path is None:
            return 0
        mono = time.monotonic_ns()
        if mono - self.checked_ns >= _RECHECK_NS:
            self.checked_ns = mono
            try:
                self.ms = int(self.path.read_text().strip() or 0)
            except (OSError, ValueError):
                self.ms = 0
        return self.ms


_skew = _Skew(os.environ.get(SKEW_ENV, ""))


def wall_ms() -> int:
    """The wall clock, Unix ms (with the fault-injection skew, when set)."""
    return time.time_ns() // 1_000_000 + _skew.now_ms()


class Timeline:
    """ms on the wall clock's scale at start, advanced by the monotonic clock since."""

    __slots__ = ("_base_ms", "_mono0_ns")

    def __init__(self) -> None:
        self._base_ms = wall_ms()
        self._mono0_ns = time.monotonic_ns()

    def __call__(self) -> int:
        return self._base_ms + (time.monotonic_ns() - self._mono0_ns) // 1_000_000
