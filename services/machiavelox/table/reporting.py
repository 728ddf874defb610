"""Results to the scoring service: every ended smazzata, retried until stored.

ReportResult is idempotent on (table, smazzata), so retrying after a lost answer is safe.
Without a scoring address the result is only logged (a shard in a test or a demo).
"""

from __future__ import annotations

import asyncio
import logging

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.platform.tls import Connect

from .host import TableHost

log = logging.getLogger(__name__)

_KIND = {rules.MatchKind.SINGLE: table_pb2.MATCH_KIND_SINGLE,
         rules.MatchKind.LONG: table_pb2.MATCH_KIND_LONG}


class ScoringReporter:
    def __init__(self, address: str, shard_id: str, connect: Connect,
                 retry_s: float = 1.0) -> None:
        """`connect`: opens the channel to scoring, as this shard (`InternalTls.connector`)."""
        self.address = address
        self.shard_id = shard_id
        self.retry_s = retry_s
        self._channel = connect(address) if address else None
        self._stub = (scoring_pb2_grpc.ScoringServiceStub(self._channel)
                      if self._channel is not None else None)

    async def report(self, host: TableHost, number: int, result: rules.SmazzataResult) -> None:
        request = scoring_pb2.ReportResultRequest(
            table_id=host.table_id, smazzata=number, kind=_KIND[host.kind],
            competitive=host.competitive, player_ids=host.players,
            result=codec.result_to_pb(result),
            match_ended=host.finished and number == len(host.match.smazzate))
        extra = {"table_id": host.table_id, "shard_id": self.shard_id}
        if self._stub is None:
            log.info("smazzata %d ended: %s", number, result.summary(), extra=extra)
            return
        while True:
            try:
                reply = await self._stub.ReportResult(request, timeout=5)
                log.info("result stored at offset %d", reply.offset, extra=extra)
                return
            except grpc.aio.AioRpcError as err:
                log.warning("scoring unavailable (%s), retrying", err.code().name, extra=extra)
                await asyncio.sleep(self.retry_s)

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
