"""The shard's timers: the next deadline of every table in one heap, fired by one task.

A table's next deadline (wall ms; `TableHost.next_wall_deadline`) is armed after each of its
steps; the heap holds at most one live entry per table (an entry superseded by an earlier one
is skipped when it comes up), so it never grows with the number of actions. The task looks at
least every second, and is woken only by a deadline earlier than its next look (not on every
action).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
from collections.abc import Callable

Clock = Callable[[], int]
"""Wall-clock milliseconds."""
Due = Callable[[str, int], None]
"""Told (table id, now) when a deadline armed for the table has come."""


class Deadlines:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[int, str]] = []
        self._armed: dict[str, int] = {}  # table -> the earliest deadline the heap holds for it
        self._wake = asyncio.Event()
        self._sleep_until = 0  # wall ms: `run` looks again by then (at least every second)

    def __len__(self) -> int:
        return len(self._heap)

    def arm(self, table_id: str, at: int | None) -> None:
        """The table's next deadline is `at` (None: none); at most one live entry a table."""
        armed = self._armed.get(table_id)
        if at is not None and (armed is None or at < armed):
            self._armed[table_id] = at
            heapq.heappush(self._heap, (at, table_id))
            if at < self._sleep_until:  # earlier than `run`'s next look: wake it
                self._wake.set()

    def pop_due(self, now: int) -> list[str]:
        """The tables whose armed deadline is at or before `now` (taken off the heap)."""
        due = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            at, table_id = heapq.heappop(heap)
            if self._armed.get(table_id) != at:
                continue  # superseded by an earlier deadline armed since
            del self._armed[table_id]
            due.append(table_id)
        return due

    async def run(self, due: Due) -> None:
        """Tell `due` of every deadline as it comes, until cancelled."""
        while True:
            self._wake.clear()
            now = self.clock()
            for table_id in self.pop_due(now):
                due(table_id, now)
            now = self.clock()
            delay_ms = min(self._heap[0][0] - now if self._heap else 1000, 1000)
            self._sleep_until = now + max(0, delay_ms)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(0.0, delay_ms / 1000))
