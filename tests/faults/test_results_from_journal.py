"""A result is never lost nor stored twice when its shard dies or stops before reporting it.

Real `machiavelox table` and `machiavelox scoring` processes on loopback. A single match ends at
once when two players abandon (ABBANDONA, M11.6; the survivor wins), sent through the shard's
Connect stream as a gateway would; the end of its one smazzata is the end of the match, and its
result goes to scoring. Scoring is made unreachable by pointing the shard at a free port where
nothing listens yet, and started on that port later; or it is reached through a TCP proxy the
test owns, which can hold scoring's answers back. What the tests read back is scoring's results
log (SubscribeResults from the start, as a "results-reader") up to a marker result reported
last (`results_log`), so "exactly once" is a count of the whole log, not a wait for quiet.

Without the journal, or without a restarted shard reporting what its journal holds unreported,
each of the first four tests fails: the result never reaches scoring (`wait_stored` gives up),
or the restarted shard does not have the table (`check_back_as_ended`), or does not report it
again. The last one is the other side: a result whose journal write failed was undone, and must
never reach scoring (results are reported only once the write that holds them is stored).
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
from machiavelox._gen.v1 import common_pb2, table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, free_port, start, wait_healthy
from tests.services.table.test_shutdown import PLAYERS, abandon, create
from tests.support.pg import PG_URL, pg_schema
from tests.support.shard_items import subscribe_item
from tests.support.tcp_proxy import TcpProxy, via_proxy

from .results import WAIT_S, results_log, wait_stored

TABLE = "shard-0.t1"
STOP_S = 30.0  # the most a SIGTERM'd or SIGKILL'd process gets to exit
LEFT_FOR_NEXT_START = "results not yet stored in scoring: the next start of this shard"
UNAVAILABLE = "scoring unavailable"  # the shard's log line for each report that failed
STORED = "result stored at offset"  # the shard's log line once scoring answered a report
RETRY = "already stored (a retry)"  # scoring's log line for a report of a stored result


# ------------------------------------------------------------------ processes
def stop_all(started: list[Proc]) -> None:
    """Stop whatever is still running (a failed test's processes), shards first."""
    for proc in sorted(started, key=lambda p: p.name != "shard"):
        with contextlib.suppress(AssertionError):
            proc.stop()


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    """What a test starts goes in here; whatever is still running at the end is stopped."""
    started: list[Proc] = []
    yield started
    stop_all(started)


@contextlib.asynccontextmanager
async def relayed(port: int) -> AsyncIterator[TcpProxy]:
    """A TCP proxy on this event loop to 127.0.0.1:`port` (while it is used, processes are
    started and stopped from threads: the loop must run)."""
    proxy = TcpProxy("127.0.0.1", port)
    await proxy.start()
    try:
        yield proxy
    finally:
        proxy.resume()
        await proxy.close()


def start_shard(procs: list[Proc], tmp: Path, scoring_port: int, report_wait_s: float = 5.0,
                journal: str = "", allow_errors: bool = False) -> Proc:
    """A shard reporting to 127.0.0.1:`scoring_port`; its journal `journal` (default: SQLite
    in its data dir)."""
    env = {"MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_METRICS_PORT": "0",
           "MACHIAVELOX_SCORING_ADDRESS": f"127.0.0.1:{scoring_port}",
           "MACHIAVELOX_TABLE_REPORT_WAIT_S": str(report_wait_s)}
    if journal:
        env |= {"MACHIAVELOX_TABLE_JOURNAL": journal,
                "MACHIAVELOX_TABLE_JOURNAL_TIMEOUT_S": "1"}
    proc = start("shard", "table", env, tmp, allow_errors)
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
    """Until (bounded) a message of `proc`'s log from line `since` on contains `text`."""
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
                   done: Callable[[list[table_pb2.ShardItem]], bool], cancel: bool = False,
                   ) -> list[table_pb2.ShardItem]:
    """Send `items` in one frame on a Connect stream, as a gateway; what comes back until
    `done` says it is enough. Then the stream is closed from this side and read to its end,
    as a gateway that leaves does; or, with `cancel`, cancelled at once (a gateway that
    restarts or resets its stream)."""
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
                    finished.set()  # no more frames: the shard ends the stream
                    if cancel:
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


