"""Presence under faults of its store (issue 13, items 1 and 2): real `machiavelox presence`
processes on loopback sharing the machine's Redis (a key prefix per test, deleted after), with a
TCP proxy the test owns in front of Redis for the replica the test cuts off (the Redis server
is never touched). Apps are played by the test: heartbeats every 0.3 s against a 3 s silence
threshold (production: 2 s against 5 s); each test checks that premise held (a machine too
loaded to send them in time fails it, saying so).

Proves, for the measured faults: a replica cut from Redis while players heartbeat to it makes
no one silent anywhere (the other replica's watchers are told unknown, the cut replica's too,
its heartbeats fail UNAVAILABLE); a player who really left is reported silent only once
presence can tell again, and for no longer than it has been able to; a replica killed and
restarted counts silences from its restart.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.services.presence.replicas import (
    REDIS_URL,
    Heard,
    KeepAlive,
    Launcher,
    check_premise,
    delete_prefix,
    new_prefix,
    watching,
)
from tests.support.tcp_proxy import TcpProxy

SILENCE_MS = 3000
BEAT_S = 0.3
CUT_S = 8.0
SLACK_MS = 5  # ms rounding of two clocks (Redis's TIME, the test's monotonic clock)
PLAYERS = ["p1", "p2", "p3"]
LEAVER = "lee"


@pytest.fixture
def prefix() -> Iterator[str]:
    name = new_prefix()
    yield name
    delete_prefix(name)


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    relay = TcpProxy("127.0.0.1", 6379)
    await relay.start()
    yield relay
    relay.resume()
    await relay.close()


@pytest.fixture
async def launcher(tmp_path: Path, prefix: str, proxy: TcpProxy) -> AsyncIterator[Launcher]:
    launch = Launcher(tmp_path, {
        "MACHIAVELOX_PRESENCE_SILENCE_MS": str(SILENCE_MS), "MACHIAVELOX_GRACE_S": "2",
        "MACHIAVELOX_PRESENCE_REDIS_URL": REDIS_URL,
        "MACHIAVELOX_PRESENCE_KEY_PREFIX": prefix})
    try:
        yield launch
    finally:
        proxy.resume()
        await launch.stop_all_and_check()


def silences(heard: list[Heard], player: str) -> list[Heard]:
    return [h for h in heard if h.change.player_id == player and h.kind == "silent"]


def check_counted_from(heard: list[Heard], player: str, since: float) -> None:
    """Every silence of `player` was told after `since` (time.monotonic()), for at least the
    threshold and no longer than the time since then."""
    told = silences(heard, player)
    assert told, f"{player} never told silent"
    for h in told:
        assert h.at >= since, f"{player} told silent before presence could tell: {h.change}"
        assert SILENCE_MS <= h.change.silent_for_ms <= (h.at - since) * 1000 + SLACK_MS, (
            f"{player}'s silence backdated: {h.change.silent_for_ms} ms told "
            f"{h.at - since:.3f} s after presence could tell again")


async def test_a_replica_cut_from_redis_makes_no_one_silent(launcher: Launcher,
                                                            proxy: TcpProxy) -> None:
    """Two replicas; the players' gateway heartbeats to A, the shard watches B (and A). A's
    proxy to Redis forwards nothing for 8 s. Without the replicas' beacons B would sweep the
    players silent from Redis ~3 s into the cut (the measured fault); without the floor the
    leaver's silence would be dated from before the cut."""
    a = await launcher.start(MACHIAVELOX_PRESENCE_REDIS_URL=f"redis://127.0.0.1:{proxy.port}/0")
    b = await launcher.start()
    watched = [*PLAYERS, LEAVER]
    keepers = {p: KeepAlive(a, p, BEAT_S) for p in watched}
    everyone = list(keepers.values())
    try:
        async with watching(b, *watched) as on_b, watching(a, *watched) as on_a:
            await on_b.until_each(watched, "alive")
            await on_a.until_each(watched, "alive")
            await keepers.pop(LEAVER).stop()
            await asyncio.sleep(0.5)  # the leaver leaves just before the cut
            proxy.stall()
            cut = time.monotonic()
            await on_a.until_each(watched, "unknown")  # the cut replica tells everyone
            told_a = time.monotonic() - cut
            await on_b.until_each(watched, "unknown")  # the other: unknown, never silent
            told_b = time.monotonic() - cut
            await asyncio.sleep(max(0.0, cut + CUT_S - time.monotonic()))
            proxy.resume()
            back = time.monotonic()
            wanted = {**dict.fromkeys(PLAYERS, "alive"), LEAVER: "silent"}
            await on_b.until_all(wanted, timeout_s=20)
            await on_a.until_all(wanted, timeout_s=20)
            await asyncio.sleep(2 * SILENCE_MS / 1000)  # the players heartbeat on: alive
            heard = {"a": on_a.heard, "b": on_b.heard}
    finally:
        for keeper in keepers.values():
            await keeper.stop()
    print(f"unknown told {told_a:.2f} s after the cut by A, {told_b:.2f} s by B")
    check_premise(everyone, SILENCE_MS)
    for name, changes in heard.items():
        for player in PLAYERS:
            assert silences(changes, player) == [], f"{player} silent on {name}"
        check_counted_from(changes, LEAVER, back)
    failed = [f for k in keepers.values() for f in k.failures]
    assert failed and set(failed) == {"UNAVAILABLE"}, failed  # A refused what it could not store


async def test_a_replica_killed_counts_silences_from_its_restart(launcher: Launcher) -> None:
    """Two replicas; the gateway heartbeats to A, the shard watches B. A is SIGKILLed (no
    clean leave) and started again 4 s later on the same host and port: it finds its old
    beacon, so presence could not tell while it was down (heartbeats to it failed). A player
    heartbeating throughout is never silent; the leaver's silence counts from the restart
    (without that rule, B tells it from before the kill)."""
    a = await launcher.start()
    b = await launcher.start()
    player = PLAYERS[0]
    keeper = KeepAlive(a, player, BEAT_S)
    leaver = KeepAlive(a, LEAVER, BEAT_S)
    try:
        async with watching(b, player, LEAVER) as on_b:
            await on_b.until_each([player, LEAVER], "alive")
            await leaver.stop()
            await asyncio.sleep(0.5)
            a.proc.kill()
            await asyncio.to_thread(a.proc.wait, 10)
            launcher.replicas.remove(a)
            await asyncio.sleep(4.0)
            again = await launcher.start(port=a.port)
            await a.channels.close()
            keeper.replica = again
            async with watching(again, player, LEAVER) as on_again:
                await on_b.until_all({player: "alive", LEAVER: "silent"}, timeout_s=20)
                await on_again.until(LEAVER, "silent", timeout_s=20)
                await asyncio.sleep(2 * SILENCE_MS / 1000)
                heard = {"b": on_b.heard, "a again": on_again.heard}
    finally:
        await keeper.stop()
        await leaver.stop()
    check_premise([keeper, leaver], SILENCE_MS)
    for name, changes in heard.items():
        assert silences(changes, player) == [], f"{player} silent on {name}"
        check_counted_from(changes, LEAVER, again.started)
