"""Leveled bots at the production Resync pace (docs/protocol.md, "Pace"; gateway/pace.py: one
snapshot every 2 s, 3 at once), over a real cluster (`machiavelox up`'s services on loopback,
the rules clock x5, a seeded deal).

`machiavelox up` lets Resync run at 20 a second for its bots; here a second gateway in front of
the same services keeps the production default. The bots keep their view from the events
(bots/viewkeeper.py) and ask for a snapshot only when an event is not theirs to apply: three
`hard` bots play their smazzata to its end with no predictable refusal, and far fewer
snapshots than actions.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox.bots.main import play as play_bots
from machiavelox.local.processes import Proc, start
from machiavelox.local.up import launch, stop_all

SCALE = 5.0
SEED = 1
RESYNC_KEYS = ("MACHIAVELOX_GATEWAY_RESYNC_RATE", "MACHIAVELOX_GATEWAY_RESYNC_BURST",
               "MACHIAVELOX_GATEWAY_PORT", "MACHIAVELOX_METRICS_PORT")


@pytest.fixture
def paced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Proc]]:
    monkeypatch.setenv("MACHIAVELOX_TABLE_DEAL_SEED", str(SEED))
    procs = launch(0, tmp_path, tmp_path, time_scale=SCALE)
    try:
        env = {k: v for k, v in procs["gateway"].env.items() if k not in RESYNC_KEYS}
        procs["gateway-paced"] = start("gateway-paced", "gateway", env, tmp_path)
        yield procs
    finally:
        assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"


@pytest.mark.timeout(150)
async def test_hard_bots_play_to_the_end_at_the_production_resync_pace(
        paced: dict[str, Proc]) -> None:
    gateway = paced["gateway-paced"].address
    out = io.StringIO()
    outcomes = await asyncio.wait_for(
        play_bots(3, gateway, gateway, "", 0.2, "paced", out, level="hard", time_scale=SCALE),
        120)
    report = out.getvalue()
    for o in outcomes:
        assert o.result is not None, report
        assert o.predictable == [], (o.player, o.predictable)
        # the Join's snapshot, then one for each step the keeper could not apply
        assert o.resyncs * 4 < o.actions, (o.player, o.resyncs, o.actions, o.events)
    print("resyncs / actions / events:",
          [(o.player, o.resyncs, o.actions, o.events) for o in outcomes])
