"""The outbox of the multiplexed streams: order, closing, and when it paces frames."""

from __future__ import annotations

import asyncio

from machiavelox.platform.outbox import Outbox


async def test_a_quiet_outbox_sends_at_once_in_order() -> None:
    box: Outbox[int] = Outbox(window_s=0.05)
    frames = box.batches()
    box.put(1)
    box.put(2)
    assert await asyncio.wait_for(anext(frames), 1) == [1, 2]
    assert not box.pacing
    box.put(3)  # the next activation comes soon after, but one is not a rate
    assert await asyncio.wait_for(anext(frames), 1) == [3]


async def test_closing_sends_what_is_pending_then_ends() -> None:
    box: Outbox[str] = Outbox()
    box.put("a")
    box.close()
    assert [frame async for frame in box.batches()] == [["a"]]


async def test_frequent_activations_turn_pacing_on_and_frames_fill() -> None:
    box: Outbox[int] = Outbox(window_s=0.05, min_batch=4)
    assert not box.pacing
    for i in range(40):  # steps about 1 ms apart: far more than 4 per 50 ms
        box.put(i)
        await asyncio.sleep(0.001)
    assert box.pacing
    frames = box.batches()
    assert await anext(frames) == list(range(40))  # nothing sent lately: at once
    pending = asyncio.ensure_future(anext(frames))
    for i in range(100, 110):
        box.put(i)
        await asyncio.sleep(0.001)  # the next frame is held for the window: items pile up
    assert await asyncio.wait_for(pending, 1) == list(range(100, 110))


async def test_items_of_one_step_count_as_one_activation() -> None:
    box: Outbox[int] = Outbox(window_s=0.05, min_batch=4)
    for i in range(100):  # one table's step puts one item per session at once
        box.put(i)
    assert not box.pacing


async def test_a_zero_window_never_paces() -> None:
    box: Outbox[int] = Outbox(window_s=0.0)
    frames = box.batches()
    for i in range(50):
        box.put(i)
        assert await anext(frames) == [i]
    assert not box.pacing
