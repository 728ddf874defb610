"""Calls made in the same moment, sent together: one request for many callers, each caller
answered with its own item's answer (the agorà's Redis scripts, matchmaking's CreateTables)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

Item = TypeVar("Item")
Answer = TypeVar("Answer")


class Coalesced(Generic[Item, Answer]):
    """`await coalesced(item)` is `send([item, ...])`'s answer for `item`. A call that comes
    after a quiet moment goes at the next turn of the event loop (no added wait: the other
    calls made in that turn go with it), but while calls come faster than one per `window_s`
    they go at most once a window, together; at most `most` items a send.

    `send` answers every item of its batch, in order. If it raises, or answers a different
    number of items, every caller of the batch gets the exception (a ValueError for a wrong
    count; a cancellation: `cancelled()`, and the send's task is cancelled)."""

    def __init__(self, send: Callable[[list[Item]], Awaitable[list[Answer]]], most: int,
                 window_s: float, cancelled: Callable[[], Exception]) -> None:
        self.send = send
        self.most = most
        self.window_s = window_s
        self.cancelled = cancelled
        self._pending: list[tuple[Item, asyncio.Future[Answer]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._sent_at = 0.0  # (loop time of the last send)

    async def __call__(self, item: Item) -> Answer:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._pending.append((item, answer))
        if len(self._pending) == 1:
            wait = self._sent_at + self.window_s - loop.time()
            if wait > 0:
                loop.call_later(wait, self._flush)
            else:
                loop.call_soon(self._flush)
        return await answer

    def _flush(self) -> None:
        self._sent_at = asyncio.get_running_loop().time()
        while self._pending:
            batch, self._pending = self._pending[:self.most], self._pending[self.most:]
            task = asyncio.ensure_future(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[tuple[Item, asyncio.Future[Answer]]]) -> None:
        try:
            answers = await self.send([item for item, _ in batch])
            if len(answers) != len(batch):  # (no caller may wait for an answer never coming)
                raise ValueError(f"{len(answers)} answers to {len(batch)} items")
        except BaseException as err:  # (told to every caller; a cancellation included)
            for _, answer in batch:
                if not answer.done():
                    answer.set_exception(err if isinstance(err, Exception)
                                         else self.cancelled())
            if not isinstance(err, Exception):
                raise
            return
        for (_, answer), value in zip(batch, answers, strict=True):  # (counted above)
            if not answer.done():
                answer.set_result(value)
