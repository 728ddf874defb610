"""How fast one player may use the agorà (docs/security.md, "The agorà"): pure, time in ms.

Each call (Enqueue, CancelTicket, CreateFriendlyTable, JoinFriendlyTable) has a token bucket
per player (`platform/ratelimit.py`). A join-by-code attempt that finds no open lobby also
takes a token from a much slower bucket, and while that one is empty every join attempt of the
player is refused before any code is looked up: a guesser gets a small burst, then one guess
every few seconds, and learns nothing in between. A refusal is `Limited` (RESOURCE_EXHAUSTED
`rate/limited` on the wire), whose message says when a retry would pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from machiavelox.platform.ratelimit import Rate, RateLimits

from .queue import WaitError

Call = Literal["enqueue", "cancel", "create_friendly", "join_friendly"]
CALLS: tuple[Call, ...] = get_args(Call)
LIMITED = "rate/limited"
_NAMES = {"enqueue": "Enqueue", "cancel": "CancelTicket",
          "create_friendly": "CreateFriendlyTable", "join_friendly": "JoinFriendlyTable"}


@dataclass(frozen=True)
class AgoraRates:
    """One rate per call, and the rate of join attempts with an unknown code."""

    enqueue: Rate
    cancel: Rate
    create_friendly: Rate
    join_friendly: Rate
    join_failed: Rate

    def of(self, call: Call) -> Rate:
        rate: Rate = getattr(self, call)
        return rate


# Far above what a person does (the defaults of MACHIAVELOX_MATCHMAKING_<CALL>_RATE, per
# second, and _BURST): a human mistyping a code five times in a row waits 10 s for a sixth try.
DEFAULT_RATES = AgoraRates(enqueue=Rate(1.0, 20), cancel=Rate(1.0, 20),
                           create_friendly=Rate(0.5, 10), join_friendly=Rate(1.0, 20),
                           join_failed=Rate(0.1, 5))


class Limited(WaitError):
    """Over the limit (RESOURCE_EXHAUSTED `rate/limited` on the wire)."""

    def __init__(self, call: Call, retry_after_s: float, guessing: bool = False) -> None:
        what = ("join attempts with unknown invite codes" if guessing
                else f"{_NAMES[call]} calls")
        super().__init__(LIMITED, f"too many {what}; try again in "
                                  f"{max(1, math.ceil(retry_after_s))} s")
        self.call = call
        self.retry_after_s = retry_after_s


class AgoraLimits:
    """The buckets of every player (bounded memory: `RateLimits` forgets full buckets)."""

    def __init__(self, rates: AgoraRates, max_keys: int = 100_000) -> None:
        self.rates = rates
        self._calls = {call: RateLimits(rates.of(call), max_keys) for call in CALLS}
        self._failed_joins = RateLimits(rates.join_failed, max_keys)

    def admit(self, call: Call, player: str, now_ms: int) -> None:
        """Take one token of the player's bucket for `call`, or raise `Limited` (nothing
        taken). A join is refused outright while the player's failed-join bucket is empty."""
        now = now_ms / 1000
        if call == "join_friendly":
            wait = self._failed_joins.bucket(player, now).retry_after_s(now)
            if wait > 0:
                raise Limited(call, wait, guessing=True)
        bucket = self._calls[call].bucket(player, now)
        if not bucket.take(now):
            raise Limited(call, bucket.retry_after_s(now))

    def join_failed(self, player: str, now_ms: int) -> None:
        """A join attempt found no open lobby: it costs a token of the slow bucket."""
        self._failed_joins.allow(player, now_ms / 1000)
