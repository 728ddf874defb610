"""The stores in-process. The memory store with its clock injected: the transition rules
exactly. The Redis store on the machine's Redis (a prefix per test; a TCP proxy of the test's
own in front of it for outages), on Redis's clock: real time, so its checks are bounds."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import redis

from machiavelox.platform.settings import SettingsError
from machiavelox.presence.hub import Fact, LivenessChange, Watch
from machiavelox.presence.memory_store import MemoryPresenceStore
from machiavelox.presence.redis_store import RedisPresenceStore
from machiavelox.presence.settings import PresenceSettings
from machiavelox.presence.store import (
    Beat,
    Presence,
    PresenceStore,
    StoreUnavailableError,
    stop_task,
    sweep_forever,
)
from tests.support.tcp_proxy import TcpProxy

from .replicas import REDIS_URL, redis_keys

SILENCE = 1000
STALE = 500
INTERVAL_S = 0.1
TIMEOUT_S = 0.3
T0 = 1_700_000_000_000
SLACK_MS = 5  # ms rounding of two clocks (Redis's TIME, this process's monotonic clock)


def silent(player: str, silent_for: int, since: int) -> LivenessChange:
    return LivenessChange(player, False, silent_for_ms=silent_for, since_ms=since)


def alive(player: str, since: int) -> LivenessChange:
    return LivenessChange(player, True, since_ms=since)


def unknown(player: str) -> LivenessChange:
    return LivenessChange(player, False, unknown=True)


async def received(watch: Watch, count: int, timeout_s: float = 5.0) -> list[LivenessChange]:
    out = []
    for _ in range(count):
        change = await asyncio.wait_for(watch.next(), timeout_s)
        assert change is not None
        out.append(change)
    return out


async def nothing_more(watch: Watch, wait_s: float = 0.2) -> None:
    try:
        extra = await asyncio.wait_for(watch.next(), wait_s)
    except TimeoutError:
        return
    pytest.fail(f"unexpected change {extra}")


class Heard:
    def __init__(self, change: LivenessChange) -> None:
        self.change = change
        self.at = time.monotonic()


async def until(watch: Watch, player: str | set[str], kind: str, log: list[Heard],
                timeout_s: float = 10.0) -> LivenessChange:
    """Read `watch` until `player` (each of them, in any order) is `kind` (alive, silent,
    unknown), keeping what was read in `log`; the last one found is returned."""
    waiting = {player} if isinstance(player, str) else set(player)
    deadline = time.monotonic() + timeout_s
    for _ in range(100):
        change = await asyncio.wait_for(watch.next(), max(0.01, deadline - time.monotonic()))
        assert change is not None, "the watch ended"
        log.append(Heard(change))
        got = "unknown" if change.unknown else "alive" if change.alive else "silent"
        if change.player_id in waiting and got == kind:
            waiting.discard(change.player_id)
            if not waiting:
                return change
    pytest.fail(f"no {kind} for {waiting}")


# ---------------------------------------------------------------------- the memory store
class Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


async def memory(started_at: int = T0 - 100 * SILENCE) -> tuple[MemoryPresenceStore, Clock]:
    clock = Clock(started_at)
    store = MemoryPresenceStore(SILENCE, STALE, clock=clock)
    await store.start()
    clock.now = T0
    return store, clock


async def test_memory_revival_and_silence_are_told_once() -> None:
    """silent_for_ms is the duration on the store's clock since the last sign of life."""
    store, clock = await memory()
    watch = await store.watch(["p1"])
    assert await received(watch, 1) == [silent("p1", 100 * SILENCE, T0 - 100 * SILENCE)]
    assert await store.heartbeat("p1") == Beat(T0, revived=True)
    clock.now = T0 + 500
    assert await store.heartbeat("p1") == Beat(T0 + 500, revived=False)
    clock.now = T0 + 500 + SILENCE - 1
    assert await store.tick() == []
    clock.now = T0 + 500 + SILENCE
    assert await store.tick() == [Fact("p1", False, T0 + 500)]
    clock.now += 10
    assert await store.tick() == []
    assert await received(watch, 2) == [alive("p1", T0), silent("p1", SILENCE, T0 + 500)]
    await nothing_more(watch)


