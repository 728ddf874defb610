"""A classic table's result reaches scoring from the journal, exactly once (issue 16, part 2).

Real `machiavelox table` and `machiavelox scoring` processes on loopback. A 2-player classic
table with a single-hand session (C11, the shortest) is played to the end of its hand by a
scripted driver over the shard's Connect stream, as a gateway would: the player on turn draws
(C5) until the stock runs out and the hand ends (C10). Scoring is not listening yet (the shard
points at a free port), so the report fails; the shard is killed by PID, scoring starts on that
port, and the restarted shard reports what its journal holds unreported. It is killed again
once the result is stored and restarted once more. Scoring's log, read by a SubscribeResults
subscriber from its start, holds the table's result once, with ruleset classic, and its
standings put the hand's winner first (C11).

Without the classic reports (`reporting.py` skipping classic tables, as before issue 16's part
2) the shard never tries, and the result never reaches scoring. A restart after the result is
stored does not report it again (the journaled "reported"); if it did, scoring's key would
still store it once (tests/services/scoring/test_classic_results.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import (
    classic_pb2,
    common_pb2,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import Proc, aio_channel, free_port, start, wait_healthy
from tests.faults.results import results_log, wait_stored

from .stream import ShardStream

pytestmark = pytest.mark.timeout(240)
TABLE = "shard-0.classic-single"
PLAYERS = ["ann", "bob"]
VARIANTS = classic_pb2.ClassicVariants(players=2, session=classic_pb2.CLASSIC_SESSION_KIND_SINGLE)
MAX_TURNS = 200  # 2 decks, 26 cards dealt: the stock (78) is out after 79 draws
WAIT_S = 60.0
STOP_S = 30.0


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in sorted(started, key=lambda p: p.name != "shard"):  # shards first
        with contextlib.suppress(AssertionError):
            proc.stop()


def kill(proc: Proc) -> None:
    """SIGKILL by its PID: a crash."""
    os.kill(proc.popen.pid, signal.SIGKILL)
    assert proc.popen.wait(STOP_S) == -signal.SIGKILL


def restart(proc: Proc) -> int:
    """Start it again (same port, settings, journal); where its new log lines begin."""
    mark = len(proc.logs())
    assert proc.respawn()
    wait_healthy(proc)
    return mark


def wait_logged(proc: Proc, text: str, since: int = 0) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if any(text in str(r.get("msg", "")) for r in proc.logs()[since:]):
            return
        time.sleep(0.1)
    raise AssertionError(f"{proc.name} never logged {text!r}")


async def play_the_hand(shard: Proc) -> None:
    """The player on turn draws until the stock is out and the session (one hand) ends."""
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=TABLE, player_ids=PLAYERS,
                                         ruleset=classic_pb2.RULESET_CLASSIC, classic=VARIANTS),
            timeout=10)
    async with aio_channel(shard, "gateway") as ch:
        stream = ShardStream(ch)
        view = await stream.snapshot(TABLE, PLAYERS[1])
        for _ in range(MAX_TURNS):
            if view.phase == classic_pb2.CLASSIC_PHASE_ENDED:
                break
            seat = classic_codec.seat_from_pb(view.turn)
            player = PLAYERS[seat]
            answer = await stream.outcome(player, stream.act(TABLE, player, classic.Draw(seat)))
            assert isinstance(answer, common_pb2.Ack), answer
            view = await stream.snapshot(TABLE, player)
        assert view.phase == classic_pb2.CLASSIC_PHASE_ENDED, "the hand did not end"
        assert view.last_hand.ending == "stock" and view.result.reason == "single"
        await stream.close()


async def test_a_classic_result_reaches_scoring_once_across_shard_restarts(
        procs: list[Proc], tmp_path: Path) -> None:
    scoring_port = free_port()  # nothing listens there yet
    shard = start("shard", "table", {
        "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_METRICS_PORT": "0",
        "MACHIAVELOX_SCORING_ADDRESS": f"127.0.0.1:{scoring_port}",
        "MACHIAVELOX_TABLE_TIME_SCALE": "10", "MACHIAVELOX_TABLE_DEAL_SEED": "3"}, tmp_path)
    procs.append(shard)
    await play_the_hand(shard)
    await asyncio.to_thread(wait_logged, shard, "scoring unavailable")  # it tried
    await asyncio.to_thread(kill, shard)
    scoring = start("scoring", "scoring", {
        "MACHIAVELOX_SCORING_PORT": str(scoring_port), "MACHIAVELOX_METRICS_PORT": "0",
        "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{tmp_path / 'scoring.sqlite3'}"},
        tmp_path)
    procs.append(scoring)
    since = await asyncio.to_thread(restart, shard)  # reports what its journal holds
    await wait_stored(scoring, TABLE)
    await asyncio.to_thread(wait_logged, shard, "result stored at offset", since)
    await asyncio.to_thread(kill, shard)  # once stored: a restart may report it again...
    await asyncio.to_thread(restart, shard)
    await asyncio.to_thread(shard.check_clean)
    records = [r for r in await results_log(scoring) if r.result.table_id == TABLE]
    assert len(records) == 1, records  # ...scoring stores it once
    result = records[0].result
    assert result.ruleset == classic_pb2.RULESET_CLASSIC and result.match_ended
    assert list(result.player_ids) == PLAYERS and not result.competitive
    report = result.classic
    assert report.report == 1 and len(report.hands) == 1
    [hand] = report.hands
    assert hand.ending == "stock" and list(report.session.winners) == list(hand.winners)
    async with aio_channel(scoring, "results-reader") as ch:
        standings = await scoring_pb2_grpc.ScoringServiceStub(ch).GetStandings(
            scoring_pb2.GetStandingsRequest(table_id=TABLE), timeout=5)
    assert standings.ended and standings.hands == 1
    assert standings.rows[0].winner and standings.rows[0].seat == hand.winners[0]  # C11
    await asyncio.to_thread(scoring.check_clean)
