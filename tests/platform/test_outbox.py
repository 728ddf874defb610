"""The outbox of the multiplexed streams: order, closing, when it paces frames, and who writes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from machiavelox.platform.outbox import Outbox


class Stream:
    """A fake stream write (the writer is the test's own): records frames, may be held."""

    def __init__(self) -> None:
        self.frames: asyncio.Queue[list[int]] = asyncio.Queue()
        self.writers: list[asyncio.Task[object] | None] = []
        self.release = asyncio.Event()
        self.release.set()

    async def write(self, items: list[int]) -> None:
        self.writers.append(asyncio.current_task())
        await self.release.wait()
        self.frames.put_nowait(items)

    async def next(self) -> list[int]:
        return await asyncio.wait_for(self.frames.get(), 1)


@contextlib.asynccontextmanager
async def pumped(box: Outbox[list[int]], stream: Stream) -> AsyncIterator[asyncio.Task[None]]:
    pump = asyncio.create_task(box.pump(stream.write))
    try:
        yield pump
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump


async def test_a_quiet_outbox_sends_at_once_in_order() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05)
    stream = Stream()
    async with pumped(box, stream):
        box.frame().append(1)
        box.frame().append(2)
        assert await stream.next() == [1, 2]
        assert not box.pacing
        box.frame().append(3)  # the next activation comes soon after, but one is not a rate
        assert await stream.next() == [3]


async def test_closing_sends_what_is_pending_then_the_pump_ends() -> None:
    box: Outbox[list[int]] = Outbox(list)
    stream = Stream()
    box.frame().append(7)
    box.close()
    await asyncio.wait_for(box.pump(stream.write), 1)
    assert await stream.next() == [7]


async def test_frequent_activations_turn_pacing_on_and_frames_fill() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05, min_batch=4)
    assert not box.pacing
    for i in range(40):  # steps about 1 ms apart: far more than 4 per 50 ms
        box.frame().append(i)
        await asyncio.sleep(0.001)
    assert box.pacing
    stream = Stream()
    async with pumped(box, stream):
        assert await stream.next() == list(range(40))  # nothing sent lately: at once
        for i in range(100, 110):
            box.frame().append(i)
            assert not await box.flush(stream.write)  # pacing: the producer leaves it
            await asyncio.sleep(0.001)  # the next frame is held for the window: items pile up
        assert await stream.next() == list(range(100, 110))


async def test_items_of_one_step_count_as_one_activation() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05, min_batch=4)
    for i in range(100):  # one table's step puts one item per session at once
        box.frame().append(i)
    assert not box.pacing


async def test_a_zero_window_never_paces() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.0)
    stream = Stream()
    async with pumped(box, stream):
        for i in range(50):
            box.frame().append(i)
            assert await stream.next() == [i]
        assert not box.pacing


async def test_on_a_quiet_stream_the_producer_writes_from_its_own_task() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05)
    stream = Stream()
    async with pumped(box, stream):
        box.frame().append(1)
        assert await box.flush(stream.write)
        assert stream.writers == [asyncio.current_task()]  # no hand-over to the pump
        assert await stream.next() == [1]
        assert not await box.flush(stream.write)  # nothing pending: nothing to write
        await asyncio.sleep(0.01)
        assert stream.frames.empty()  # and the pump found nothing left to send


async def test_one_write_at_a_time_what_comes_meanwhile_goes_next_in_order() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05)
    stream = Stream()
    async with pumped(box, stream):
        stream.release.clear()  # the stream is slow: the first write is held

        async def step() -> bool:  # a producer: puts, then flushes in the same turn
            box.frame().append(1)
            return await box.flush(stream.write)

        first = asyncio.create_task(step())
        await asyncio.sleep(0.01)
        box.frame().append(2)
        box.frame().append(3)
        assert not await box.flush(stream.write)  # a write is in flight: left to the pump
        assert stream.writers == [first]
        stream.release.set()
        assert await first
        assert await stream.next() == [1]
        assert await stream.next() == [2, 3]


async def test_a_held_outbox_does_not_wake_the_pump_and_flush_releases_it() -> None:
    box: Outbox[list[int]] = Outbox(list, window_s=0.05)
    stream = Stream()

    async def step(item: int) -> bool:  # a producer: hold, add, flush, in one turn
        box.hold()
        box.frame().append(item)
        assert not box._ready.is_set()  # the pump is not woken for it
        return await box.flush(stream.write)

    async with pumped(box, stream):
        assert await step(1)
        assert stream.writers == [asyncio.current_task()]
        assert await stream.next() == [1]
        stream.release.clear()  # the stream is slow: the next write is held up
        first = asyncio.create_task(step(2))
        await asyncio.sleep(0.01)
        assert not await step(3)  # a write in flight: handed to the pump, which is woken
        assert box._ready.is_set()
        stream.release.set()
        assert await first
        assert await stream.next() == [2]
        assert await stream.next() == [3]
