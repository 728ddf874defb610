"""Pace is a rule (docs/protocol.md, docs/security.md): how fast one player may act.

Arrival order decides every race (M2.3, M6.4), so arrivals must not be for sale: each player's
actions pass a token bucket at the gateway (`GatewayPace.actions`, by player id, across all the
player's sessions) before they are forwarded; one over the limit is refused in-band with
`rate/limited` and never reaches the shard (it takes no arrival index). The defaults (10 a
second, 20 at once) are beyond the fastest human. `Resync` (a fresh snapshot, the dearest
request) has a bucket of its own. Every message of a Play stream, heartbeats included, counts
against a third bucket per session: a stream past it is ended with RESOURCE_EXHAUSTED
`rate/flood` (no app sends that much). The shard keeps its own cap per player and table as a
second line (table/shard.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from machiavelox.platform.ratelimit import Rate, RateLimits, TokenBucket

DEFAULT_ACTIONS = Rate(per_s=10, burst=20)
DEFAULT_RESYNCS = Rate(per_s=0.5, burst=3)
DEFAULT_MESSAGES = Rate(per_s=100, burst=500)


@dataclass(frozen=True)
class PaceSettings:
    actions: Rate = DEFAULT_ACTIONS  # MACHIAVELOX_GATEWAY_ACTION_RATE / _BURST
    resyncs: Rate = DEFAULT_RESYNCS  # MACHIAVELOX_GATEWAY_RESYNC_RATE / _BURST
    messages: Rate = DEFAULT_MESSAGES  # MACHIAVELOX_GATEWAY_MESSAGE_RATE / _BURST


class GatewayPace:
    def __init__(self, settings: PaceSettings = PaceSettings(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self._actions = RateLimits(settings.actions)
        self._resyncs = RateLimits(settings.resyncs)

    def action(self, player_id: str) -> bool:
        return self._actions.allow(player_id, self.clock())

    def resync(self, player_id: str) -> bool:
        return self._resyncs.allow(player_id, self.clock())

    def stream(self) -> Callable[[], bool]:
        """A new Play stream's message budget: call it for each message (False: a flood)."""
        bucket = TokenBucket(self.settings.messages, self.clock())
        clock = self.clock
        return lambda: bucket.take(clock())