async def test_memory_heartbeat_past_the_threshold_reports_the_silence_itself() -> None:
    store, clock = await memory()
    watch = await store.watch(["p1"])
    await received(watch, 1)
    await store.heartbeat("p1")
    clock.now = T0 + SILENCE
    assert await store.heartbeat("p1") == Beat(T0 + SILENCE, revived=True)
    assert await store.tick() == []
    assert await received(watch, 3) == [alive("p1", T0), silent("p1", SILENCE, T0),
                                        alive("p1", T0 + SILENCE)]
    await nothing_more(watch)


async def test_memory_time_never_goes_backwards() -> None:
    store, clock = await memory()
    await store.heartbeat("p1")
    clock.now = T0 - 50
    assert await store.heartbeat("p1") == Beat(T0, revived=False)
    clock.now = T0 + SILENCE
    await store.tick()
    clock.now = T0 - 10  # a revival stamped no later than the last sign of life: 1 ms after it
    assert await store.heartbeat("p1") == Beat(T0 + 1, revived=True)


async def test_memory_silence_is_never_backdated_past_the_start() -> None:
    """A store that just started does not know what happened before: a player never seen is
    unknown for the threshold, then silent for as long as the store has run (without the
    start in the rule, silent at once for 1.7e12 ms)."""
    store, clock = await memory(started_at=T0)
    watch = await store.watch(["p1"])
    assert await received(watch, 1) == [unknown("p1")]
    clock.now = T0 + SILENCE - 1
    await store.tick()
    await nothing_more(watch)
    clock.now = T0 + SILENCE
    await store.tick()
    assert await received(watch, 1) == [silent("p1", SILENCE, T0)]


async def test_memory_presence_and_facts() -> None:
    store, clock = await memory()
    assert (await store.read(["p1"]))[1] == [Fact("p1", False, 0)]
    await store.heartbeat("p1")
    clock.now = T0 + 200
    await store.heartbeat("p1")
    clock.now = T0 + 200 + SILENCE - 1
    assert await store.presence(["p1", "ghost", "p1"]) == [
        Presence("p1", False, "", T0 + 200, True),
        Presence("ghost", False, "", 0, False),
        Presence("p1", False, "", T0 + 200, True),
    ]
    clock.now = T0 + 200 + SILENCE
    assert (await store.presence(["p1"]))[0].alive is False
    assert (await store.read(["p1", "ghost"]))[1] == [Fact("p1", True, T0),
                                                      Fact("ghost", False, 0)]
    await store.tick()
    assert (await store.read(["p1"]))[1] == [Fact("p1", False, T0 + 200)]


async def test_sweeper_ticks_until_stopped() -> None:
    store, clock = await memory()
    watch = await store.watch(["p1"])
    await received(watch, 1)
    await store.heartbeat("p1")
    stop = asyncio.Event()
    sweeper = asyncio.create_task(sweep_forever(store, 0.01, stop))
    assert await received(watch, 1) == [alive("p1", T0)]
    await nothing_more(watch, 0.05)  # the wall clock moves, the injected one does not
    clock.now = T0 + SILENCE
    assert await received(watch, 1) == [silent("p1", SILENCE, T0)]
    stop.set()
    await asyncio.wait_for(sweeper, 1.0)


async def test_stop_task_outlasts_a_swallowed_cancellation() -> None:
    async def stubborn() -> None:
        for _ in range(3):  # like a client library absorbing a cancellation mid-command
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(stop_task(task), 5.0)
    assert task.done()


