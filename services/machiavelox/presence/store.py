"""Presence state: the interface of the stores, their values, and the rule they tell by.

Model (issue 13, items 1 and 2). A player is *alive* from a heartbeat until `silence_ms` pass
without another one; then their life has *lapsed*. Facts are what the store records: alive since
the heartbeat that revived them, or lapsed since their last sign of life (0: never seen). A
player's successive facts have strictly increasing `order` keys ((since_ms, 0) alive,
(seen_ms, 1) lapsed; a revival is recorded at least 1 ms after the last sign of life), so a
replica can merge a snapshot with the live feed and drop what it already has.

Watchers are told *views* of the facts (hub.py, `judge`): alive; silent for `silent_for_ms`, a
duration; or unknown. One clock: every time is the store's own (Redis's `TIME`, read inside the
scripts; the memory store's monotonic timeline), so no replica's wall clock is ever compared with
another's, and watchers get durations, never timestamps to compare with theirs.

**Unknown, never absent.** Presence calls a lapsed player silent only for time it can vouch
for: time during which every sign of life that reached presence was stored.

- A replica that cannot use its store (an error, a timeout, its subscription lost) tells every
  watcher `unknown` for every watched player at once, and for every player of a watch opened
  meanwhile; it declares nobody silent (its sweep stops). When the store answers and the
  subscription is back it reads every watched player's facts again and tells the truth.
- The vouched span ends at `known_until`: the oldest *beacon* of the replicas (each records one
  per sweep while healthy). It starts at `known_from`: the last moment presence could not tell
  (a replica back from an outage, a replica restarted after a crash, one lost for good, the
  first replica after all were down), or this replica's own start, whichever is later.
- A lapsed player's silence counts from the later of their last sign of life and `known_from`,
  up to `known_until`: once that reaches `silence_ms` they are silent, `silent_for_ms` being its
  length. Until then they are unknown if something is in the way (`known_from` is after their
  last sign of life, or some replica's beacon is older than `stale_ms`); otherwise (beacons
  lagging by less than `stale_ms`) nothing is said yet.

So a heartbeat that reached a replica and could not be stored (the RPC fails UNAVAILABLE) never
becomes an absence anywhere: the replica's beacon stops when its store does, the others' vouched
span ends there, and silences that began since are unknown until every replica can tell again,
then counted from that moment, never backdated.

Why beacons: a replica whose store works cannot see in the store that another replica's
heartbeats failed; waiting out the threshold after one's own recovery covers one's own outages
only. Counting silence only up to the oldest beacon needs no timeout to be right (a late beacon
delays a silence, never invents one); `stale_ms` only decides when to say unknown rather than
wait. The cost: after any replica's outage every silent player is unknown for `silence_ms`, then
silent counted from the return. With the memory store (one process) the span is simply from its
start until now. Two backends: `memory_store.py` and `redis_store.py` (replicas sharing Redis;
its docstring has the keys and scripts, and when the floor moves).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from .hub import WATCH_BACKLOG, Context, Fact, LivenessHub, Watch

log = logging.getLogger(__name__)


class StoreUnavailableError(Exception):
    """The shared store cannot be reached; the request may be retried."""


@dataclass(frozen=True)
class Presence:
    player_id: str
    connected: bool
    gateway_id: str
    last_seen_ms: int  # the store's clock; 0: never
    alive: bool


@dataclass(frozen=True)
class Beat:
    """A recorded heartbeat: its time (never before the previous one) and whether it revived."""

    at_ms: int
    revived: bool


def alive_now(last_seen_ms: int, now_ms: int, silence_ms: int) -> bool:
    return last_seen_ms > 0 and now_ms - last_seen_ms < silence_ms


class PresenceStore(ABC):
    """Where presence lives. Each store owns the hub that tells its watchers (hub.py); the
    shared part here is how a watch starts and how an outage and a recovery reach the hub."""

    def __init__(self, silence_ms: int, stale_ms: int, backlog: int = WATCH_BACKLOG) -> None:
        self.silence_ms = silence_ms
        self.hub = LivenessHub(silence_ms, stale_ms, backlog)
        self.healthy = False

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def heartbeat(self, player_id: str) -> Beat:
        """Record a sign of life now (the store's clock); StoreUnavailableError if it cannot."""

    @abstractmethod
    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        """Connect to `gateway_id`, or disconnect: from `gateway_id` only if it is still the
        player's gateway (a late disconnect from an old gateway is ignored), or from any if
        `gateway_id` is "". Returns whether anything changed."""

    @abstractmethod
    async def presence(self, player_ids: Sequence[str]) -> list[Presence]: ...

    @abstractmethod
    async def read(self, player_ids: Sequence[str]) -> tuple[Context, list[Fact]]:
        """The current fact of each player, and what presence can vouch for now."""

    @abstractmethod
    async def tick(self) -> list[Fact]:
        """One round of the sweeper: lapse the players silent for `silence_ms` or more (the
        lapses this call made are returned), tell the hub what presence vouches for now, and,
        after an outage, find out whether the store is back."""

    async def watch(self, player_ids: Sequence[str]) -> Watch:
        """A watch of `player_ids` (hub.Watch): told their current views, then every change."""
        watch = self.hub.watch(player_ids)
        missing = self.hub.missing(watch.players)
        if missing and self.healthy:
            try:
                context, facts = await self.read(missing)
            except StoreUnavailableError:
                pass  # (the hub was told: this watch is told unknown, then the truth)
            except BaseException:
                self.hub.unwatch(watch)
                raise
            else:
                self.hub.update(context, facts)
        return watch

    def trouble(self, reason: str) -> None:
        """The store could not be used: every watcher is told unknown (once per outage)."""
        if self.healthy:
            self.healthy = False
            log.warning("presence store unusable, every watched player unknown until it is "
                        "back: %s", reason)
            self.hub.lost()

    def back(self, context: Context, facts: Sequence[Fact]) -> None:
        """The store is usable again (or for the first time): every watcher gets the truth."""
        if not self.healthy:
            self.healthy = True
            self.hub.restore(context, facts)


async def sweep_forever(store: PresenceStore, interval_s: float, stop: asyncio.Event) -> None:
    """`store.tick()` every `interval_s` until `stop` is set; a failed round is logged."""
    while not stop.is_set():
        try:
            for lapse in await store.tick():
                log.info("player lapsed", extra={"player": lapse.player_id})
        except Exception:  # a bug: a dead sweeper would never report anyone again
            log.exception("presence sweep failed")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)


async def stop_task(task: asyncio.Task[None]) -> None:
    """Cancel `task` and wait until it ends, cancelling again if the cancellation was swallowed
    (redis-py's asyncio client can absorb a cancellation that lands mid-command)."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=0.2)
    if not task.cancelled() and task.exception() is not None:
        log.warning("%s ended with %r", task.get_name(), task.exception())