def byes(table_id: str, players: Sequence[str], attempt: int = 0) -> list[table_pb2.GatewayItem]:
    """Two players abandon (ABBANDONA, M11.6): the third survives and wins, the match ends.
    Their client_action_ids: bye-<player>-<attempt>."""
    items = [item for player in players
             for item in abandon(table_id, player, rules.Seat(PLAYERS.index(player))).items]
    for item in items:
        item.action.client_action_id = f"bye-{item.player_id}-{attempt}"
    return items


async def create_table(shard: Proc, table_id: str = TABLE) -> None:
    async with aio_channel(shard, "matchmaking") as channel:
        await create(table_pb2_grpc.TableAuthorityServiceStub(channel), table_id)


async def end_match(shard: Proc, table_id: str = TABLE) -> None:
    """Create the table, then ann and bob abandon: cy wins. Returns once both abandons are
    acknowledged: the shard acknowledges only what its journal has stored, so the ended
    match is durable from here on."""
    await create_table(shard, table_id)
    got = await exchange(shard, byes(table_id, ["ann", "bob"]),
                         lambda items: len(answers(items)) == 2)
    assert answers(got) == {"bye-ann-0": "ack", "bye-bob-0": "ack"}


async def tables_in_play(shard: Proc) -> int:
    async with aio_channel(shard, "matchmaking") as channel:
        load = await table_pb2_grpc.TableAuthorityServiceStub(channel).GetLoad(
            table_pb2.GetLoadRequest(), timeout=5)
    assert load.players == 3 * load.tables
    return int(load.tables)


async def check_back_as_ended(shard: Proc, table_id: str = TABLE) -> None:
    """The restarted shard has the table back, ended: none in play, and a player resuming
    gets the final state (not a table brought back into play, not a lost one)."""
    assert await tables_in_play(shard) == 0
    resume = subscribe_item(table_id, "cy")
    [answer] = await exchange(shard, [resume], bool)  # a snapshot, or a refusal
    assert answer.HasField("snapshot"), answer
    assert answer.snapshot.view.phase == common_pb2.PHASE_ENDED


# ------------------------------------------------------------------ scoring
async def check_stored_once(scoring: Proc, winners: dict[str, common_pb2.Seat.ValueType] | None
                            = None) -> None:
    """Each table's one smazzata is in the results log exactly once, in `winners`' order, as
    it ended: won by the given seat (default: TABLE, won by cy)."""
    winners = winners or {TABLE: common_pb2.SEAT_P3}
    records = [r.result for r in await results_log(scoring)]
    assert [(r.table_id, r.smazzata) for r in records] == [(t, 1) for t in winners]
    for stored in records:
        assert list(stored.player_ids) == PLAYERS
        assert stored.match_ended
        assert stored.result.winner == winners[stored.table_id]  # the survivor (M11.6)


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
    await wait_stored(scoring, TABLE)
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
    await wait_stored(scoring, TABLE)
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
    await wait_stored(scoring, TABLE)
    stop_shard(shard, mark)
    await check_stored_once(scoring)
    scoring.check_clean()


async def test_kill_right_after_the_result_was_stored_reports_no_second_row(
        tmp_path: Path, procs: list[Proc]) -> None:
    """SIGKILL right after scoring stored a result, before its answer reached the shard (a
    proxy holds scoring's answers back): the shard never learned it was stored, so the
    restarted shard reports it again, and the results log still holds it exactly once
    (ReportResult is idempotent on table and smazzata). A first table, reported before the
    answers are held, opens the shard's connection to scoring and is not reported again."""
    scoring_port = free_port()
    async with relayed(scoring_port) as proxy:
        scoring = await asyncio.to_thread(start_scoring, procs, tmp_path, scoring_port)
        shard = await asyncio.to_thread(start_shard, procs, tmp_path, proxy.port)
        first, second = "shard-0.t0", TABLE
        await end_match(shard, first)
        await asyncio.to_thread(wait_logged, shard, STORED)  # (its `Reported` follows at once)
        proxy.stall(replies_only=True)
        await end_match(shard, second)
        await wait_stored(scoring, second)  # stored; the shard still waits for the answer
        kill(shard)
        proxy.resume()
        await proxy.cut()
        mark = await asyncio.to_thread(respawn, shard)
        await check_back_as_ended(shard, second)
        await asyncio.to_thread(wait_logged, scoring, RETRY)  # the second, reported again
        retried = {r.get("table_id") for r in scoring.logs() if RETRY in str(r.get("msg", ""))}
        assert retried == {second}
        await asyncio.to_thread(stop_shard, shard, mark)
        await check_stored_once(scoring, {first: common_pb2.SEAT_P3,
                                          second: common_pb2.SEAT_P3})
        await asyncio.to_thread(scoring.check_clean)


