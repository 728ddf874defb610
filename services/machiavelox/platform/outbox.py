"""The outbox of a multiplexed stream: items for many tables, sent in batches (frames).

Flush policy (adaptive batching). Each frame costs gRPC a write, a syscall and a wake-up of the
other side, whatever it holds; under load that cost, paid per item, is most of a shard's CPU.
So the outbox watches how often something is put in it (an "activation": a step of some table
has something to send; items less than 50 µs apart count as one step) with a moving average of
the gaps between activations:
- when activations are rarer than `min_batch` per `window_s` (a quiet stream, or a single
  player's actions one after another), everything pending goes out at once, no added latency;
- when they are more frequent, at most one frame goes out per `window_s`, so each frame carries
  the items of several steps of many tables. An item then waits at most `window_s` more.
`window_s = 0` turns the pacing off (frames then batch only what piles up while the event
loop is busy). Defaults: 2 ms and 4 activations, so pacing starts at about 2,000 steps/s on a
stream; a client acting sequentially cannot reach that (its round trip is longer than 0.5 ms).

Who writes. The `pump` task writes what is pending, paced as above. On a quiet stream the
producer writes itself: after a step it calls `flush`, which writes the pending items at once
from the producer's own task when no other write is in flight. That saves the hand-over to the
pump task (a turn of the event loop, tens of µs) on the path of every single action; under
load `flush` does nothing and the pump sends paced frames. One write at a time either way.

Bounded frames. No frame grows past `max_bytes` (as far as the callers `account` for what they
add): once the bytes accounted for reach it, the frame is sealed and the next item starts a new
one. Sealed frames go out first, back to back, without pacing. So no item or burst of items
makes a message too large for the other side (which would fail the whole stream, for every
table on it), and one large item (a page of a resume) travels in a frame of its own.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

F = TypeVar("F")
Write = Callable[[F], Awaitable[None]]
"""Sends one frame (a gRPC stream write)."""

DEFAULT_WINDOW_S = 0.002
DEFAULT_MIN_BATCH = 4
DEFAULT_MAX_FRAME_BYTES = 256 * 1024
_SMOOTHING = 0.2  # weight of the newest gap in the moving average
_IDLE_GAP_S = 1.0  # the longest gap the average counts (an idle stream)
_SAME_STEP_S = 50e-6  # items closer than this belong to one step (one table's items)


class Outbox(Generic[F]):
    """Frames of type F (a message with a repeated field of items, or a list) made by
    `new_frame`; callers add each item straight into the frame being filled (`frame`), so an
    item is built once, in place, and never copied into a frame afterwards."""

    def __init__(self, new_frame: Callable[[], F], window_s: float = DEFAULT_WINDOW_S,
                 min_batch: int = DEFAULT_MIN_BATCH,
                 max_bytes: int = DEFAULT_MAX_FRAME_BYTES, gated: bool = False) -> None:
        self.new_frame = new_frame
        self.gated = gated
        self._unstaged: list[tuple[F, int]] = []  # gated: sealed, not yet staged
        self._staged: deque[tuple[int, F, int]] = deque()  # gated: (write, frame, size)
        self.window_s = window_s
        self.min_batch = min_batch
        self.max_bytes = max_bytes
        self._frame: F | None = None  # being filled
        self._bytes = 0  # accounted for in the frame being filled
        self._sealed: deque[tuple[F, int]] = deque()  # full frames, oldest first, with sizes
        self.pending_bytes = 0  # in the frame being filled and the sealed ones
        self._held = False  # a producer will flush before it awaits: the pump need not wake
        self._ready = asyncio.Event()
        self._busy = False  # a write is in flight (one at a time: `flush` or `pump`)
        self._closed = False
        self._last = -math.inf  # when the previous frame went out (monotonic s)
        self._activated = -math.inf
        self.gap_s = _IDLE_GAP_S  # moving average of the gaps between activations

    def frame(self) -> F:
        """The frame being filled: the caller adds one item to it, now (before any await)."""
        now = time.monotonic()
        gap = now - self._activated
        self._activated = now
        if gap > _SAME_STEP_S:
            self.gap_s += (min(gap, _IDLE_GAP_S) - self.gap_s) * _SMOOTHING
        frame = self._frame
        if frame is None:
            frame = self._frame = self.new_frame()
            if not self._held and not self.gated:
                self._ready.set()
        return frame

    def account(self, nbytes: int) -> None:
        """The caller added `nbytes` (about) to the frame being filled: past `max_bytes` the
        frame is sealed and the next item starts a new one."""
        self._bytes += nbytes
        self.pending_bytes += nbytes
        if self._bytes >= self.max_bytes and self._frame is not None:
            (self._unstaged if self.gated else self._sealed).append((self._frame, self._bytes))
            self._frame = None
            self._bytes = 0

    def discard(self) -> None:
        """Forget everything pending (a stream that broke: its items are made again)."""
        self._frame = None
        self._sealed.clear()
        self._unstaged.clear()
        self._staged.clear()
        self._bytes = self.pending_bytes = 0

    @property
    def pending(self) -> bool:
        return (self._frame is not None or bool(self._sealed) or bool(self._unstaged)
                or bool(self._staged))

    @property
    def _sendable(self) -> bool:
        return bool(self._sealed) or (self._frame is not None and not self.gated)

    # ------------------------------------------------------------------ gated
    def stage(self, write: int) -> None:
        """Gated: everything added so far waits for journal write number `write`."""
        staged = self._staged
        for frame, nbytes in self._unstaged:
            staged.append((write, frame, nbytes))
        self._unstaged.clear()
        if self._frame is not None:
            staged.append((write, self._frame, self._bytes))
            self._frame = None
            self._bytes = 0

    def committed(self, write: int, wake: bool = True) -> bool:
        """Gated: journal writes up to number `write` are stored: what they cover may go
        (the pump is woken, unless not `wake`: the caller flushes); whether anything may."""
        staged = self._staged
        moved = False
        while staged and staged[0][0] <= write:
            _, frame, nbytes = staged.popleft()
            self._sealed.append((frame, nbytes))
            moved = True
        if moved and wake and not self._held:
            self._ready.set()
        return moved

    def drop_uncommitted(self) -> None:
        """Gated: a journal write failed: forget every item it or a later one would cover."""
        dropped = sum(nbytes for _, nbytes in self._unstaged) + self._bytes
        dropped += sum(nbytes for _, _, nbytes in self._staged)
        self._unstaged.clear()
        self._staged.clear()
        self._frame = None
        self._bytes = 0
        self.pending_bytes -= dropped
        if self._closed:
            self._ready.set()

    def close(self) -> None:
        """No more items: what is pending still goes out, then `pump` returns."""
        self._closed = True
        self._ready.set()

    @property
    def pacing(self) -> bool:
        return self.gap_s * self.min_batch < self.window_s

    def hold(self) -> None:
        """The caller is about to add items and will `flush` (or `release`) before it awaits
        anything: the pump is not woken for them meanwhile (a wake-up for nothing, when the
        caller writes them itself)."""
        self._held = True

    def release(self) -> None:
        """Hand what is pending to the pump."""
        self._held = False
        if self._sendable:
            self._ready.set()

    async def flush(self, write: Write[F]) -> bool:
        """Write what is pending now, from the caller's task, if the stream is quiet and no
        write is in flight; otherwise leave it to `pump`. True when it wrote. Ends a `hold`."""
        if not self._sendable or (self.pacing and not self.gated) or self._busy:
            self.release()
            return False
        self._held = False
        await self._send(write)
        return True

    async def pump(self, write: Write[F]) -> None:
        """The stream's writer: sends what is pending, paced; returns once closed and empty."""
        while True:
            await self._ready.wait()
            wait = self._last + self.window_s - time.monotonic()
            if wait > 0 and self.pacing and not self._closed and not self._sealed:
                await asyncio.sleep(wait)  # busy: let the frame fill
            self._ready.clear()
            if self._sendable and not self._busy:  # (else `flush` is writing: it wakes
                await self._send(write)            # the pump if more came)
            if self._closed and not self.pending:
                return

    async def _send(self, write: Write[F]) -> None:
        """Write the oldest pending frame; one write at a time (`_busy`); what comes meanwhile
        is handed to the pump when the write is done."""
        if self._sealed:
            frame, nbytes = self._sealed.popleft()
        elif self._frame is not None and not self.gated:
            frame, nbytes = self._frame, self._bytes
            self._frame = None
            self._bytes = 0
        else:
            return
        self.pending_bytes -= nbytes
        self._busy = True
        try:
            await write(frame)
        finally:
            self._busy = False
            self._last = time.monotonic()
            if self._sendable or (self._closed and not self.pending):  # (more, or the end)
                self._ready.set()
