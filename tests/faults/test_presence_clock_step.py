"""A presence replica's wall clock stepped by -60 s and then +60 s while it runs (issue 13,
item 2): real `machiavelox presence` processes, the step injected through the clock wrapper
(platform/clock.py reads MACHIAVELOX_CLOCK_SKEW_FILE). In memory: one replica, stepped. On
Redis: two replicas sharing the machine's Redis (a key prefix per test), the players'
gateway heartbeating to the stepped one, watchers on both.

Proves: nobody heartbeating is ever told silent or unknown across the steps, and a player who
then leaves is told silent for the real duration of their silence (at least the threshold, at
most the time since their last heartbeat by the test's own clock). Stamped with the replica's
wall clock instead (the measured fault: presence 60 s behind the shard made the 90 s rule 29
s), the memory replica would report a 120 s silence at the +60 s step, and on Redis the other
replica would sweep the stepped one's players silent right after the -60 s step.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from machiavelox.platform.clock import SKEW_ENV
from tests.services.presence.replicas import (
    REDIS_URL,
    KeepAlive,
    Launcher,
    check_premise,
    delete_prefix,
    new_prefix,
    watching,
)

SILENCE_MS = 3000
BEAT_S = 0.3
STEP_S = 3.0  # how long the players heartbeat after each step
SLACK_MS = 5
PLAYERS = ["p1", "p2"]
LEAVER = "lee"


@pytest.fixture
def skew(tmp_path: Path) -> Path:
    path = tmp_path / "skew-ms"
    path.write_text("0")
    return path


@pytest.fixture
def prefix() -> Iterator[str]:
    name = new_prefix()
    yield name
    delete_prefix(name)


@pytest.fixture
async def launcher(tmp_path: Path) -> AsyncIterator[Launcher]:
    launch = Launcher(tmp_path, {"MACHIAVELOX_PRESENCE_SILENCE_MS": str(SILENCE_MS),
                                 "MACHIAVELOX_GRACE_S": "2"})
    try:
        yield launch
    finally:
        await launch.stop_all_and_check()


@pytest.mark.parametrize("backend", ["memory", "redis"])
async def test_a_wall_clock_step_moves_no_silence(launcher: Launcher, skew: Path, prefix: str,
                                                  backend: str) -> None:
    store = ({} if backend == "memory" else {"MACHIAVELOX_PRESENCE_REDIS_URL": REDIS_URL,
                                              "MACHIAVELOX_PRESENCE_KEY_PREFIX": prefix})
    stepped = await launcher.start(env={**store, SKEW_ENV: str(skew)})
    others = [await launcher.start(env=store)] if backend == "redis" else []
    watched = [*PLAYERS, LEAVER]
    keepers = {p: KeepAlive(stepped, p, BEAT_S) for p in watched}
    try:
        async with contextlib.AsyncExitStack() as stack:
            streams = [await stack.enter_async_context(watching(r, *watched))
                       for r in [stepped, *others]]
            for stream in streams:
                await stream.until_each(watched, "alive")
            settled = time.monotonic()
            for step in ("-60000", "60000"):
                skew.write_text(step)
                await asyncio.sleep(STEP_S)
            leaver = keepers.pop(LEAVER)
            await leaver.stop()
            check_premise([leaver, *keepers.values()], SILENCE_MS)
            for i, stream in enumerate(streams):
                wrong = [h.change for h in stream.heard if h.at >= settled and h.kind != "alive"]
                assert wrong == [], f"heartbeating, yet told on replica {i}: {wrong}"
            for i, stream in enumerate(streams):
                try:
                    told = await stream.until(LEAVER, "silent", timeout_s=20)
                except TimeoutError:
                    pytest.fail(f"{LEAVER} left, not told silent within 20 s on replica {i}")
                assert SILENCE_MS <= told.silent_for_ms <= (
                    (time.monotonic() - leaver.last_sent) * 1000 + SLACK_MS), told
                wrong = [h.change for h in stream.heard if h.at >= settled and h.kind != "alive"
                         and h.change.player_id != LEAVER]
                assert wrong == [], f"heartbeating, yet told on replica {i}: {wrong}"
    finally:
        for keeper in keepers.values():
            await keeper.stop()
    assert [k.failures for k in keepers.values()] == [[]] * len(PLAYERS)
