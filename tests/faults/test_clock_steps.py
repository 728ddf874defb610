"""A wall clock stepped by +-60 s under a running shard moves no timer (issue 13, item 2).

Real processes on loopback: scoring, one shard whose wall clock the test steps (a clock wrapper:
platform/clock.py reads the step from MACHIAVELOX_CLOCK_SKEW_FILE), a gateway; three players as
apps. The rules clock runs 10x (a calata's 40 s are 4 s). ann opens a calata (declares a card
and places nothing), then the shard's wall clock jumps 60 s forwards; later, another calata,
and a jump 60 s backwards.

Proves: each calata concludes by its timeout 4 s after it opened, neither at once (a +60 s
step read as 600 s of rules time: with the wall clock as the rules clock it would conclude at
the next tick of the timers) nor a minute late (-60 s: it would wait for the wall clock to
catch up); the table plays on after each step.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox import codec, rules
from machiavelox.local.processes import Proc, check_all_clean
from machiavelox.platform.clock import SKEW_ENV

from .cluster import seat_players, start_table_cluster
from .players import Player, acked

TABLE = "shard-0.t"
NAMES = ("ann", "bob", "cy")
SCALE = 10
CALATA_S = 40 / SCALE


@pytest.fixture
def skew(tmp_path: Path) -> Path:
    path = tmp_path / "skew-ms"
    path.write_text("0")
    return path


@pytest.fixture
def procs(tmp_path: Path, skew: Path) -> Iterator[dict[str, Proc]]:
    started: dict[str, Proc] = {}
    try:
        start_table_cluster(tmp_path, started, shard_env={
            "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE), SKEW_ENV: str(skew)})
        yield started
    finally:
        check_all_clean(reversed(list(started.values())))


@pytest.fixture
async def ann(procs: dict[str, Proc]) -> AsyncIterator[Player]:
    async with grpc.aio.insecure_channel(procs["gateway"].address) as ch:
        seated = await seat_players(procs, TABLE, NAMES, ch)
        await seated["bob"].close()
        await seated["cy"].close()
        yield seated["ann"]
        await seated["ann"].close()


async def calata_lasts(ann: Player, skew: Path, step_ms: int) -> float:
    """ann declares a card she draws; the wall clock steps by `step_ms` 1 s later; the seconds
    until her calata is concluded (its `void` event: nothing was placed)."""
    await acked(ann, rules.Draw(rules.Seat.P1))
    await ann.drain(0.3)
    [card] = [codec.card_from_pb(c) for c in ann.events[-1].cards]
    loop = asyncio.get_running_loop()
    await acked(ann, rules.Declare(rules.Seat.P1, (card,)))
    opened = loop.time()
    await asyncio.sleep(1.0)
    skew.write_text(str(int(skew.read_text()) + step_ms))
    for _ in range(1_000):
        response = await ann.next(CALATA_S + 70)
        if response.WhichOneof("kind") == "event" and response.event.kind == "void":
            return loop.time() - opened
    raise AssertionError("the calata never concluded")


async def test_wall_clock_steps_move_no_timer(ann: Player, skew: Path) -> None:
    forwards = await calata_lasts(ann, skew, +60_000)
    backwards = await calata_lasts(ann, skew, -60_000)
    for lasted in (forwards, backwards):
        # on time (4 s), with room for a loaded machine; the wall clock would have given
        # about 1 s (forwards) or 64 s (backwards)
        assert CALATA_S - 0.5 <= lasted <= CALATA_S + 6, (forwards, backwards)
