"""Results to the scoring service: every ended smazzata, and every classic table's report
(a hand ended, the session ended: `classic_results.py`), retried until stored.

ReportResult is idempotent on (table, smazzata), and on (table, report) for a classic table,
so retrying after a lost answer is safe. A classic table's reports go one after the other, in
order (each holds the whole session so far). Without a scoring address the result is only
logged (a shard in a test or a demo).

A result is part of its table's journal (the table's records replay to it); once scoring has
stored it, that is journaled too (`TableHost.mark_reported`). So a shard that starts reports
whatever its tables ended without a stored report: a crash, a SIGTERM or a scoring outage delay
a result, never lose it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import grpc

from machiavelox._gen.v1 import scoring_pb2_grpc
from machiavelox.platform.tls import Connect

from .rulesets import Host

log = logging.getLogger(__name__)

Send = Callable[[Host, int, Any], Coroutine[Any, Any, None]]
"""Reports one smazzata's result (or a classic table's report), returning once it is stored
(retrying meanwhile)."""


class ResultReports:
    """The reports in flight: one task per ended smazzata, its storing journaled."""

    def __init__(self, send: Send | None) -> None:
        self.send = send
        self._tasks: set[asyncio.Task[None]] = set()
        self._last: dict[str, asyncio.Task[None]] = {}  # a classic table's latest report

    def due(self, host: Host) -> None:
        """Report what the table has ended and not yet sent (what its stored journal holds)."""
        pending = host.smazzate_to_report()
        for number, result in pending:
            host.reporting = number
            if self.send is None:
                host.mark_reported(number)
                continue
            after = self._last.get(host.table_id) if host.REPORTS_IN_ORDER else None
            task = asyncio.create_task(self._one(host, number, result, after),
                                       name=host.table_id)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            if host.REPORTS_IN_ORDER:
                self._last[host.table_id] = task
                task.add_done_callback(self._forget)

    def _forget(self, task: asyncio.Task[None]) -> None:
        if self._last.get(task.get_name()) is task:
            del self._last[task.get_name()]

    async def _one(self, host: Host, number: int, result: Any,
                   after: asyncio.Task[None] | None = None) -> None:
        assert self.send is not None
        if after is not None:  # (REPORTS_IN_ORDER: a classic table's)
            await asyncio.wait([after])
        await self.send(host, number, result)
        host.mark_reported(number)

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def drain(self, limit_s: float, shard_id: str) -> int:
        """Wait at most `limit_s` for the reports in flight; the number left (logged: the next
        start of the shard reports them from the journal)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=max(0.0, limit_s))
        left = len(self._tasks)
        if left:
            log.warning("stopping with %d results not yet stored in scoring: the next start "
                        "of this shard reports them from its journal", left,
                        extra={"shard_id": shard_id, "results": left})
        for task in list(self._tasks):
            task.cancel()
        return left


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

    async def report(self, host: Host, number: int, result: Any) -> None:
        extra = {"table_id": host.table_id, "shard_id": self.shard_id}
        request, summary = host.report_request(number, result)
        if self._stub is None:
            log.info("%s", summary, extra=extra)
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