def test_settings_from_env() -> None:
    assert PresenceSettings.from_env({}) == PresenceSettings()
    default = PresenceSettings()
    assert default.port == 7400 and default.silence_ms == 5000
    assert (default.sweep_interval_s, default.store_timeout_s, default.stale_ms) == (
        0.5, 1.0, 2500)
    s = PresenceSettings.from_env({"MACHIAVELOX_PRESENCE_PORT": "7500",
                                   "MACHIAVELOX_PRESENCE_REDIS_URL": "redis://r:6379/2",
                                   "MACHIAVELOX_PRESENCE_SILENCE_MS": "300",
                                   "MACHIAVELOX_LOG_LEVEL": "debug"})
    assert (s.port, s.redis_url, s.silence_ms, s.log_level) == (7500, "redis://r:6379/2", 300,
                                                                 "DEBUG")
    assert (s.sweep_interval_s, s.store_timeout_s, s.stale_ms) == (0.03, 0.2, 150)
    for bad in ({"MACHIAVELOX_PRESENCE_PORT": "x"}, {"MACHIAVELOX_PRESENCE_PORT": "70000"},
                {"MACHIAVELOX_PRESENCE_REDIS_URL": "localhost:6379"},
                {"MACHIAVELOX_PRESENCE_SILENCE_MS": "0"}, {"MACHIAVELOX_LOG_LEVEL": "LOUD"}):
        with pytest.raises(SettingsError):
            PresenceSettings.from_env(bad)


# ---------------------------------------------------------------------- both stores
MakeStore = Callable[[], Awaitable[PresenceStore]]


@pytest.fixture(params=["memory", "redis"])
async def make_store(request: pytest.FixtureRequest, redis_prefix: str
                     ) -> AsyncIterator[MakeStore]:
    made: list[PresenceStore] = []

    async def make() -> PresenceStore:
        store: PresenceStore
        if request.param == "redis":
            store = RedisPresenceStore(REDIS_URL, redis_prefix, SILENCE,
                                       replica_id=f"test-{len(made)}", stale_ms=STALE,
                                       interval_s=INTERVAL_S, timeout_s=TIMEOUT_S)
        else:
            store = MemoryPresenceStore(SILENCE, STALE)
        await store.start()
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


async def test_connection_and_late_disconnects(make_store: MakeStore) -> None:
    store = await make_store()

    async def connection() -> tuple[bool, str]:
        p = (await store.presence(["p1"]))[0]
        return p.connected, p.gateway_id

    assert await store.set_connected("p1", "gw-a", True)
    assert await connection() == (True, "gw-a")
    assert await store.set_connected("p1", "gw-b", True)  # moved to another gateway
    assert not await store.set_connected("p1", "gw-a", False)  # the old one's late goodbye
    assert await connection() == (True, "gw-b")
    assert await store.set_connected("p1", "gw-b", False)
    assert await connection() == (False, "")
    assert await store.set_connected("p1", "gw-c", True)
    assert await store.set_connected("p1", "", False)  # "" disconnects from any gateway
    assert await connection() == (False, "")
    assert (await store.read(["p1"]))[1] == [Fact("p1", False, 0)]  # not a heartbeat


