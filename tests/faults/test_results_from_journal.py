"""A result is never lost nor stored twice when its shard dies or stops before reporting it.

Real `machiavelox table` and `machiavelox scoring` processes on loopback. A single match ends at
once when two players abandon (ABBANDONA, M11.6; the survivor wins), sent through the shard's
Connect stream as a gateway would; the end of its one smazzata is the end of the match, and its
result goes to scoring. Scoring is made unreachable by pointing the shard at a free port where
nothing listens yet; it is started on that port later. What the tests read back is scoring's
results log (SubscribeResults from the start, as a "results-reader"), read up to a marker result
reported last (`results_log`), so "exactly once" is a count of the whole log, not a wait.

Without the journal, or without a restarted shard reporting what its journal holds unreported,
the first three tests fail: nothing ever reaches scoring (`wait_stored` gives up).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path

import pytest

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, free_port, start, wait_healthy
from tests.services.table.test_shutdown import abandon, create

TABLE = "shard-0.t1"
MARKER = "marker.end-of-log"  # the result `results_log` reports last
WAIT_S = 60.0  # the most any step waits for what it expects (then the test fails)
STOP_S = 30.0  # the most a SIGTERM'd or SIGKILL'd process gets to exit
LEFT_FOR_NEXT_START = "results not yet stored in scoring: the next start of this shard"
UNAVAILABLE = "scoring unavailable"  # the shard's log line for each report that failed


# ------------------------------------------------------------------ processes
@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """What a test starts goes in here; whatever is still running at the end is stopped."""
    started: list[Proc] = []
    yield started
    for proc in started:
        with contextlib.suppress(AssertionError):
            proc.stop()


def start_shard(procs: list[Proc], tmp: Path, scoring_port: int, report_wait_s: float = 5.0,
                ) -> Proc:
    proc = start("shard", "table", {
        "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_METRICS_PORT": "0",
        "MACHIAVELOX_SCORING_ADDRESS": f"127.0.0.1:{scoring_port}",
        "MACHIAVELOX_TABLE_REPORT_WAIT_S": str(report_wait_s)}, tmp)
    procs.append(proc)
    return proc


def start_scoring(procs: list[Proc], tmp: Path, port: int) -> Proc:
    proc = start("scoring", "scoring", {
        "MACHIAVELOX_SCORING_PORT": str(port), "MACHIAVELOX_METRICS_PORT": "0",
        "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{tmp / 'scoring.sqlite3'}"}, tmp)
    procs.append(proc)
    return proc


def kill(proc: Proc) -> None:
    """SIGKILL by its PID: a crash, nothing flushed, no shutdown code run."""
    os.kill(proc.popen.pid, signal.SIGKILL)
    assert proc.popen.wait(STOP_S) == -signal.SIGKILL


def respawn(proc: Proc) -> int:
    """Start the shard again (same port, settings, journal); where its new log lines begin."""
    mark = len(proc.logs())
    assert proc.respawn(), f"{proc.name} was still running"
    wait_healthy(proc)
    return mark


def said(proc: Proc, since: int = 0) -> list[str]:
    """The messages of `proc`'s log from line `since` on (its log is appended on respawn)."""
    return [str(r.get("msg", "")) for r in proc.logs()[since:]]


def wait_logged(proc: Proc, text: str, since: int = 0) -> None:
    deadline = time.monotonic() + WAIT_S
    for _ in range(int(WAIT_S * 10)):
        if any(text in m for m in said(proc, since)) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert any(text in m for m in said(proc, since)), f"{proc.name} never logged {text!r}"


def stop_shard(shard: Proc, since: int) -> None:
    """SIGTERM, exit 0, no error logged, and no result left unreported by the run since
    `since`: once it is down, nothing more can reach scoring from it."""
    shard.check_clean()
    assert not [m for m in said(shard, since) if LEFT_FOR_NEXT_START in m]


