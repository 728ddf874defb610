"""Presence state: last sign of life and gateway per player, and the alive <-> silent changes.

Model. A player is *alive* from a heartbeat until `silence_ms` pass without another one; then
*silent*. Each change is a `LivenessChange`: alive since the heartbeat that revived them, or
silent since their last sign of life (0: never seen). A player's successive changes have strictly
increasing `order` keys ((since_ms, 0) for alive, (since_ms, 1) for silent; a revival is recorded
at least 1 ms after the last sign of life), so a watcher can merge a snapshot with the live feed
and drop what it already has without counters that could be lost.

Every change is published exactly once, to a `LivenessHub`, which fans it out to this process's
watchers. Two stores:

- `MemoryPresenceStore`: one process (development, tests, a single replica).
- `RedisPresenceStore`: replicas share one Redis. Per player a hash `{prefix}p:{id}` (`seen`,
  `since`, `gw`, `conn`; expires 24 h after the last write) and a sorted set `{prefix}alive` of
  the players currently alive scored by their last sign of life. Changes go out on the pub/sub
  channel `{prefix}liveness`; every replica subscribes and feeds its own hub, so a watcher on any
  replica sees changes made on any other.

  Exactly once across replicas: a transition is decided inside a Lua script, which Redis runs
  atomically. The heartbeat script revives a player (silent -> alive) only if they are not in the
  alive set, and adds them. Every replica sweeps periodically with a script that takes the alive
  players whose score is at or before `now - silence_ms`, removes them from the set and publishes
  their silence: the first sweep to run claims the player (ZREM inside the script), a concurrent
  sweep on another replica no longer finds them. A heartbeat that finds its player still in the
  set but already past the threshold (no sweep ran yet) publishes the silence itself first.

  Only transitions are published, not every heartbeat (a heartbeat that changes nothing costs
  one script call and no fan-out). Pub/sub delivers at most once; each time the subscription is
  (re)established (Redis confirms it), the hub re-reads the state of every watched player and
  sends what each watcher missed, by the order keys. Clocks: each replica stamps with its own clock;
  replicas must be NTP-synchronised well within the silence threshold (a later stamp never moves
  `seen` backwards: the scripts keep the maximum). Redis Cluster: the scripts touch a player's
  hash and the alive set together, so the prefix must carry a hash tag (`{mxv}:`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import redis.asyncio as aioredis
from redis.exceptions import RedisError

log = logging.getLogger(__name__)

Clock = Callable[[], int]
"""Returns the current time, Unix ms. Injected so tests can drive time."""

RETENTION_MS = 24 * 3600 * 1000
"""A player's Redis hash expires this long after its last write."""

WATCH_BACKLOG = 1024
"""Changes a watcher may have pending before its stream is ended as lagging."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class StoreUnavailableError(Exception):
    """The shared store cannot be reached; the request may be retried."""


@dataclass(frozen=True)
class LivenessChange:
    """Alive since the reviving heartbeat, or silent since the last sign of life (0: never)."""

    player_id: str
    alive: bool
    since_ms: int

    @property
    def order(self) -> tuple[int, int]:
        return (self.since_ms, 0 if self.alive else 1)


@dataclass(frozen=True)
class Presence:
    player_id: str
    connected: bool
    gateway_id: str
    last_seen_ms: int  # 0: never
    alive: bool


@dataclass(frozen=True)
class Beat:
    """A recorded heartbeat: its time (never before the previous one) and whether it revived."""

    at_ms: int
    revived: bool


class Watch:
    """One watcher's pending changes, filtered to its players and to what it has not seen."""

    def __init__(self, player_ids: Iterable[str], backlog: int = WATCH_BACKLOG) -> None:
        self.player_ids = frozenset(player_ids)
        self.lagging = False
        self._backlog = backlog
        self._last: dict[str, tuple[int, int]] = {}
        self._queue: asyncio.Queue[LivenessChange | None] = asyncio.Queue()
        self._closed = False

    def offer(self, change: LivenessChange) -> None:
        """Queue `change` if it is about a watched player and newer than what was queued."""
        if self._closed or change.player_id not in self.player_ids:
            return
        last = self._last.get(change.player_id)
        if last is not None and change.order <= last:
            return
        self._last[change.player_id] = change.order
        if self._queue.qsize() >= self._backlog:
            self.lagging = True
            self.close()
            return
        self._queue.put_nowait(change)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def next(self) -> LivenessChange | None:
        """The next change, or None once closed."""
        return await self._queue.get()


