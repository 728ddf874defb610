"""Scoring's results log, followed by matchmaking: every stored smazzata result goes to the
agorà (`Agora.apply_result`: ratings, Machiavelox's and, from the ends of ranked classic
sessions, the classic ones; and the seats of ended matches freed).

`ResultsFollower` subscribes to SubscribeResults from offset 0 at start-up (which also rebuilds
every rating from the whole log) and resumes after the last record applied when the stream
breaks (at-least-once: a record seen again is skipped by its offset). Without
MACHIAVELOX_SCORING_ADDRESS nobody is ever rated and seated players stay seated
(`ticket/seated`) until their table is lost, which is acceptable only for tests and demos.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import grpc

from machiavelox._gen.v1 import scoring_pb2, scoring_pb2_grpc
from machiavelox.platform.ratings import ranks_from_standings
from machiavelox.platform.tls import Connect

from .agora import MatchResult

log = logging.getLogger(__name__)


def decode_result(result: scoring_pb2.ReportResultRequest) -> MatchResult:
    """A record as the agorà reads it; a ranked classic session's end (issue 16: `classic`
    competitive, the session ended) with the ranks of its standings, to rate its players."""
    ranks: tuple[float, ...] = ()
    c = result.classic
    if result.HasField("classic") and c.competitive and result.match_ended:
        ranks = tuple(ranks_from_standings([s - 1 for s in c.standings], list(c.totals),
                                           {w - 1 for w in c.session.winners}))
    return MatchResult(result.table_id, tuple(result.player_ids),
                       tuple(result.result.scores), result.competitive, result.match_ended,
                       ranks)


class ResultsFollower:
    """Follows scoring's results log from offset 0, resuming after the last record applied."""

    def __init__(self, address: str, apply: Callable[[MatchResult], Awaitable[None]],
                 connect: Connect, retry_s: float = 1.0) -> None:
        """`connect`: opens the channel to scoring, as matchmaking, with the client
        interceptors (tracing): `InternalTls.connector`."""
        self.address = address
        self.apply = apply
        self.connect = connect
        self.retry_s = retry_s
        self.next_offset = 0

    async def run(self) -> None:
        async with self.connect(self.address) as channel:
            stub = scoring_pb2_grpc.ScoringServiceStub(channel)
            while True:
                try:
                    call = stub.SubscribeResults(
                        scoring_pb2.SubscribeResultsRequest(from_offset=self.next_offset))
                    async for response in call:
                        record = response.record
                        if record.offset < self.next_offset:
                            continue  # at-least-once: already applied
                        await self.apply(decode_result(record.result))
                        self.next_offset = record.offset + 1
                    log.warning("results stream ended; resubscribing",
                                extra={"offset": self.next_offset})
                except grpc.aio.AioRpcError as err:
                    log.warning("results stream lost (%s); resubscribing", err.code().name,
                                extra={"offset": self.next_offset})
                await asyncio.sleep(self.retry_s)
