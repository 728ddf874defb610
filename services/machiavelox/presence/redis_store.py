"""Presence shared by every replica through one Redis.

Keys (under the prefix, `{mxv}:` with a hash tag on Redis Cluster: the scripts touch several):
- `p:{id}`: a hash per player (`seen`, `since`, `gw`, `conn`), expiring 24 h after its last write.
- `alive`: the players currently alive, scored by their last sign of life.
- `replicas`: each replica's last *beacon* (scored by its time): written by its every sweep while
  it can use the store; `floor`: the last moment presence could not tell (`known_from`).
- the pub/sub channel `liveness`: every fact, as it changes; each replica subscribes and feeds its
  own hub, so a watcher on any replica hears of changes made on any other.

One clock: every time in Redis is Redis's own (`redis.call('TIME')` inside the scripts), so the
replicas never compare their wall clocks. Transitions are decided inside Lua scripts, which Redis
runs atomically: the heartbeat script revives a player (lapsed -> alive) only if they are not in
the alive set; each replica's sweep script (every `interval_s`) records its beacon, works out what
presence vouches for (store.py), and claims (ZREM) and publishes the lapse of every alive player
whose silence is vouched for `silence_ms` or is in an outage's way (then it is told unknown), so
each lapse is published once whichever replica's sweep runs first. A heartbeat that finds its
player still in the set but past the threshold (no sweep ran yet) publishes the lapse itself first.
Only transitions are published, not every heartbeat.

The floor moves (store.py's rule) when a replica sweeps again after an outage of its own (or
after more than `stale_ms` without a beacon: a sweep held up in the network and run late), starts
with its old beacon still there (a restart after a crash: replica ids are host:port, stable across
restarts), starts when no other replica's beacon is fresh (presence was down), leaves while it
could not use the store, or is found without a beacon for `forget_ms` (lost for good; removed).
A replica that stops cleanly removes its beacon. A replica cut from Redis for longer than
`forget_ms` is forgotten: from then on the others count silences again (its own heartbeats keep
failing UNAVAILABLE, so the gateways know first-hand).

Outages are seen within about `timeout_s` (every command has that timeout, and is never retried:
the caller is told; the subscription is pinged every `interval_s` and is given up when nothing
comes back within `timeout_s` + 2 `interval_s`). A heartbeat that failed there is a sign of life
no one stored, so `timeout_s` must be shorter than `silence_ms` less the apps' heartbeat interval
(settings.py: 1 s against 5 s - 2 s).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from .hub import WATCH_BACKLOG, Context, Fact
from .store import Beat, Presence, PresenceStore, StoreUnavailableError, alive_now, stop_task

log = logging.getLogger(__name__)

RETENTION_MS = 24 * 3600 * 1000
"""A player's Redis hash expires this long after its last write."""

FORGET_MS = 120_000
"""A replica without a beacon this long is forgotten (longer than the outages it covers)."""

_SWEEP_BATCH = 500

_NOW = """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function oldest_beacon(replicas, now)
  local oldest = redis.call('ZRANGE', replicas, 0, 0, 'WITHSCORES')
  if oldest[2] and tonumber(oldest[2]) < now then return tonumber(oldest[2]) end
  return now
end
"""

# KEYS: player hash, alive set. ARGV: player, silence, channel, retention.
# Returns {recorded time, 1 if revived}.
_HEARTBEAT = _NOW + """
local player = ARGV[1]
local now = now_ms()
local seen = tonumber(redis.call('HGET', KEYS[1], 'seen') or '0')
local alive = redis.call('ZSCORE', KEYS[2], player) ~= false
if alive and now - seen >= tonumber(ARGV[2]) then
  redis.call('ZREM', KEYS[2], player)
  redis.call('PUBLISH', ARGV[3], string.format('0 %d 0 0 0 ', seen) .. player)
  alive = false
end
local revived = 0
if alive then
  if now < seen then now = seen end
else
  if now <= seen then now = seen + 1 end
  revived = 1
  redis.call('HSET', KEYS[1], 'since', string.format('%d', now))
  redis.call('PUBLISH', ARGV[3], string.format('1 %d ', now) .. player)
end
redis.call('HSET', KEYS[1], 'seen', string.format('%d', now))
redis.call('ZADD', KEYS[2], now, player)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {now, revived}
"""