class LivenessHub:
    """Fans the changes this process learns of out to its watchers."""

    def __init__(self, backlog: int = WATCH_BACKLOG) -> None:
        self._backlog = backlog
        self._by_player: dict[str, set[Watch]] = {}
        self._closed = False

    def watch(self, player_ids: Iterable[str]) -> Watch:
        watch = Watch(player_ids, self._backlog)
        if self._closed:
            watch.close()
            return watch
        for player in watch.player_ids:
            self._by_player.setdefault(player, set()).add(watch)
        return watch

    def unwatch(self, watch: Watch) -> None:
        watch.close()
        for player in watch.player_ids:
            watches = self._by_player.get(player)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._by_player[player]

    def publish(self, change: LivenessChange) -> None:
        for watch in list(self._by_player.get(change.player_id, ())):
            watch.offer(change)

    def watched(self) -> list[str]:
        return list(self._by_player)

    async def resync(self, read: Callable[[Sequence[str]], Awaitable[list[LivenessChange]]]
                     ) -> None:
        """Re-read every watched player's state and offer it (watchers drop what they have)."""
        players = self.watched()
        if players:
            for change in await read(players):
                self.publish(change)

    def close(self) -> None:
        """End every watch stream (shutdown): watchers reconnect to another replica."""
        self._closed = True
        for watches in list(self._by_player.values()):
            for watch in list(watches):
                watch.close()


class PresenceStore(Protocol):
    """Where presence lives; times are passed in (Unix ms) so the store has no clock."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    async def heartbeat(self, player_id: str, now_ms: int) -> Beat: ...

    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        """Connect to `gateway_id`, or disconnect: from `gateway_id` only if it is still the
        player's gateway (a late disconnect from an old gateway is ignored), or from any if
        `gateway_id` is "". Returns whether anything changed."""
        ...

    async def presence(self, player_ids: Sequence[str], now_ms: int) -> list[Presence]: ...

    async def liveness(self, player_ids: Sequence[str]) -> list[LivenessChange]:
        """The last change of each player (their current liveness state)."""
        ...

    async def sweep(self, now_ms: int) -> list[LivenessChange]:
        """Report players silent for `silence_ms` or more; returns the changes this call made."""
        ...


async def sweep_forever(store: PresenceStore, clock: Clock, interval_s: float,
                        stop: asyncio.Event) -> None:
    """Sweep every `interval_s` until `stop` is set; a store outage is logged and retried."""
    while not stop.is_set():
        try:
            for change in await store.sweep(clock()):
                log.info("player silent", extra={"player": change.player_id})
        except StoreUnavailableError as exc:
            log.warning("sweep failed: %s", exc)
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


def _alive_now(last_seen_ms: int, now_ms: int, silence_ms: int) -> bool:
    return last_seen_ms > 0 and now_ms - last_seen_ms < silence_ms


@dataclass
class _Entry:
    seen: int = 0
    since: int = 0
    alive: bool = False
    gateway: str = ""
    connected: bool = False


@dataclass
class MemoryPresenceStore:
    """Presence in this process's memory: one replica only; forgotten at restart."""

    hub: LivenessHub
    silence_ms: int
    _entries: dict[str, _Entry] = field(default_factory=dict)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def _silence(self, player_id: str, entry: _Entry) -> LivenessChange:
        entry.alive = False
        change = LivenessChange(player_id, False, entry.seen)
        self.hub.publish(change)
        return change

    async def heartbeat(self, player_id: str, now_ms: int) -> Beat:
        entry = self._entries.setdefault(player_id, _Entry())
        if entry.alive and now_ms - entry.seen >= self.silence_ms:
            self._silence(player_id, entry)
        revived = not entry.alive
        at = max(now_ms, entry.seen + 1) if revived else max(now_ms, entry.seen)
        entry.seen = at
        if revived:
            entry.alive = True
            entry.since = at
            self.hub.publish(LivenessChange(player_id, True, at))
        return Beat(at, revived)

    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        entry = self._entries.setdefault(player_id, _Entry())
        if connected:
            entry.connected, entry.gateway = True, gateway_id
            return True
        if gateway_id and entry.gateway != gateway_id:
            return False
        entry.connected, entry.gateway = False, ""
        return True

    async def presence(self, player_ids: Sequence[str], now_ms: int) -> list[Presence]:
        out = []
        for player in player_ids:
            e = self._entries.get(player, _Entry())
            out.append(Presence(player, e.connected, e.gateway, e.seen,
                                _alive_now(e.seen, now_ms, self.silence_ms)))
        return out

    async def liveness(self, player_ids: Sequence[str]) -> list[LivenessChange]:
        out = []
        for player in player_ids:
            e = self._entries.get(player, _Entry())
            out.append(LivenessChange(player, e.alive, e.since if e.alive else e.seen))
        return out

    async def sweep(self, now_ms: int) -> list[LivenessChange]:
        cutoff = now_ms - self.silence_ms
        return [self._silence(player, e) for player, e in list(self._entries.items())
                if e.alive and e.seen <= cutoff]


