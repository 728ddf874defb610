"""A service's periodic work: `work` every `interval_s`, until cancelled; a failure of one
round (a bug) is logged and the next round comes anyway."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def every(interval_s: float, work: Callable[[], Awaitable[object]], what: str) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            await work()
        except Exception:  # a bug: log it, keep going
            log.exception("%s failed", what)
