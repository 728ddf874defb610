"""`Coalesced` (platform/coalesce.py): calls made in the same moment go in one send, each
caller answered with its own item's answer; a failed send, or one that answers a different
number of items, fails every caller of its batch (none waits forever); while calls come
faster than the window, one send a window; at most `most` items a send. Would fail if callers
got another item's answer, if a short answer left a caller waiting, or if a batch were split
or merged otherwise."""

from __future__ import annotations

import asyncio

import pytest

from machiavelox.platform.coalesce import Coalesced

pytestmark = pytest.mark.timeout(30)


class Sends:
    """A send that records its batches and answers each item doubled (or as told)."""

    def __init__(self, drop_last: bool = False, fail: Exception | None = None) -> None:
        self.batches: list[list[int]] = []
        self.drop_last = drop_last
        self.fail = fail

    async def __call__(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        answers = [2 * i for i in items]
        return answers[:-1] if self.drop_last else answers


def coalesced(sends: Sends, most: int = 100, window_s: float = 0.0) -> Coalesced[int, int]:
    return Coalesced(sends, most, window_s, lambda: RuntimeError("cancelled"))


async def test_one_moment_is_one_send_each_answered_its_own() -> None:
    sends = Sends()
    calls = coalesced(sends)
    assert await asyncio.gather(*(calls(i) for i in range(5))) == [0, 2, 4, 6, 8]
    assert sends.batches == [[0, 1, 2, 3, 4]]
    assert await calls(7) == 14  # after a quiet moment: at once, alone
    assert sends.batches[-1] == [7]


async def test_at_most_most_items_a_send() -> None:
    sends = Sends()
    calls = coalesced(sends, most=2)
    assert await asyncio.gather(*(calls(i) for i in range(5))) == [0, 2, 4, 6, 8]
    assert sends.batches == [[0, 1], [2, 3], [4]]


async def test_within_the_window_calls_wait_and_go_together() -> None:
    sends = Sends()
    calls = coalesced(sends, window_s=0.2)
    assert await calls(1) == 2
    later = [asyncio.ensure_future(calls(i)) for i in (2, 3)]
    await asyncio.sleep(0.05)  # (within the window: not sent yet)
    assert sends.batches == [[1]]
    assert await asyncio.gather(*later) == [4, 6]
    assert sends.batches == [[1], [2, 3]]


async def test_a_failed_send_fails_every_caller_of_its_batch() -> None:
    calls = coalesced(Sends(fail=ConnectionError("down")))
    got = await asyncio.gather(*(calls(i) for i in range(3)), return_exceptions=True)
    assert [type(g) for g in got] == [ConnectionError] * 3


async def test_a_short_answer_fails_every_caller_none_waits() -> None:
    calls = coalesced(Sends(drop_last=True))
    got = await asyncio.wait_for(
        asyncio.gather(*(calls(i) for i in range(3)), return_exceptions=True), 5)
    assert [type(g) for g in got] == [ValueError] * 3