# KEYS: player hash, alive set. ARGV: player, now, silence, channel, retention.
# Returns {recorded time, 1 if revived}.
_HEARTBEAT = """
local player = ARGV[1]
local now = tonumber(ARGV[2])
local seen = tonumber(redis.call('HGET', KEYS[1], 'seen') or '0')
local alive = redis.call('ZSCORE', KEYS[2], player) ~= false
if alive and now - seen >= tonumber(ARGV[3]) then
  redis.call('ZREM', KEYS[2], player)
  redis.call('PUBLISH', ARGV[4], string.format('0 %d ', seen) .. player)
  alive = false
end
local revived = 0
if alive then
  if now < seen then now = seen end
else
  if now <= seen then now = seen + 1 end
  revived = 1
  redis.call('HSET', KEYS[1], 'since', string.format('%d', now))
  redis.call('PUBLISH', ARGV[4], string.format('1 %d ', now) .. player)
end
redis.call('HSET', KEYS[1], 'seen', string.format('%d', now))
redis.call('ZADD', KEYS[2], now, player)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {now, revived}
"""

# KEYS: alive set. ARGV: cutoff, channel, limit. Claims (removes) and publishes each player whose
# last sign of life is at or before the cutoff; returns {player, seen, player, seen, ...}.
_SWEEP = """
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES',
                           'LIMIT', 0, tonumber(ARGV[3]))
for i = 1, #expired, 2 do
  redis.call('ZREM', KEYS[1], expired[i])
  redis.call('PUBLISH', ARGV[2], string.format('0 %d ', tonumber(expired[i + 1])) .. expired[i])
end
return expired
"""