async def end_after_outage(shard: Proc, players: Sequence[str]) -> None:
    """`players` abandon once the journal takes actions again (refused `table/journal` until
    then; bounded)."""
    for attempt in range(1, 101):
        got = answers(await exchange(shard, byes(TABLE, players, attempt),
                                     lambda items: len(answers(items)) == 2))
        if set(got.values()) == {"ack"}:
            return
        assert set(got.values()) == {"refused"}, got  # (one frame, one write: both or none)
        await asyncio.sleep(0.2)
    raise AssertionError("the journal never took actions again")


async def test_a_result_the_journal_did_not_store_is_never_reported(
        tmp_path: Path, procs: list[Proc]) -> None:
    """The journal write of the step that ends the match fails (the PostgreSQL journal
    behind a proxy that forwards nothing, 1 s write timeout): both abandons are refused
    `table/journal`, the table stays in play, and that result must not reach scoring. Once
    the store answers, the match ends otherwise (ann and cy abandon: bob wins): scoring holds
    that result, once. Fails if a result is reported before, or without, its journal write."""
    async with relayed(5432) as proxy:
        with pg_schema("test_results_journal", via_proxy(PG_URL, proxy.port)) as (url, _):
            try:
                scoring_port = free_port()
                scoring = await asyncio.to_thread(start_scoring, procs, tmp_path, scoring_port)
                shard = await asyncio.to_thread(  # allow_errors: it logs the failed write
                    start_shard, procs, tmp_path, scoring_port, journal=url, allow_errors=True)
                await create_table(shard)
                proxy.stall()
                got = await exchange(shard, byes(TABLE, ["ann", "bob"]),
                                     lambda items: len(answers(items)) == 2)
                codes = {i.refused.refusal.code for i in got if i.HasField("refused")}
                assert (set(answers(got).values()), codes) == ({"refused"}, {"table/journal"})
                proxy.resume()
                assert await tables_in_play(shard) == 1
                assert await results_log(scoring) == []
                await end_after_outage(shard, ["ann", "cy"])
                await wait_stored(scoring, TABLE)
                await asyncio.to_thread(stop_shard, shard, 0)
                await check_stored_once(scoring, {TABLE: common_pb2.SEAT_P2})
                await asyncio.to_thread(scoring.check_clean)
            finally:
                await asyncio.to_thread(stop_all, procs)  # before the schema is dropped


async def test_a_gateway_stream_cancelled_after_the_answers_loses_no_report(
        tmp_path: Path, procs: list[Proc]) -> None:
    """Twenty matches each ended by one frame whose gateway stream is cancelled as soon as
    the acks arrive (the shard's handler may be cancelled between the answers and what
    follows them): every result is still stored, once. Would fail if the report hung on the
    stream's handler instead of on the journal write that stored the result."""
    scoring_port = free_port()
    scoring = start_scoring(procs, tmp_path, scoring_port)
    shard = start_shard(procs, tmp_path, scoring_port)
    tables = [f"shard-0.c{i}" for i in range(20)]
    for table_id in tables:
        await create_table(shard, table_id)
        got = await exchange(shard, byes(table_id, ["ann", "bob"]),
                             lambda items: len(answers(items)) == 2, cancel=True)
        assert set(answers(got).values()) == {"ack"}
    for table_id in tables:
        await wait_stored(scoring, table_id)
    stop_shard(shard, 0)
    stored = [r.result.table_id for r in await results_log(scoring)]
    assert sorted(stored) == sorted(tables)

