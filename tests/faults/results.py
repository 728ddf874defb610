"""What scoring has stored, read as a subscriber does (SubscribeResults from its start).

"Exactly once" is read without waiting for quiet: `results_log` reports a marker result last
(as a shard does) and reads the log up to it; offsets become visible in order, so every record
stored before the marker has been read.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

from machiavelox._gen.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.local.processes import Proc, aio_channel

MARKERS = itertools.count(1)  # `results_log`'s marker results: marker.<n>
WAIT_S = 60.0  # the most a read waits for what it expects (then the test fails)


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


async def wait_stored(scoring: Proc, table_id: str) -> None:
    """Returns once the table's result is in scoring's results log."""
    await read_log(scoring, lambda record: record.result.table_id == table_id)


async def results_log(scoring: Proc) -> list[scoring_pb2.ResultRecord]:
    """Every record of scoring's results log. A marker result is reported last (as a shard
    does: role "table"), then the log is read from its start up to the marker: offsets become
    visible in order, so every record stored before it has been read. Call it once nothing
    else can report (the shard stopped)."""
    marker_id = f"marker.{next(MARKERS)}"
    marker = scoring_pb2.ReportResultRequest(
        table_id=marker_id, smazzata=1, kind=table_pb2.MATCH_KIND_SINGLE,
        player_ids=["m1", "m2", "m3"], match_ended=True,
        result=common_pb2.SmazzataResult(winner=common_pb2.SEAT_P1, scores=[1, 0, 0],
                                         ending="survivor"))
    async with aio_channel(scoring, "table") as channel:
        await scoring_pb2_grpc.ScoringServiceStub(channel).ReportResult(marker, timeout=5)
    records = await read_log(scoring, lambda record: record.result.table_id == marker_id)
    return [r for r in records[:-1] if not r.result.table_id.startswith("marker.")]


async def stored_results(scoring: Proc, want: int) -> list[scoring_pb2.ResultRecord]:
    """Every stored result (markers aside), once at least `want` are there."""
    seen: list[scoring_pb2.ResultRecord] = []

    def enough(record: scoring_pb2.ResultRecord) -> bool:
        seen.append(record)
        return len([r for r in seen if not r.result.table_id.startswith("marker.")]) >= want

    await read_log(scoring, enough)
    return await results_log(scoring)
