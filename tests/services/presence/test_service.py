"""The presence service as deployed: `machiavelox presence` processes, real gRPC on loopback."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import grpc
import pytest

from machiavelox._gen.v1 import presence_pb2
from machiavelox.local.processes import MACHIAVELOX, free_port
from machiavelox.platform.clock import wall_ms

from .conftest import SILENCE_MS
from .replicas import (
    ChangeStream,
    KeepAlive,
    Launcher,
    Replica,
    heartbeat,
    redis_keys,
    watching,
)

BEAT_S = SILENCE_MS / 5 / 1000
REASON_KEY = "machiavelox-reason"
SLACK_MS = 5  # ms rounding of two clocks


async def presence_of(replica: Replica, *players: str) -> list[presence_pb2.PlayerPresence]:
    reply = await replica.stub.GetPresence(
        presence_pb2.GetPresenceRequest(player_ids=list(players)), timeout=5)
    return list(reply.players)


def alive(player: str, since_ms: int) -> presence_pb2.LivenessChange:
    return presence_pb2.LivenessChange(player_id=player, alive=True, since_ms=since_ms)


def bounded_silence(change: presence_pb2.LivenessChange, player: str, since_s: float) -> None:
    """`change` is `player`'s silence, of at least the threshold and at most as long as the
    test has known them gone (time.monotonic() `since_s`)."""
    assert (change.player_id, change.alive, change.unknown) == (player, False, False), change
    assert SILENCE_MS <= change.silent_for_ms <= (time.monotonic() - since_s) * 1000 + SLACK_MS


async def settle_never_seen(stream: ChangeStream, replica: Replica, *players: str) -> None:
    """Players never seen, on a replica that just started: unknown until it has run for the
    threshold (it does not know what happened before it started), then silent for no longer
    than it has run; in the order asked."""
    waiting = []
    for player in players:
        first = await stream.next()
        assert first.player_id == player
        if first.unknown:
            waiting.append(player)
        else:
            bounded_silence(first, player, replica.started)
    for player, change in (await stream.until_each(waiting, "silent")).items():
        bounded_silence(change, player, replica.started)


async def test_heartbeat_then_get_presence(launcher: Launcher, backend: str,
                                           redis_prefix: str) -> None:
    replica = await launcher.start()
    at = await heartbeat(replica, "ann")
    assert abs(at - wall_ms()) < 1000  # presence's clock: Unix ms (Redis's, or set at start)
    ann, ghost = await presence_of(replica, "ann", "ghost")
    assert (ann.player_id, ann.alive, ann.last_seen_ms, ann.connected) == ("ann", True, at, False)
    assert (ghost.player_id, ghost.alive, ghost.last_seen_ms) == ("ghost", False, 0)
    await asyncio.sleep(SILENCE_MS / 1000 + 0.1)
    [ann] = await presence_of(replica, "ann")
    assert (ann.alive, ann.last_seen_ms) == (False, at)  # silent, last sign of life kept
    if backend == "redis":  # the state really is in Redis, under this test's prefix
        assert f"{redis_prefix}p:ann" in redis_keys(redis_prefix)
    else:
        assert redis_keys(redis_prefix) == []


async def test_watch_sends_the_state_then_silence_and_revival(launcher: Launcher) -> None:
    replica = await launcher.start()
    async with watching(replica, "bob", "cid") as stream:
        await settle_never_seen(stream, replica, "bob", "cid")
        keeper = KeepAlive(replica, "bob", BEAT_S)
        revived = await stream.next()
        assert (revived.player_id, revived.alive) == ("bob", True)
        await stream.expect_nothing(3 * SILENCE_MS / 1000)  # heartbeats keep bob alive
        await keeper.stop()
        silent = await stream.next(timeout_s=5 * SILENCE_MS / 1000)
        bounded_silence(silent, "bob", keeper.last_sent)  # a duration: since the last sign
        sent = time.monotonic()
        back_at = await heartbeat(replica, "bob")
        assert await stream.next() == alive("bob", back_at)
        bounded_silence(await stream.next(timeout_s=5 * SILENCE_MS / 1000), "bob", sent)
        await stream.expect_nothing(2 * SILENCE_MS / 1000)  # each change once, nothing more
    async with watching(replica, "bob") as late:  # a new watcher starts from the state
        told = await late.next()
        assert (told.alive, told.unknown, told.since_ms) == (False, False, back_at)
        assert told.silent_for_ms >= SILENCE_MS


async def test_set_connected_is_reflected(launcher: Launcher) -> None:
    replica = await launcher.start()

    async def connect(gateway: str, connected: bool) -> tuple[bool, str]:
        await replica.stub.SetConnected(presence_pb2.SetConnectedRequest(
            player_id="dee", gateway_id=gateway, connected=connected), timeout=5)
        [dee] = await presence_of(replica, "dee")
        assert (dee.alive, dee.last_seen_ms) == (False, 0)  # a connection is no heartbeat
        return dee.connected, dee.gateway_id

    assert await connect("gw-1", True) == (True, "gw-1")
    assert await connect("gw-2", True) == (True, "gw-2")
    assert await connect("gw-1", False) == (True, "gw-2")  # a late goodbye from gw-1
    assert await connect("gw-2", False) == (False, "")


async def test_invalid_player_ids_are_refused(launcher: Launcher) -> None:
    replica = await launcher.start()
    stub = replica.stub
    too_long = "x" * 65
    calls = {
        "heartbeat empty": stub.Heartbeat(presence_pb2.HeartbeatRequest(player_id="")),
        "heartbeat long": stub.Heartbeat(presence_pb2.HeartbeatRequest(player_id=too_long)),
        "connected": stub.SetConnected(presence_pb2.SetConnectedRequest(
            player_id=too_long, gateway_id="gw", connected=True)),
        "get": stub.GetPresence(presence_pb2.GetPresenceRequest(player_ids=["ok", ""])),
    }
    for name, call in calls.items():
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await call
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, name
        assert (REASON_KEY, "presence/invalid") in tuple(info.value.trailing_metadata()), name
    async with watching(replica, "ok", too_long) as stream:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stream.next()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (REASON_KEY, "presence/invalid") in tuple(info.value.trailing_metadata())
    assert await heartbeat(replica, "y" * 64) > 0  # 64 characters is fine


@pytest.mark.parametrize("backend", ["redis"])
async def test_two_replicas_share_one_redis(launcher: Launcher) -> None:
    a = await launcher.start()
    b = await launcher.start()
    async with watching(b, "eve") as on_b, watching(a, "eve") as on_a:
        sent = time.monotonic()
        at = await heartbeat(a, "eve")
        [eve] = await presence_of(b, "eve")
        assert (eve.alive, eve.last_seen_ms) == (True, at)
        assert await on_b.until("eve", "alive") == alive("eve", at)
        assert await on_a.until("eve", "alive") == alive("eve", at)
        # Both replicas sweep; exactly one of them claims the lapse, each watcher is told once.
        bounded_silence(await on_b.next(timeout_s=5 * SILENCE_MS / 1000), "eve", sent)
        bounded_silence(await on_a.next(), "eve", sent)
        sent = time.monotonic()
        back = await heartbeat(b, "eve")
        assert await on_b.next() == alive("eve", back)
        assert await on_a.next() == alive("eve", back)
        await on_b.expect_nothing(SILENCE_MS / 1000 / 2)  # alive until the threshold
        bounded_silence(await on_b.next(timeout_s=5 * SILENCE_MS / 1000), "eve", sent)
        bounded_silence(await on_a.next(), "eve", sent)
        await on_b.expect_nothing(4 * SILENCE_MS / 1000)
        await on_a.expect_nothing(0.05)
    # Each lapse was claimed by one sweep: two lapses, two claims between both replicas.
    claims = sum(line.count('"msg": "player lapsed"') for line in (a.stderr(), b.stderr()))
    assert claims == 2


@pytest.mark.parametrize("backend", ["memory"])
async def test_sigterm_ends_watch_streams_and_exits_cleanly(launcher: Launcher) -> None:
    replica = await launcher.start()
    async with watching(replica, "fay") as stream:
        await stream.next()
        started = time.monotonic()
        replica.proc.send_signal(signal.SIGTERM)
        await stream.expect_end()  # ended with OK: the shard watches another replica
        assert await asyncio.to_thread(replica.proc.wait, 10) == 0
        assert time.monotonic() - started < 2.0  # did not wait out the grace period


def test_bad_settings_refuse_to_start() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
    env["MACHIAVELOX_PRESENCE_REDIS_URL"] = "127.0.0.1:6379"
    run = subprocess.run([*MACHIAVELOX, "presence"], env=env, capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 2
    assert "MACHIAVELOX_PRESENCE_REDIS_URL" in run.stderr


def test_unreachable_redis_fails_fast() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
    env["MACHIAVELOX_PRESENCE_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"  # no Redis
    env["MACHIAVELOX_PRESENCE_PORT"] = "0"
    run = subprocess.run([*MACHIAVELOX, "presence"], env=env, capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 1
    assert "cannot start" in run.stderr
