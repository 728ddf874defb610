"""Start a coroutine now, in the caller's turn of the event loop (Python 3.12's eager tasks).

`asyncio.create_task` only schedules a coroutine: its first step runs one turn of the event loop
later, after whatever else is ready. For a gRPC write that turn is pure latency: the bytes could
have left at once. `start_eagerly` runs the coroutine synchronously up to its first real wait
(the write is then in gRPC's hands) and resumes it each time the future it waits on completes,
as a Task would. Python 3.12 has this built in (`asyncio.eager_task_factory`); we run on 3.11.

The coroutine must wait only on asyncio futures (gRPC's aio calls do); what it returns is
ignored and what it raises goes to `on_error` (never raised into the caller's code).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

OnError = Callable[[BaseException], None]


def start_eagerly(coro: Coroutine[Any, Any, Any], on_error: OnError) -> None:
    """Run `coro` until it first waits, now; it goes on by itself when its futures complete."""

    def step(_: object = None) -> None:
        try:
            waited = coro.send(None)
        except StopIteration:
            return
        except BaseException as exc:  # (handed to on_error, as a Task would keep it)
            on_error(exc)
            return
        if isinstance(waited, asyncio.Future):
            waited._asyncio_future_blocking = False  # (what a Task does with it)
            waited.add_done_callback(step)
        else:  # a bare yield (asyncio.sleep(0)): go on at the next turn
            asyncio.get_running_loop().call_soon(step)

    step()