# KEYS: player hash. ARGV: 1 connect / 0 disconnect, gateway, retention. Returns 1 if applied.
_SET_CONNECTED = """
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'conn', '1', 'gw', ARGV[2])
else
  local gw = redis.call('HGET', KEYS[1], 'gw') or ''
  if ARGV[2] ~= '' and gw ~= ARGV[2] then return 0 end
  redis.call('HSET', KEYS[1], 'conn', '0', 'gw', '')
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

_SWEEP_BATCH = 500


def decode_change(data: str) -> LivenessChange:
    """A change as published on the channel: ``<0|1> <since_ms> <player id>``."""
    alive, since, player = data.split(" ", 2)
    return LivenessChange(player, alive == "1", int(since))


class RedisPresenceStore:
    """Presence shared by every replica through one Redis (see the module docstring)."""

    def __init__(self, url: str, prefix: str, hub: LivenessHub, silence_ms: int) -> None:
        self.hub = hub
        self.silence_ms = silence_ms
        self._prefix = prefix
        self._alive_key = f"{prefix}alive"
        self.channel = f"{prefix}liveness"
        # Commands time out rather than hang on a dead connection; the subscription is pinged.
        self._redis = aioredis.Redis.from_url(url, decode_responses=True, socket_timeout=5.0,
                                              socket_connect_timeout=5.0,
                                              health_check_interval=10,
                                              client_name=self.client_name(prefix))
        self._heartbeat = self._redis.register_script(_HEARTBEAT)
        self._sweep = self._redis.register_script(_SWEEP)
        self._set_connected = self._redis.register_script(_SET_CONNECTED)
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._closing = False

    @staticmethod
    def client_name(prefix: str) -> str:
        """How this store's connections appear in CLIENT LIST."""
        return "machiavelox-presence:" + "".join(c if c.isalnum() or c in ":-_{}" else "_"
                                                  for c in prefix)

    def player_key(self, player_id: str) -> str:
        return f"{self._prefix}p:{player_id}"

    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        try:
            yield
        except RedisError as exc:
            raise StoreUnavailableError(f"redis: {exc}") from exc

    async def start(self, timeout_s: float = 10.0) -> None:
        """Check Redis, subscribe to the channel, and return once subscribed."""
        async with self._guard():
            await self._redis.ping()
        self._listener = asyncio.create_task(self._listen(), name="presence-redis-listener")
        try:
            await asyncio.wait_for(self._subscribed.wait(), timeout_s)
        except TimeoutError:
            await self.close()
            raise StoreUnavailableError(f"no subscription to {self.channel} after {timeout_s} s"
                                        ) from None

    async def close(self) -> None:
        self._closing = True
        if self._listener is not None:
            await stop_task(self._listener)
            self._listener = None
        await self._redis.aclose()

    async def _listen(self) -> None:
        delay = 0.1
        while not self._closing:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                while not self._closing:
                    message: dict[str, Any] | None = await pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        # First subscription, or redis-py's resubscription after a reconnect:
                        # catch up whatever watchers may have missed meanwhile.
                        await self.hub.resync(self.liveness)
                        self._subscribed.set()
                        delay = 0.1
                    elif message["type"] == "message":
                        try:
                            change = decode_change(message["data"])
                        except ValueError:
                            log.warning("ignored a malformed message on %s: %r", self.channel,
                                        message["data"])
                            continue
                        self.hub.publish(change)
            except (RedisError, StoreUnavailableError) as exc:
                log.warning("redis subscription lost, retrying in %.1f s: %s", delay, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
            except Exception:  # a dead listener would silently starve every watcher
                log.exception("redis listener failed, restarting in %.1f s", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
            finally:
                with contextlib.suppress(RedisError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]  # untyped in redis-py

    async def heartbeat(self, player_id: str, now_ms: int) -> Beat:
        async with self._guard():
            at, revived = await self._heartbeat(
                keys=[self.player_key(player_id), self._alive_key],
                args=[player_id, now_ms, self.silence_ms, self.channel, RETENTION_MS])
        return Beat(int(at), bool(revived))

    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        async with self._guard():
            applied = await self._set_connected(
                keys=[self.player_key(player_id)],
                args=[1 if connected else 0, gateway_id, RETENTION_MS])
        return bool(applied)

    async def presence(self, player_ids: Sequence[str], now_ms: int) -> list[Presence]:
        async with self._guard(), self._redis.pipeline(transaction=False) as pipe:
            for player in player_ids:
                pipe.hmget(self.player_key(player), ["seen", "gw", "conn"])
            rows: list[list[str | None]] = await pipe.execute()
        out = []
        for player, (seen, gateway, conn) in zip(player_ids, rows, strict=True):
            last_seen = int(seen or 0)
            out.append(Presence(player, conn == "1", gateway or "", last_seen,
                                _alive_now(last_seen, now_ms, self.silence_ms)))
        return out

    async def liveness(self, player_ids: Sequence[str]) -> list[LivenessChange]:
        async with self._guard(), self._redis.pipeline(transaction=True) as pipe:
            for player in player_ids:
                pipe.zscore(self._alive_key, player)
                pipe.hmget(self.player_key(player), ["seen", "since"])
            replies: list[Any] = await pipe.execute()
        out = []
        for i, player in enumerate(player_ids):
            score, (seen, since) = replies[2 * i], replies[2 * i + 1]
            if score is not None:
                out.append(LivenessChange(player, True, int(since or score)))
            else:
                out.append(LivenessChange(player, False, int(seen or 0)))
        return out

    async def sweep(self, now_ms: int) -> list[LivenessChange]:
        claimed: list[LivenessChange] = []
        while True:
            async with self._guard():
                reply: list[str] = await self._sweep(
                    keys=[self._alive_key],
                    args=[now_ms - self.silence_ms, self.channel, _SWEEP_BATCH])
            claimed.extend(LivenessChange(reply[i], False, int(float(reply[i + 1])))
                           for i in range(0, len(reply), 2))
            if len(reply) < 2 * _SWEEP_BATCH:
                return claimed
