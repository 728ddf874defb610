"""What scoring has stored, read as a subscriber does (SubscribeResults from offset 1)."""

from __future__ import annotations

import asyncio

from machiavelox._gen.v1 import scoring_pb2, scoring_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel

QUIET_S = 2.0  # after the last expected record: nothing more may come in this long


async def stored_results(scoring: Proc, want: int,
                         timeout_s: float = 60.0) -> list[scoring_pb2.ResultRecord]:
    """Every stored result: waits (at most `timeout_s`) for `want` of them, then `QUIET_S`
    more, so that a duplicate stored late is seen too."""
    out: list[scoring_pb2.ResultRecord] = []
    async with aio_channel(scoring, "results-reader") as ch:
        stream = scoring_pb2_grpc.ScoringServiceStub(ch).SubscribeResults(
            scoring_pb2.SubscribeResultsRequest(from_offset=1))

        async def collect(until: int | None) -> None:
            async for item in stream:
                out.append(item.record)
                if until is not None and len(out) >= until:
                    return

        try:
            await asyncio.wait_for(collect(want), timeout_s)
            await asyncio.wait_for(collect(None), QUIET_S)
        except TimeoutError:
            pass
        finally:
            stream.cancel()
    return out
