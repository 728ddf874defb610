"""The stores in-process, both backends, with time passed in: the transition rules exactly."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import redis

from machiavelox.platform.settings import SettingsError
from machiavelox.presence.settings import PresenceSettings
from machiavelox.presence.store import (
    Beat,
    LivenessChange,
    LivenessHub,
    MemoryPresenceStore,
    Presence,
    PresenceStore,
    RedisPresenceStore,
    Watch,
    stop_task,
    sweep_forever,
)

from .conftest import REDIS_URL, redis_keys

SILENCE = 1000
T0 = 1_700_000_000_000

MakeStore = Callable[[], Awaitable[tuple[PresenceStore, LivenessHub]]]


@pytest.fixture
async def make_store(backend: str, redis_prefix: str) -> AsyncIterator[MakeStore]:
    """Makes stores; with Redis they share one prefix, like replicas."""
    made: list[PresenceStore] = []

    async def make() -> tuple[PresenceStore, LivenessHub]:
        hub = LivenessHub()
        store: PresenceStore
        if backend == "redis":
            store = RedisPresenceStore(REDIS_URL, redis_prefix, hub, SILENCE)
        else:
            store = MemoryPresenceStore(hub, SILENCE)
        await store.start()
        made.append(store)
        return store, hub

    yield make
    for store in made:
        await store.close()


async def received(watch: Watch, count: int) -> list[LivenessChange]:
    out = []
    for _ in range(count):
        change = await asyncio.wait_for(watch.next(), 5.0)
        assert change is not None
        out.append(change)
    return out


async def nothing_more(watch: Watch, wait_s: float = 0.2) -> None:
    try:
        extra = await asyncio.wait_for(watch.next(), wait_s)
    except TimeoutError:
        return
    pytest.fail(f"unexpected change {extra}")


async def test_revival_and_silence_are_published_once(make_store: MakeStore) -> None:
    store, hub = await make_store()
    watch = hub.watch(["p1"])
    assert await store.heartbeat("p1", T0) == Beat(T0, revived=True)
    assert await store.heartbeat("p1", T0 + 500) == Beat(T0 + 500, revived=False)
    assert await store.sweep(T0 + 500 + SILENCE - 1) == []
    silent = LivenessChange("p1", False, T0 + 500)
    assert await store.sweep(T0 + 500 + SILENCE) == [silent]
    assert await store.sweep(T0 + 500 + SILENCE + 10) == []
    assert await received(watch, 2) == [LivenessChange("p1", True, T0), silent]
    await nothing_more(watch)


async def test_a_heartbeat_past_the_threshold_reports_the_silence_itself(
        make_store: MakeStore) -> None:
    store, hub = await make_store()
    watch = hub.watch(["p1"])
    await store.heartbeat("p1", T0)
    assert await store.heartbeat("p1", T0 + SILENCE) == Beat(T0 + SILENCE, revived=True)
    assert await store.sweep(T0 + SILENCE) == []
    assert await received(watch, 3) == [LivenessChange("p1", True, T0),
                                        LivenessChange("p1", False, T0),
                                        LivenessChange("p1", True, T0 + SILENCE)]
    await nothing_more(watch)


async def test_time_never_goes_backwards(make_store: MakeStore) -> None:
    store, hub = await make_store()
    watch = hub.watch(["p1"])
    await store.heartbeat("p1", T0)
    assert await store.heartbeat("p1", T0 - 50) == Beat(T0, revived=False)
    await store.sweep(T0 + SILENCE)
    # A revival stamped no later than the last sign of life is recorded 1 ms after it.
    assert await store.heartbeat("p1", T0 - 10) == Beat(T0 + 1, revived=True)
    changes = await received(watch, 3)
    assert changes == [LivenessChange("p1", True, T0), LivenessChange("p1", False, T0),
                       LivenessChange("p1", True, T0 + 1)]
    assert [c.order for c in changes] == sorted(c.order for c in changes)


async def test_presence_and_liveness_snapshots(make_store: MakeStore) -> None:
    store, _ = await make_store()
    assert await store.liveness(["p1"]) == [LivenessChange("p1", False, 0)]
    await store.heartbeat("p1", T0)
    await store.heartbeat("p1", T0 + 200)
    assert await store.presence(["p1", "ghost", "p1"], T0 + 200 + SILENCE - 1) == [
        Presence("p1", False, "", T0 + 200, True),
        Presence("ghost", False, "", 0, False),
        Presence("p1", False, "", T0 + 200, True),
    ]
    assert (await store.presence(["p1"], T0 + 200 + SILENCE))[0].alive is False
    assert await store.liveness(["p1", "ghost"]) == [LivenessChange("p1", True, T0),
                                                    LivenessChange("ghost", False, 0)]
    await store.sweep(T0 + 200 + SILENCE)
    assert await store.liveness(["p1"]) == [LivenessChange("p1", False, T0 + 200)]


async def test_connection_and_late_disconnects(make_store: MakeStore) -> None:
    store, _ = await make_store()

    async def connection() -> tuple[bool, str]:
        p = (await store.presence(["p1"], T0))[0]
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
    assert await store.liveness(["p1"]) == [LivenessChange("p1", False, 0)]  # not a heartbeat


@pytest.mark.parametrize("backend", ["redis"])
async def test_replicas_share_state_and_claim_each_silence_once(
        make_store: MakeStore, redis_prefix: str) -> None:
    a, hub_a = await make_store()
    b, hub_b = await make_store()
    watch_a, watch_b = hub_a.watch(["p 1:ü"]), hub_b.watch(["p 1:ü"])
    await a.heartbeat("p 1:ü", T0)
    assert (await b.presence(["p 1:ü"], T0 + 1))[0].last_seen_ms == T0
    assert any(key.startswith(redis_prefix) for key in redis_keys(redis_prefix))
    claims = await asyncio.gather(*(s.sweep(T0 + SILENCE) for s in (a, b, a, b)))
    assert sorted(len(c) for c in claims) == [0, 0, 0, 1]
    expected = [LivenessChange("p 1:ü", True, T0), LivenessChange("p 1:ü", False, T0)]
    assert await received(watch_a, 2) == expected
    assert await received(watch_b, 2) == expected
    await nothing_more(watch_a)
    await nothing_more(watch_b)


async def test_resync_sends_only_what_a_watcher_missed() -> None:
    hub = LivenessHub()
    store = MemoryPresenceStore(LivenessHub(), SILENCE)  # its changes reach no watcher here
    watch = hub.watch(["p1", "p2"])
    hub.publish(LivenessChange("p1", True, T0))
    await store.heartbeat("p1", T0)
    await store.heartbeat("p2", T0 + 5)
    await hub.resync(store.liveness)
    assert await received(watch, 2) == [LivenessChange("p1", True, T0),
                                        LivenessChange("p2", True, T0 + 5)]
    hub.publish(LivenessChange("p2", True, T0 + 5))  # the live copy of the same change
    hub.publish(LivenessChange("p3", True, T0))  # not watched
    await nothing_more(watch, 0.05)


async def test_a_lagging_watcher_is_closed() -> None:
    hub = LivenessHub(backlog=2)
    watch = hub.watch(["p1"])
    for i in range(3):
        hub.publish(LivenessChange("p1", i % 2 == 0, T0 + i))
    assert len(await received(watch, 2)) == 2
    assert await watch.next() is None
    assert watch.lagging
    hub.close()
    assert await hub.watch(["p1"]).next() is None  # after shutdown, watches end at once


def test_settings_from_env() -> None:
    assert PresenceSettings.from_env({}) == PresenceSettings()
    assert PresenceSettings().port == 7400 and PresenceSettings().silence_ms == 5000
    s = PresenceSettings.from_env({"MACHIAVELOX_PRESENCE_PORT": "7500",
                                   "MACHIAVELOX_PRESENCE_REDIS_URL": "redis://r:6379/2",
                                   "MACHIAVELOX_PRESENCE_SILENCE_MS": "300",
                                   "MACHIAVELOX_LOG_LEVEL": "debug"})
    assert (s.port, s.redis_url, s.silence_ms, s.log_level) == (7500, "redis://r:6379/2", 300,
                                                                 "DEBUG")
    assert s.sweep_interval_s == 0.03
    for bad in ({"MACHIAVELOX_PRESENCE_PORT": "x"}, {"MACHIAVELOX_PRESENCE_PORT": "70000"},
                {"MACHIAVELOX_PRESENCE_REDIS_URL": "localhost:6379"},
                {"MACHIAVELOX_PRESENCE_SILENCE_MS": "0"}, {"MACHIAVELOX_LOG_LEVEL": "LOUD"}):
        with pytest.raises(SettingsError):
            PresenceSettings.from_env(bad)


async def test_sweeper_reports_silence_with_the_injected_clock_and_stops() -> None:
    hub = LivenessHub()
    store = MemoryPresenceStore(hub, SILENCE)
    watch = hub.watch(["p1"])
    await store.heartbeat("p1", T0)
    now = [T0]
    stop = asyncio.Event()
    sweeper = asyncio.create_task(sweep_forever(store, lambda: now[0], 0.01, stop))
    assert await received(watch, 1) == [LivenessChange("p1", True, T0)]
    await nothing_more(watch, 0.05)  # the wall clock moves, the injected one does not
    now[0] = T0 + SILENCE
    assert await received(watch, 1) == [LivenessChange("p1", False, T0)]
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


@pytest.mark.parametrize("backend", ["redis"])
async def test_the_subscription_survives_junk_and_a_lost_connection(
        make_store: MakeStore, redis_prefix: str) -> None:
    a, _ = await make_store()
    b, hub_b = await make_store()
    assert isinstance(b, RedisPresenceStore)
    watch = hub_b.watch(["p1"])
    admin = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        admin.publish(b.channel, "junk")
        await a.heartbeat("p1", T0)
        assert await received(watch, 1) == [LivenessChange("p1", True, T0)]
        # Cut this test's subscriptions only (by client name), then change state meanwhile.
        name = RedisPresenceStore.client_name(redis_prefix)
        killed = [c["id"] for c in admin.client_list() if c.get("name") == name
                  and c.get("sub") != "0"]
        assert killed
        for client_id in killed:
            admin.client_kill_filter(_id=client_id)
        assert await a.sweep(T0 + SILENCE) == [LivenessChange("p1", False, T0)]
        assert await received(watch, 1) == [LivenessChange("p1", False, T0)]
        await nothing_more(watch)
    finally:
        admin.close()