# ------------------------------------------------------------------ the table
async def exchange(shard: Proc, items: Sequence[table_pb2.GatewayItem],
                   done: Callable[[list[table_pb2.ShardItem]], bool],
                   ) -> list[table_pb2.ShardItem]:
    """Send `items` in one frame on a Connect stream, as a gateway; what comes back until
    `done` says it is enough."""
    finished = asyncio.Event()
    got: list[table_pb2.ShardItem] = []

    async def requests() -> AsyncIterator[table_pb2.ConnectRequest]:
        yield table_pb2.ConnectRequest(items=items)
        await finished.wait()

    async with aio_channel(shard, "gateway") as channel:
        stream = table_pb2_grpc.TableAuthorityServiceStub(channel).Connect(requests())

        async def read() -> None:
            async for frame in stream:
                got.extend(frame.items)
                if done(got):
                    return

        try:
            await asyncio.wait_for(read(), WAIT_S)
        finally:
            finished.set()
            stream.cancel()
    assert done(got), f"the shard's stream ended with {got}"
    return got


def answers(items: list[table_pb2.ShardItem]) -> dict[str, str]:
    """client_action_id -> "ack" or "refused", of the actions answered in `items`."""
    out: dict[str, str] = {}
    for item in items:
        kind = item.WhichOneof("kind")
        if kind in ("ack", "refused"):
            out[getattr(item, kind).client_action_id] = kind
        elif kind == "batch":
            for field in ("ack", "refused"):
                if item.batch.HasField(field):
                    out[getattr(item.batch, field).client_action_id] = field
    return out


async def end_match(shard: Proc) -> None:
    """Create the table, then two players abandon (M11.6): cy survives and wins, the match
    ends. Returns once both abandons are acknowledged: the shard acknowledges only what its
    journal has stored, so the ended match is durable from here on."""
    async with aio_channel(shard, "matchmaking") as channel:
        await create(table_pb2_grpc.TableAuthorityServiceStub(channel), TABLE)
    byes = [*abandon(TABLE, "ann", rules.Seat.P1).items,
            *abandon(TABLE, "bob", rules.Seat.P2).items]
    got = await exchange(shard, byes, lambda items: len(answers(items)) == 2)
    assert answers(got) == {"bye-ann": "ack", "bye-bob": "ack"}


async def check_back_as_ended(shard: Proc) -> None:
    """The restarted shard has the table back, ended: none in play, and a player resuming
    gets the final state (not a table brought back into play, not a lost one)."""
    async with aio_channel(shard, "matchmaking") as channel:
        load = await table_pb2_grpc.TableAuthorityServiceStub(channel).GetLoad(
            table_pb2.GetLoadRequest(), timeout=5)
    assert (load.tables, load.players) == (0, 0)
    resume = table_pb2.GatewayItem(table_id=TABLE, player_id="cy",
                                   subscribe=table_pb2.Subscribe(from_seq=0))
    [answer] = await exchange(shard, [resume], bool)  # a snapshot, or a refusal
    assert answer.HasField("snapshot"), answer
    assert answer.snapshot.view.phase == common_pb2.PHASE_ENDED


# ------------------------------------------------------------------ scoring
async def read_log(scoring: Proc, until: Callable[[scoring_pb2.ResultRecord], bool],
                   ) -> list[scoring_pb2.ResultRecord]:
    """The results log from its start up to the first record `until` accepts."""
    out: list[scoring_pb2.ResultRecord] = []
    async with aio_channel(scoring, "results-reader") as channel:
        stream = scoring_pb2_grpc.ScoringServiceStub(channel).SubscribeResults(
            scoring_pb2.SubscribeResultsRequest(from_offset=0))

        async def collect() -> None:
            async for item in stream:
                out.append(item.record)
                if until(item.record):
                    return

        try:
            await asyncio.wait_for(collect(), WAIT_S)
        except TimeoutError:
            raise AssertionError(f"not in scoring's results log after {WAIT_S} s; "
                                 f"it holds {out}") from None
        finally:
            stream.cancel()
    return out


async def wait_stored(scoring: Proc) -> None:
    """Returns once the table's result is in scoring's results log."""
    await read_log(scoring, lambda record: record.result.table_id == TABLE)


async def results_log(scoring: Proc) -> list[scoring_pb2.ResultRecord]:
    """Every record of scoring's results log. A marker result is reported last (as a shard
    does: role "table"), then the log is read from its start up to the marker: offsets become
    visible in order, so every record stored before it has been read. Call it once nothing
    else can report (the shard stopped)."""
    marker = scoring_pb2.ReportResultRequest(
        table_id=MARKER, smazzata=1, kind=table_pb2.MATCH_KIND_SINGLE,
        player_ids=["m1", "m2", "m3"], match_ended=True,
        result=common_pb2.SmazzataResult(winner=common_pb2.SEAT_P1, scores=[1, 0, 0],
                                         ending="survivor"))
    async with aio_channel(scoring, "table") as channel:
        await scoring_pb2_grpc.ScoringServiceStub(channel).ReportResult(marker, timeout=5)
    records = await read_log(scoring, lambda record: record.result.table_id == MARKER)
    return records[:-1]


