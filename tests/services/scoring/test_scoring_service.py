"""The scoring service end to end: real processes, real gRPC over loopback, on SQLite and on
PostgreSQL (every test runs on both; see conftest)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import psycopg
import pytest

from machiavelox._gen.v1 import common_pb2, scoring_pb2, table_pb2

from .conftest import PG_URL, Backend, ScoringProcess, Spawn

if TYPE_CHECKING:
    from machiavelox._gen.v1.scoring_pb2_grpc import ScoringServiceAsyncStub as Stub

pytestmark = pytest.mark.timeout(60)
POSTGRES_ONLY = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

REASON = "machiavelox-reason"
SINGLE = table_pb2.MATCH_KIND_SINGLE
LONG = table_pb2.MATCH_KIND_LONG


def report(table_id: str, smazzata: int = 1, players: tuple[str, ...] = ("ann", "bob", "cid"),
           scores: tuple[int, ...] = (30, -10, -20), *, competitive: bool = True,
           kind: int = SINGLE, winner: int = common_pb2.SEAT_P1,
           ending: str = "closing") -> scoring_pb2.ReportResultRequest:
    return scoring_pb2.ReportResultRequest(
        table_id=table_id, smazzata=smazzata, kind=kind,  # type: ignore[arg-type]
        competitive=competitive, player_ids=players,
        result=common_pb2.SmazzataResult(winner=winner, scores=scores,  # type: ignore[arg-type]
                                         ending=ending),
        match_ended=kind == SINGLE)


def friendly_long(table_id: str, smazzata: int, scores: tuple[int, ...],
                  players: tuple[str, ...] = ("lia", "max", "ned")
                  ) -> scoring_pb2.ReportResultRequest:
    return report(table_id, smazzata, players, scores, competitive=False, kind=LONG)


async def store(stub: Stub, *requests: scoring_pb2.ReportResultRequest) -> list[int]:
    return [(await stub.ReportResult(r, timeout=5)).offset for r in requests]


async def leaderboard(stub: Stub, limit: int = 0) -> list[tuple[str, int, int]]:
    reply = await stub.GetLeaderboard(scoring_pb2.GetLeaderboardRequest(limit=limit), timeout=5)
    return [(row.player_id, row.points, row.played) for row in reply.rows]


async def refused(call: Any) -> tuple[grpc.StatusCode, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    reasons = [v for k, v in info.value.trailing_metadata() or () if k == REASON]
    return info.value.code(), reasons[0] if reasons else None


class Subscriber:
    """A SubscribeResults stream pumped into a queue by a background task."""

    def __init__(self, stub: Stub, from_offset: int) -> None:
        self.call = stub.SubscribeResults(
            scoring_pb2.SubscribeResultsRequest(from_offset=from_offset))
        self.records: asyncio.Queue[scoring_pb2.ResultRecord] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.error: grpc.aio.AioRpcError | None = None
        self._pump = asyncio.create_task(self._run())

    async def _run(self) -> None:
        try:
            async for response in self.call:
                self.records.put_nowait(response.record)
        except grpc.aio.AioRpcError as exc:
            self.error = exc
        finally:
            self.ended.set()

    async def take(self, n: int, timeout_s: float = 5.0) -> list[scoring_pb2.ResultRecord]:
        return [await asyncio.wait_for(self.records.get(), timeout_s) for _ in range(n)]

    async def assert_quiet(self, for_s: float = 0.3) -> None:
        await asyncio.sleep(for_s)
        assert self.records.empty(), f"unexpected record {self.records.get_nowait()}"

    async def close(self) -> None:
        self.call.cancel()
        await self.ended.wait()


def offsets(records: list[scoring_pb2.ResultRecord]) -> list[int]:
    return [r.offset for r in records]


async def test_report_is_idempotent_by_table_and_smazzata(scoring: ScoringProcess) -> None:
    first, second = report("t1", 1), report("t1", 2, scores=(-10, 30, -20))
    assert await store(scoring.stub, first, first, second, first, second) == [1, 1, 2, 1, 2]
    assert await leaderboard(scoring.stub) == [("ann", 20, 2), ("bob", 20, 2), ("cid", -40, 2)]
    sub = Subscriber(scoring.stub, 0)
    assert offsets(await sub.take(2)) == [1, 2]
    await sub.assert_quiet()
    await sub.close()


async def test_a_different_report_for_a_stored_smazzata_keeps_the_first(
        scoring: ScoringProcess) -> None:
    first = report("t1", 1)
    assert await store(scoring.stub, first, report("t1", 1, scores=(0, 0, 0))) == [1, 1]
    assert await leaderboard(scoring.stub) == [("ann", 30, 1), ("bob", -10, 1), ("cid", -20, 1)]
    sub = Subscriber(scoring.stub, 0)
    assert [r.result for r in await sub.take(1)] == [first]
    await sub.close()
    warnings = [line for line in scoring.log_text().splitlines()
                if '"WARNING"' in line and "different result" in line]
    assert len(warnings) == 1, scoring.log_text()


async def test_leaderboard_counts_competitive_points_only(scoring: ScoringProcess) -> None:
    await store(scoring.stub,
                report("agora-1", 1, ("ann", "bob", "cid"), (30, -10, -20)),
                report("agora-2", 1, ("ann", "dan", "eve"), (-5, 25, -20)),
                report("friends-1", 1, ("ann", "bob", "cid"), (-100, 200, 0), competitive=False),
                friendly_long("long-1", 1, (500, 0, 0), ("bob", "cid", "dan")),
                friendly_long("long-1", 2, (500, 0, 0), ("bob", "cid", "dan")))
    # Points first, then fewer smazzate played, then the player id.
    expected = [("dan", 25, 1), ("ann", 25, 2), ("bob", -10, 1), ("cid", -20, 1),
                ("eve", -20, 1)]
    assert await leaderboard(scoring.stub) == expected
    assert await leaderboard(scoring.stub, limit=2) == expected[:2]


async def test_leaderboard_limit_defaults_to_20_and_stops_at_100(scoring: ScoringProcess) -> None:
    await asyncio.gather(*(
        store(scoring.stub, report(f"t{i}", 1, (f"a{i}", f"b{i}", f"c{i}"), (i, 0, -i)))
        for i in range(1, 36)))
    assert len(await leaderboard(scoring.stub)) == 20
    top = await leaderboard(scoring.stub, limit=1000)
    assert len(top) == 100
    assert top[0] == ("a35", 35, 1)


async def test_standings_of_a_long_match(scoring: ScoringProcess) -> None:
    await store(scoring.stub,
                friendly_long("long-1", 1, (40, -15, -25)),
                friendly_long("long-1", 2, (-20, 60, -40)),
                friendly_long("long-2", 1, (1, 2, 3), ("ann", "bob", "cid")),
                friendly_long("long-1", 3, (70, -30, -40)))
    reply = await scoring.stub.GetStandings(
        scoring_pb2.GetStandingsRequest(table_id="long-1"), timeout=5)
    assert list(reply.player_ids) == ["lia", "max", "ned"]
    assert list(reply.totals) == [90, 15, -105]
    assert reply.smazzate == 3


async def test_standings_of_an_unknown_table_or_a_single_match_are_not_found(
        scoring: ScoringProcess) -> None:
    await store(scoring.stub, report("single-1"))
    for table_id in ("nowhere", "single-1"):
        call = scoring.stub.GetStandings(scoring_pb2.GetStandingsRequest(table_id=table_id))
        assert await refused(call) == (grpc.StatusCode.NOT_FOUND, "standings/unknown-table")
    call = scoring.stub.GetStandings(scoring_pb2.GetStandingsRequest(table_id=""))
    assert await refused(call) == (grpc.StatusCode.INVALID_ARGUMENT, "standings/invalid")


async def test_subscribe_from_zero_gets_everything_in_order(scoring: ScoringProcess) -> None:
    requests = [report("t1", 1), friendly_long("long-1", 1, (5, 0, -5)), report("t2", 1),
                friendly_long("long-1", 2, (0, 5, -5)), report("t1", 2, ending="silence")]
    before_ms = time.time() * 1000
    await store(scoring.stub, *requests)
    after_ms = time.time() * 1000
    sub = Subscriber(scoring.stub, 0)
    records = await sub.take(5)
    assert offsets(records) == [1, 2, 3, 4, 5]
    assert [r.result for r in records] == requests
    assert all(before_ms - 1000 <= r.stored_at_ms <= after_ms + 1000 for r in records)
    await sub.assert_quiet()
    await sub.close()
    later = Subscriber(scoring.stub, 4)
    assert [r.result for r in await later.take(2)] == requests[3:]
    await later.close()


async def test_a_resumed_subscriber_gets_every_later_result_without_gaps(
        scoring: ScoringProcess) -> None:
    requests = [report(f"t{i}", 1, scores=(i, -i, 0)) for i in range(1, 8)]
    await store(scoring.stub, *requests[:3])
    sub = Subscriber(scoring.stub, 0)
    processed = await sub.take(2)
    await sub.close()
    await store(scoring.stub, *requests[3:6])  # while nobody listens
    resumed = Subscriber(scoring.stub, processed[-1].offset + 1)
    got = await resumed.take(4)
    await store(scoring.stub, requests[6])
    got += await resumed.take(1)
    assert offsets(processed + got) == [1, 2, 3, 4, 5, 6, 7]
    assert [r.result for r in processed + got] == requests
    await resumed.assert_quiet()
    await resumed.close()


async def test_a_live_subscriber_is_woken_by_a_new_result(spawn: Spawn) -> None:
    # Polling every 30 s: only the wake-up can deliver within the 5 s of `take`.
    scoring = await spawn(scoring_poll_s="30")
    sub = Subscriber(scoring.stub, 0)
    await sub.assert_quiet(0.2)
    for n in range(1, 4):
        sent = report(f"t{n}")
        (offset,) = await store(scoring.stub, sent)
        (record,) = await sub.take(1)
        assert (record.offset, record.result) == (offset, sent)
    await sub.close()


@POSTGRES_ONLY  # replicas share PostgreSQL; SQLite serves one process
async def test_replicas_on_postgresql_see_each_others_results(spawn: Spawn) -> None:
    a = await spawn(scoring_poll_s="30")
    b = await spawn(scoring_poll_s="30")
    sub_b = Subscriber(b.stub, 0)
    await sub_b.assert_quiet(0.2)
    assert await store(a.stub, report("t1")) == [1]
    (record,) = await sub_b.take(1)  # NOTIFY from a, within 5 s though b polls every 30 s
    assert record.offset == 1
    assert await store(b.stub, report("t2", players=("ann", "dan", "eve"))) == [2]
    assert await store(a.stub, report("t2", players=("ann", "dan", "eve"))) == [2]
    assert offsets(await sub_b.take(1)) == [2]
    assert (await leaderboard(a.stub))[0] == ("ann", 60, 2)
    await sub_b.close()


@POSTGRES_ONLY
async def test_postgresql_connections_cut_under_the_service_are_reopened(
        backend: Backend, spawn: Spawn) -> None:
    scoring = await spawn(scoring_poll_s="30")
    sub = Subscriber(scoring.stub, 0)
    assert await store(scoring.stub, report("t1")) == [1]
    assert offsets(await sub.take(1)) == [1]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        cut = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE application_name = %s", (backend.schema,)).fetchone()
    assert cut is not None and cut[0] >= 2  # the listener and a pooled connection
    assert await store(scoring.stub, report("t2")) == [2]  # on a fresh connection
    assert offsets(await sub.take(1)) == [2]  # the stream survived
    other = await spawn(scoring_poll_s="30")  # and NOTIFY reaches the reconnected listener
    assert await store(other.stub, report("t3")) == [3]
    assert offsets(await sub.take(1)) == [3]
    await sub.close()


async def test_concurrent_reports_get_consecutive_offsets_seen_in_order(
        backend: Backend, spawn: Spawn) -> None:
    replicas = [await spawn()]
    if backend.kind == "postgres":
        replicas.append(await spawn())
    subs = [Subscriber(r.stub, 0) for r in replicas]
    requests = [report(f"t{i}", 1, scores=(i, 0, -i)) for i in range(40)]
    got = await asyncio.gather(*(store(replicas[i % len(replicas)].stub, r)
                                 for i, r in enumerate(requests)))
    assert sorted(o for (o,) in got) == list(range(1, 41))
    for sub in subs:
        records = await sub.take(40)
        assert offsets(records) == list(range(1, 41))  # a live reader never sees 7 before 6
        assert sorted(r.result.table_id for r in records) == sorted(r.table_id for r in requests)
        await sub.close()


INVALID = {
    "no table": report(""),
    "smazzata 0": report("t1", 0),
    "two players": report("t1", players=("ann", "bob"), scores=(1, -1, 0)),
    "four players": report("t1", players=("ann", "bob", "cid", "dan")),
    "a player twice": report("t1", players=("ann", "bob", "ann")),
    "an empty player": report("t1", players=("ann", "", "cid")),
    "two scores": report("t1", scores=(1, -1)),
    "four scores": report("t1", scores=(1, -1, 0, 0)),
    "no kind": report("t1", kind=table_pb2.MATCH_KIND_UNSPECIFIED),
    "a competitive long match": report("t1", kind=LONG, competitive=True),
    "an unknown winner": report("t1", winner=7),
}


async def test_invalid_reports_are_refused_with_a_reason(scoring: ScoringProcess) -> None:
    for name, request in INVALID.items():
        code, reason = await refused(scoring.stub.ReportResult(request))
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "result/invalid"), name
    missing = report("t1")
    missing.ClearField("result")
    assert await refused(scoring.stub.ReportResult(missing)) == (
        grpc.StatusCode.INVALID_ARGUMENT, "result/invalid")
    assert await leaderboard(scoring.stub) == []
    assert await store(scoring.stub, report("t1")) == [1]  # nothing refused took an offset


async def test_results_survive_a_restart_and_a_crash(scoring: ScoringProcess) -> None:
    first, long1 = report("t1"), friendly_long("long-1", 1, (10, 0, -10))
    assert await store(scoring.stub, first, long1) == [1, 2]
    await scoring.restart()  # SIGTERM: checked to exit 0 without errors
    assert await leaderboard(scoring.stub) == [("ann", 30, 1), ("bob", -10, 1), ("cid", -20, 1)]
    third = report("t2", scores=(0, 5, -5))
    assert await store(scoring.stub, third, first) == [3, 1]  # offsets go on; still idempotent
    await scoring.kill()  # SIGKILL right after the acknowledgement
    await scoring.start()
    sub = Subscriber(scoring.stub, 0)
    assert [(r.offset, r.result) for r in await sub.take(3)] == [
        (1, first), (2, long1), (3, third)]
    await sub.close()
    standings = await scoring.stub.GetStandings(
        scoring_pb2.GetStandingsRequest(table_id="long-1"), timeout=5)
    assert (list(standings.totals), standings.smazzate) == ([10, 0, -10], 1)


async def test_shutdown_ends_open_streams_with_unavailable(scoring: ScoringProcess) -> None:
    sub = Subscriber(scoring.stub, 0)
    await sub.assert_quiet(0.2)
    started = time.monotonic()
    await scoring.stop()  # grace is 3 s: streams must end at once, not be cut at the deadline
    assert time.monotonic() - started < 2.5
    await asyncio.wait_for(sub.ended.wait(), 5)
    assert sub.error is not None
    assert sub.error.code() == grpc.StatusCode.UNAVAILABLE
    assert (REASON, "scoring/stopping") in list(sub.error.trailing_metadata() or ())


def test_bad_settings_stop_the_service_at_once(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MACHIAVELOX_")}
    env["MACHIAVELOX_SCORING_DATABASE_URL"] = "mysql://scorer:s3cret@db/scores"
    done = subprocess.run([sys.executable, "-m", "machiavelox.cli", "scoring"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=20)
    assert done.returncode == 2
    assert "MACHIAVELOX_SCORING_DATABASE_URL" in done.stderr
    assert "s3cret" not in done.stderr