# ---------------------------------------------------------------------- the Redis store
class Replicas:
    """Redis stores sharing one prefix, like replicas, each with its sweeper running."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.running: dict[RedisPresenceStore, tuple[asyncio.Task[None], list[Fact]]] = {}

    async def start(self, replica_id: str, url: str = REDIS_URL,
                    forget_ms: int = 120_000) -> RedisPresenceStore:
        store = RedisPresenceStore(url, self.prefix, SILENCE, replica_id=replica_id,
                                   stale_ms=STALE, interval_s=INTERVAL_S, timeout_s=TIMEOUT_S,
                                   forget_ms=forget_ms)
        await store.start()
        claims: list[Fact] = []

        async def sweep() -> None:
            while True:
                claims.extend(await store.tick())
                await asyncio.sleep(INTERVAL_S)

        self.running[store] = (asyncio.create_task(sweep()), claims)
        return store

    def claims(self, store: RedisPresenceStore) -> list[Fact]:
        return self.running[store][1]

    async def stop(self, store: RedisPresenceStore) -> None:
        task, _ = self.running.pop(store)
        await stop_task(task)
        await store.close()

    async def stop_all(self) -> None:
        for store in list(self.running):
            await self.stop(store)


@pytest.fixture
async def replicas(redis_prefix: str) -> AsyncIterator[Replicas]:
    running = Replicas(redis_prefix)
    try:
        yield running
    finally:
        await running.stop_all()


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    relay = TcpProxy("127.0.0.1", 6379)
    await relay.start()
    yield relay
    relay.resume()
    await relay.close()


@pytest.fixture
def admin() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    yield client
    client.close()


def redis_now_ms(admin: redis.Redis) -> int:
    seconds, micros = admin.time()
    return int(seconds) * 1000 + int(micros) // 1000


async def test_replicas_share_state_and_claim_each_lapse_once(
        replicas: Replicas, redis_prefix: str) -> None:
    a, b = await replicas.start("a"), await replicas.start("b")
    sent = time.monotonic()
    at = (await a.heartbeat("p 1:ü")).at_ms
    watch_a, watch_b = await a.watch(["p 1:ü"]), await b.watch(["p 1:ü"])
    assert (await b.presence(["p 1:ü"]))[0].last_seen_ms == at
    assert any(key.startswith(redis_prefix) for key in redis_keys(redis_prefix))
    log: list[Heard] = []
    for watch in (watch_a, watch_b):
        assert await until(watch, "p 1:ü", "alive", log) == alive("p 1:ü", at)
        told = await until(watch, "p 1:ü", "silent", log)
        assert (told.since_ms, told.alive, told.unknown) == (at, False, False)
        assert SILENCE <= told.silent_for_ms <= (time.monotonic() - sent) * 1000 + SLACK_MS
    assert [c.change for c in log if c.change.unknown] == []  # nothing in the way
    assert len(replicas.claims(a)) + len(replicas.claims(b)) == 1  # one claim, told to both
    await nothing_more(watch_a)
    await nothing_more(watch_b)


async def test_every_time_is_redis_own(replicas: Replicas, admin: redis.Redis,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamps come from Redis's TIME, not this process's wall clock (stepped 60 s here)."""
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 60_000_000_000)
    store = await replicas.start("a")
    before = redis_now_ms(admin)
    at = (await store.heartbeat("p1")).at_ms
    after = redis_now_ms(admin)
    assert before <= at <= after
    [p1] = await store.presence(["p1"])
    assert (p1.last_seen_ms, p1.alive) == (at, True)


async def test_an_outage_is_unknown_and_its_end_never_backdates_a_silence(
        proxy: TcpProxy, replicas: Replicas) -> None:
    """Replica A reaches Redis through a proxy the test stalls; B directly. Proves: A's
    watchers are told unknown for everyone (a heartbeat to A fails); B tells unknown, never
    silent, for a player whose silence began during A's outage (A may have been failing their
    heartbeats); a silence known before the outage stays; once A is back every watcher gets
    the truth, and every silence told after it counts from A's return, never before."""
    a = await replicas.start("a", url=f"redis://127.0.0.1:{proxy.port}/0")
    b = await replicas.start("b")
    players = ["stay", "gone", "mid"]
    on_a, on_b = await a.watch(players), await b.watch(players)
    log_a: list[Heard] = []
    log_b: list[Heard] = []
    await a.heartbeat("gone")
    await a.heartbeat("mid")
    keep = asyncio.create_task(heartbeats(b, "stay"))
    try:
        for watch, log in ((on_a, log_a), (on_b, log_b)):
            await until(watch, {"gone", "mid"}, "silent", log)  # known before the outage
        proxy.stall()
        stalled = time.monotonic()
        await until(on_a, set(players), "unknown", log_a)
        with pytest.raises(StoreUnavailableError):
            await a.heartbeat("stay")
        await b.heartbeat("mid")  # back, then silent again during A's outage
        await until(on_b, "mid", "alive", log_b)
        await until(on_b, "mid", "unknown", log_b)
        await asyncio.sleep(max(0.0, stalled + 2.5 - time.monotonic()))
        proxy.resume()
        resumed = time.monotonic()
        await until(on_a, "stay", "alive", log_a)
        await until(on_a, {"gone", "mid"}, "silent", log_a)
        await until(on_b, {"gone", "mid"}, "silent", log_b)
    finally:
        await stop_task(keep)
    assert [h.change for h in log_b if stalled <= h.at < resumed
            and not h.change.alive and not h.change.unknown] == []  # no silence told meanwhile
    for heard in (*log_a, *log_b):
        if heard.at >= resumed and not heard.change.alive and not heard.change.unknown:
            assert SILENCE <= heard.change.silent_for_ms <= (
                (heard.at - resumed) * 1000 + SLACK_MS), heard.change
    stay_on_b = [h.change for h in log_b if h.change.player_id == "stay"]
    first_alive = next(i for i, c in enumerate(stay_on_b) if c.alive)
    assert all(c.alive for c in stay_on_b[first_alive:])  # heartbeating on B: alive throughout