# KEYS: alive set, replicas, floor. ARGV: replica id, mode (join: starting; again: back from an
# outage; beat), silence, stale, forget, channel, limit. Records the beacon, moves the floor if
# presence could not tell until now, claims (removes) and publishes the lapses (module
# docstring). Returns {now, known until, floor, {player, seen, player, seen, ...}}.
_SWEEP = _NOW + """
local id, mode = ARGV[1], ARGV[2]
local silence, stale, forget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local now = now_ms()
local floor = tonumber(redis.call('GET', KEYS[3]) or '0')
local raise = false
for _, replica in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. (now - forget))) do
  redis.call('ZREM', KEYS[2], replica)
  raise = true
end
local mine = redis.call('ZSCORE', KEYS[2], id)
if mode == 'join' then
  local fresh = redis.call('ZCOUNT', KEYS[2], now - stale, '+inf')
  if mine then raise = true end
  if fresh == 0 then raise = true end
elseif mode == 'again' or not mine or now - tonumber(mine) > stale then
  raise = true  -- back from an outage (or a beat delayed in the network: executed late)
end
if raise and now > floor then
  floor = now
  redis.call('SET', KEYS[3], string.format('%d', floor))
end
redis.call('ZADD', KEYS[2], now, id)
local upto = oldest_beacon(KEYS[2], now)
local cutoff = now - silence
if now - upto <= stale then
  cutoff = math.max(upto - silence, math.min(floor - 1, now - silence))
end
local claimed = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', cutoff, 'WITHSCORES',
                           'LIMIT', 0, tonumber(ARGV[7]))
local context = string.format(' %d %d %d ', now, upto, floor)
for i = 1, #claimed, 2 do
  redis.call('ZREM', KEYS[1], claimed[i])
  redis.call('PUBLISH', ARGV[6],
             string.format('0 %d', tonumber(claimed[i + 1])) .. context .. claimed[i])
end
return {now, upto, floor, claimed}
"""

# KEYS: alive set, replicas, floor, then each player's hash. ARGV: the players.
# Returns {now, known until, floor, alive?, seen, since, alive?, seen, since, ...}.
_READ = _NOW + """
local now = now_ms()
local out = {now, oldest_beacon(KEYS[2], now), tonumber(redis.call('GET', KEYS[3]) or '0')}
for i, player in ipairs(ARGV) do
  local row = redis.call('HMGET', KEYS[3 + i], 'seen', 'since')
  out[#out + 1] = redis.call('ZSCORE', KEYS[1], player) and 1 or 0
  out[#out + 1] = row[1] or '0'
  out[#out + 1] = row[2] or '0'
end
return out
"""