async def check_stored_once(scoring: Proc) -> None:
    """The table's one smazzata is in the results log exactly once, as it ended."""
    records = [r.result for r in await results_log(scoring)]
    assert [(r.table_id, r.smazzata) for r in records] == [(TABLE, 1)]
    [stored] = records
    assert list(stored.player_ids) == ["ann", "bob", "cy"]
    assert stored.match_ended
    assert stored.result.winner == common_pb2.SEAT_P3  # the survivor (M11.6)


# ------------------------------------------------------------------ tests
async def test_kill_before_the_report_then_restart_with_scoring_up(
        tmp_path: Path, procs: list[Proc]) -> None:
    """SIGKILL between the end of a smazzata and its report (scoring down: the report is in
    flight, retried). Scoring comes up, the shard restarts: it reports the result from its
    journal, stored exactly once; the table comes back ended, not in play."""
    port = free_port()  # scoring's: nothing listens there yet
    shard = start_shard(procs, tmp_path, port)
    await end_match(shard)
    wait_logged(shard, UNAVAILABLE)  # the report was tried, and not stored
    kill(shard)
    scoring = start_scoring(procs, tmp_path, port)
    mark = respawn(shard)
    await check_back_as_ended(shard)
    await wait_stored(scoring)
    stop_shard(shard, mark)
    await check_stored_once(scoring)
    scoring.check_clean()


async def test_kill_then_restart_while_scoring_is_still_down(
        tmp_path: Path, procs: list[Proc]) -> None:
    """SIGKILL with scoring down, the shard restarted while scoring is still down: the
    restarted shard keeps retrying the result from its journal, and once scoring is up it is
    stored exactly once."""
    port = free_port()
    shard = start_shard(procs, tmp_path, port)
    await end_match(shard)
    wait_logged(shard, UNAVAILABLE)
    kill(shard)
    mark = respawn(shard)
    wait_logged(shard, UNAVAILABLE, since=mark)  # the new run reports it, and fails
    scoring = start_scoring(procs, tmp_path, port)
    await wait_stored(scoring)
    stop_shard(shard, mark)
    await check_stored_once(scoring)
    scoring.check_clean()


async def test_sigterm_with_scoring_down_leaves_the_result_to_the_next_start(
        tmp_path: Path, procs: list[Proc]) -> None:
    """SIGTERM with scoring down: the shard waits MACHIAVELOX_TABLE_REPORT_WAIT_S (1 s) for
    the report, then exits 0 (within a bound) saying the result is left for its next start;
    that start, with scoring up, stores it exactly once."""
    port = free_port()
    shard = start_shard(procs, tmp_path, port, report_wait_s=1)
    await end_match(shard)
    wait_logged(shard, UNAVAILABLE)
    shard.popen.send_signal(signal.SIGTERM)  # (not `stop`: a stopped Proc is never respawned)
    assert await asyncio.to_thread(shard.popen.wait, STOP_S) == 0
    assert any(f"stopping with 1 {LEFT_FOR_NEXT_START}" in m for m in said(shard)), said(shard)
    scoring = start_scoring(procs, tmp_path, port)
    mark = respawn(shard)
    await wait_stored(scoring)
    stop_shard(shard, mark)
    await check_stored_once(scoring)
    scoring.check_clean()


async def test_kill_right_after_the_result_was_stored_reports_no_second_row(
        tmp_path: Path, procs: list[Proc]) -> None:
    """SIGKILL right after scoring stored the result (its `Reported` record may or may not
    be journaled yet): the restarted shard reports it again or not at all, and either way the
    results log holds it exactly once (ReportResult is idempotent on table and smazzata)."""
    port = free_port()
    scoring = start_scoring(procs, tmp_path, port)
    shard = start_shard(procs, tmp_path, port)
    await end_match(shard)
    await wait_stored(scoring)
    kill(shard)
    mark = respawn(shard)
    await check_back_as_ended(shard)
    stop_shard(shard, mark)
    await check_stored_once(scoring)
    scoring.check_clean()