async def heartbeats(store: PresenceStore, player: str, every_s: float = 0.2) -> None:
    while True:
        await store.heartbeat(player)
        await asyncio.sleep(every_s)


async def test_a_lost_subscription_is_unknown_then_resynced(
        replicas: Replicas, redis_prefix: str, admin: redis.Redis) -> None:
    """B's subscription killed: B's watchers are told unknown at once, even for a player who
    stays alive throughout (B may have missed anything), then the truth once it is back."""
    a, b = await replicas.start("a"), await replicas.start("b")
    at = (await a.heartbeat("p2")).at_ms
    await a.heartbeat("p1")
    keep = asyncio.create_task(heartbeats(a, "p1"))
    try:
        watch = await b.watch(["p1", "p2"])
        admin.publish(b.channel, "junk")
        log: list[Heard] = []
        await until(watch, "p1", "alive", log)
        assert await until(watch, "p2", "alive", log) == alive("p2", at)
        # Cut B's subscription only (by client name), then change state meanwhile.
        name = RedisPresenceStore.client_name(redis_prefix)
        subscribers = [c["id"] for c in admin.client_list() if c.get("name") == name
                       and c.get("sub") != "0"]
        assert len(subscribers) == 2
        admin.client_kill_filter(_id=max(subscribers))  # B subscribed last
        cut = time.monotonic()
        await until(watch, "p1", "unknown", log)
        await until(watch, "p1", "alive", log)
        told = await until(watch, "p2", "silent", log)  # the truth, counted from B's return
        assert SILENCE <= told.silent_for_ms <= (time.monotonic() - cut) * 1000 + SLACK_MS
    finally:
        await stop_task(keep)


async def test_restarts_and_new_replicas(replicas: Replicas, admin: redis.Redis,
                                         redis_prefix: str) -> None:
    """A new replica joining live ones moves nothing for the others (it had no heartbeats to
    lose) but its own watchers count silence from its start; a replica restarted after a crash
    (its old beacon still there) may have lost heartbeats: silences count from its return
    everywhere."""
    a = await replicas.start("a")
    watch_a = await a.watch(["p1"])
    await a.heartbeat("p1")
    log: list[Heard] = []
    await until(watch_a, "p1", "silent", log)
    joined = time.monotonic()
    b = await replicas.start("b")
    watch_b = await b.watch(["p1"])
    log_b: list[Heard] = []
    await until(watch_b, "p1", "unknown", log_b)
    told = await until(watch_b, "p1", "silent", log_b)
    assert told.silent_for_ms <= (time.monotonic() - joined) * 1000 + SLACK_MS
    await nothing_more(watch_a)  # A's view did not move
    # "c" crashed earlier: its beacon is still there when it starts again.
    admin.zadd(f"{redis_prefix}replicas", {"c": redis_now_ms(admin) - 50})
    restarted = time.monotonic()
    await replicas.start("c")
    await until(watch_a, "p1", "unknown", log)
    told = await until(watch_a, "p1", "silent", log)
    assert SILENCE <= told.silent_for_ms <= (time.monotonic() - restarted) * 1000 + SLACK_MS


async def test_a_replica_lost_for_good_is_forgotten(replicas: Replicas, admin: redis.Redis,
                                                     redis_prefix: str) -> None:
    """A beacon that stops (a replica gone without leaving) holds every new silence unknown
    until it is forgotten; the silence then counts from that moment."""
    forget_ms = 1500
    a = await replicas.start("a", forget_ms=forget_ms)
    watch = await a.watch(["p1"])
    admin.zadd(f"{redis_prefix}replicas", {"ghost": redis_now_ms(admin)})
    ghost = time.monotonic()
    await a.heartbeat("p1")
    log: list[Heard] = []
    await until(watch, "p1", "unknown", log)
    told = await until(watch, "p1", "silent", log)
    assert admin.zscore(f"{redis_prefix}replicas", "ghost") is None
    assert SILENCE <= told.silent_for_ms <= (
        (time.monotonic() - ghost) * 1000 - forget_ms + SLACK_MS)