# KEYS: replicas, floor. ARGV: replica id, 1 if it leaves while it could not use the store.
_LEAVE = _NOW + """
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  local now = now_ms()
  if now > tonumber(redis.call('GET', KEYS[2]) or '0') then
    redis.call('SET', KEYS[2], string.format('%d', now))
  end
end
return 1
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


def decode_fact(data: str) -> tuple[Fact, tuple[int, int, int] | None]:
    """A fact as published: ``1 <since> <player>`` (revived), or ``0 <seen> <now> <known until>
    <floor> <player>`` (lapsed; the context of the sweep that claimed it, zeros from a
    heartbeat)."""
    if data.startswith("1 "):
        _, since, player = data.split(" ", 2)
        return Fact(player, True, int(since)), None
    kind, seen, now, until, floor, player = data.split(" ", 5)
    if kind != "0":
        raise ValueError(f"unknown fact kind {kind!r}")
    context = (int(now), int(until), int(floor)) if int(now) else None
    return Fact(player, False, int(seen)), context


class _Stalled(Exception):
    """Nothing came back on the subscription in time."""


class RedisPresenceStore(PresenceStore):
    """Presence shared by every replica through one Redis (see the module docstring)."""

    def __init__(self, url: str, prefix: str, silence_ms: int, *, replica_id: str,
                 stale_ms: int, interval_s: float, timeout_s: float = 1.0,
                 forget_ms: int = FORGET_MS, backlog: int = WATCH_BACKLOG) -> None:
        super().__init__(silence_ms, stale_ms, backlog)
        self.replica_id = replica_id
        self.stale_ms = stale_ms
        self.interval_s = interval_s
        self.forget_ms = forget_ms
        self._deadline_s = timeout_s + 2 * interval_s
        self._prefix = prefix
        self._alive_key = f"{prefix}alive"
        self._replicas_key = f"{prefix}replicas"
        self._floor_key = f"{prefix}floor"
        self.channel = f"{prefix}liveness"
        # Every command times out and is never retried: an outage is seen, and told, at once.
        self._redis = aioredis.Redis.from_url(url, decode_responses=True,
                                              socket_timeout=timeout_s,
                                              socket_connect_timeout=timeout_s,
                                              retry=Retry(NoBackoff(), 0),
                                              health_check_interval=0,
                                              client_name=self.client_name(prefix))
        self._heartbeat = self._redis.register_script(_HEARTBEAT)
        self._sweep = self._redis.register_script(_SWEEP)
        self._read = self._redis.register_script(_READ)
        self._leave = self._redis.register_script(_LEAVE)
        self._set_connected = self._redis.register_script(_SET_CONNECTED)
        self._listener: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._started_ms = 0  # this replica's own start (or return), Redis's clock
        self._joined = False
        self._closing = False

    @staticmethod
    def client_name(prefix: str) -> str:
        """How this store's connections appear in CLIENT LIST."""
        return "machiavelox-presence:" + "".join(c if c.isalnum() or c in ":-_{}" else "_"
                                                  for c in prefix)

    def player_key(self, player_id: str) -> str:
        return f"{self._prefix}p:{player_id}"

    def _context(self, now: int, until: int, floor: int) -> Context:
        return Context(now, until, max(floor, self._started_ms))

    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        try:
            yield
        except RedisError as exc:
            self.trouble(f"redis: {exc}")
            raise StoreUnavailableError(f"redis: {exc}") from exc

    # ------------------------------------------------------------------ lifecycle
    async def start(self, timeout_s: float = 10.0) -> None:
        """Check Redis, subscribe to the channel, record the first beacon."""
        async with self._guard():
            await self._redis.ping()
        self._listener = asyncio.create_task(self._listen(), name="presence-redis-listener")
        try:
            try:
                await asyncio.wait_for(self._subscribed.wait(), timeout_s)
            except TimeoutError:
                raise StoreUnavailableError(f"no subscription to {self.channel} after "
                                            f"{timeout_s} s") from None
            async with self._guard():
                context, _ = await self._beacon("join")
        except StoreUnavailableError:
            await self.close()
            raise
        self._joined = True
        self.back(context, [])

    async def close(self) -> None:
        self._closing = True
        if self._listener is not None:
            await stop_task(self._listener)
            self._listener = None
        if self._joined:
            self._joined = False
            try:  # a clean stop: its beacon goes (a crash leaves it, and moves the floor)
                await self._leave(keys=[self._replicas_key, self._floor_key],
                                  args=[self.replica_id, 0 if self.healthy else 1])
            except RedisError as exc:
                log.warning("could not remove this replica's beacon: %s", exc)
        await self._redis.aclose()

    # ------------------------------------------------------------------ the sweep
    async def _beacon(self, mode: str) -> tuple[Context, list[Fact]]:
        """One run of the sweep script: the context after it and the lapses it claimed."""
        now, until, floor, claimed = await self._sweep(
            keys=[self._alive_key, self._replicas_key, self._floor_key],
            args=[self.replica_id, mode, self.silence_ms, self.stale_ms, self.forget_ms,
                  self.channel, _SWEEP_BATCH])
        if mode != "beat":  # this replica could not tell before now
            self._started_ms = int(now)
        lapses = [Fact(claimed[i], False, int(float(claimed[i + 1])))
                  for i in range(0, len(claimed), 2)]
        return self._context(int(now), int(until), int(floor)), lapses

    async def tick(self) -> list[Fact]:
        if not self.healthy:
            return await self._recover()
        lapses: list[Fact] = []
        try:
            async with self._guard():
                while True:
                    context, claimed = await self._beacon("beat")
                    lapses.extend(claimed)
                    if len(claimed) < _SWEEP_BATCH:
                        break
        except StoreUnavailableError:
            return lapses
        self.hub.update(context)
        return lapses

    async def _recover(self) -> list[Fact]:
        """After an outage: once subscribed again and the store answers, record the return
        (the floor moves) and tell every watcher the truth, read afresh."""
        if not self._subscribed.is_set():
            return []
        try:
            _, lapses = await self._beacon("again")
            context, facts = await self._read_facts(self.hub.watched())
        except RedisError:
            return []  # still out (the watchers were told)
        log.info("presence store back: silences count from now")
        self.back(context, facts)
        return lapses

    # ------------------------------------------------------------------ the live feed
    async def _listen(self) -> None:
        loop = asyncio.get_running_loop()
        delay = self.interval_s
        while not self._closing:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                heard = pinged = loop.time()
                while not self._closing:
                    message: dict[str, Any] | None = await pubsub.get_message(
                        timeout=self.interval_s)
                    now = loop.time()
                    if message is not None:
                        heard = now
                        if message["type"] == "subscribe":
                            self._subscribed.set()
                            delay = self.interval_s
                        elif message["type"] == "message":
                            self._on_message(message["data"])
                    if now - pinged >= self.interval_s:
                        await pubsub.ping()
                        pinged = now
                    if now - heard > self._deadline_s:
                        raise _Stalled(f"nothing on the subscription for {now - heard:.1f} s")
            except (RedisError, OSError, _Stalled) as exc:
                self._lose_subscription(f"subscription lost: {exc!r}")
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            except Exception:  # a dead listener would silently starve every watcher
                self._lose_subscription("subscription listener failed")
                log.exception("redis listener failed, restarting in %.1f s", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            finally:
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.aclose()

    def _lose_subscription(self, reason: str) -> None:
        self._subscribed.clear()
        if not self._closing:
            self.trouble(reason)

    def _on_message(self, data: str) -> None:
        try:
            fact, context = decode_fact(data)
        except ValueError:
            log.warning("ignored a malformed message on %s: %r", self.channel, data)
            return
        self.hub.update(self._context(*context) if context is not None else None, [fact])

    # ------------------------------------------------------------------ requests
    async def heartbeat(self, player_id: str) -> Beat:
        async with self._guard():
            at, revived = await self._heartbeat(
                keys=[self.player_key(player_id), self._alive_key],
                args=[player_id, self.silence_ms, self.channel, RETENTION_MS])
        return Beat(int(at), bool(revived))

    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        async with self._guard():
            applied = await self._set_connected(
                keys=[self.player_key(player_id)],
                args=[1 if connected else 0, gateway_id, RETENTION_MS])
        return bool(applied)

    async def presence(self, player_ids: Sequence[str]) -> list[Presence]:
        async with self._guard(), self._redis.pipeline(transaction=False) as pipe:
            pipe.time()
            for player in player_ids:
                pipe.hmget(self.player_key(player), ["seen", "gw", "conn"])
            replies: list[Any] = await pipe.execute()
        seconds, micros = replies[0]
        now = int(seconds) * 1000 + int(micros) // 1000
        out = []
        for player, (seen, gateway, conn) in zip(player_ids, replies[1:], strict=True):
            last_seen = int(seen or 0)
            out.append(Presence(player, conn == "1", gateway or "", last_seen,
                                alive_now(last_seen, now, self.silence_ms)))
        return out

    async def read(self, player_ids: Sequence[str]) -> tuple[Context, list[Fact]]:
        async with self._guard():
            return await self._read_facts(player_ids)

    async def _read_facts(self, player_ids: Sequence[str], batch: int = 1000
                          ) -> tuple[Context, list[Fact]]:
        facts: list[Fact] = []
        context = None
        for first in range(0, max(1, len(player_ids)), batch):
            players = list(player_ids[first:first + batch])
            reply: list[Any] = await self._read(
                keys=[self._alive_key, self._replicas_key, self._floor_key,
                      *(self.player_key(p) for p in players)],
                args=players)
            if context is None:
                context = self._context(int(reply[0]), int(reply[1]), int(reply[2]))
            for i, player in enumerate(players):
                alive, seen, since = reply[3 + 3 * i: 6 + 3 * i]
                if int(alive):
                    facts.append(Fact(player, True, int(since or seen)))
                else:
                    facts.append(Fact(player, False, int(seen)))
        assert context is not None
        return context, facts
