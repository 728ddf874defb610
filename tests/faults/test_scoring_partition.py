"""A scoring replica partitioned from PostgreSQL while it holds the append head holds no other
replica hostage (issue 13, item 6).

Two real `machiavelox scoring` processes on one fresh schema of the machine's PostgreSQL: A
reaches it through a TCP proxy this test owns, B directly. Every append locks the append head
(the one row of `results_head`, FOR UPDATE: scoring/store_pg.py) for its whole transaction. The
moment A holds it is made certain with a real lock, no hook in the service: the test takes the
head itself, reports a result to A and waits until A's append waits on the test's lock
(pg_blocking_pids); then it blackholes A's path (nothing forwarded either way, nothing closed,
not even an end of stream: as in a partition, whose FIN never arrives) and releases its lock. A's
backend gets the head and answers into the proxy: A can neither go on with that transaction nor
end it, and its backend, idle in the transaction, keeps the head.

Proves: B stores a result within B_BOUND_S all the same (the server ends A's session and
releases the head: idle_in_transaction_session_timeout, and B's waits end with lock_timeout
rather than hang: platform/pg_conninfo.py); A's own report fails UNAVAILABLE instead of hanging;
A's result was not stored (B's is offset 1); once the path forwards again, A stores again by
itself. Without the server-side bounds, A's backend keeps the head as long as the partition
lasts and B stores nothing (tried: the test fails at B_BOUND_S). The TCP keepalives are not
proven here: on loopback the proxy's own kernel answers them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import psycopg
import pytest

from machiavelox._gen.v1 import common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, start
from tests.support.pg import PG_URL, pg_schema, schema_url
from tests.support.tcp_proxy import TcpProxy, via_proxy

B_BOUND_S = 10.0  # the bound: B stores within it of A's partition
A_BOUND_S = 20.0  # A's report fails, and A stores again once healed, within this
WAIT_S = 5.0  # the longest the test waits for a state of A's backend (it takes milliseconds)
POLL_S = 0.02
Connection = psycopg.AsyncConnection[tuple[Any, ...]]
HEAD_FOR_UPDATE = "SELECT last_offset FROM results_head WHERE id = 1 FOR UPDATE"

pytestmark = pytest.mark.timeout(120)


def report(table_id: str) -> scoring_pb2.ReportResultRequest:
    return scoring_pb2.ReportResultRequest(
        table_id=table_id, smazzata=1, kind=table_pb2.MATCH_KIND_SINGLE, competitive=True,
        player_ids=["ann", "bob", "cy"], match_ended=True,
        result=common_pb2.SmazzataResult(winner=common_pb2.SEAT_P1, scores=[30, -10, -20],
                                         ending="closing"))


@pytest.fixture
async def proxy() -> AsyncIterator[TcpProxy]:
    parts = urlsplit(PG_URL)
    relay = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await relay.start()
    yield relay
    relay.resume()
    await relay.close()


@pytest.fixture
async def replicas(tmp_path: Path, proxy: TcpProxy) -> AsyncIterator[tuple[Proc, Proc, str]]:
    """A (through the proxy), B (direct), and the schema's direct URL. Started from threads:
    the proxy lives on this test's event loop, which must run meanwhile."""
    started: list[Proc] = []
    with pg_schema("test_partition") as (direct, schema):
        try:
            for name, url in (("scoring-a", schema_url(via_proxy(PG_URL, proxy.port), schema)),
                              ("scoring-b", direct)):
                started.append(await asyncio.to_thread(
                    start, name, "scoring", {"MACHIAVELOX_SCORING_DATABASE_URL": url,
                                             "MACHIAVELOX_METRICS_PORT": "0"}, tmp_path))
            yield started[0], started[1], direct
        finally:
            proxy.resume()
            await asyncio.to_thread(check_all_clean, reversed(started))


async def backend_waiting_on(observer: Connection,
                             holder_pid: int) -> int:
    """The pid of the backend that waits on a lock `holder_pid` holds."""
    for _ in range(int(WAIT_S / POLL_S)):
        cur = await observer.execute(
            "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (holder_pid,))
        row = await cur.fetchone()
        if row is not None:
            return int(row[0])
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"no append waited on the test's lock within {WAIT_S} s")


async def state_of(observer: Connection, pid: int) -> str:
    cur = await observer.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,))
    row = await cur.fetchone()
    return "gone" if row is None else str(row[0])


async def stored_by(stub: scoring_pb2_grpc.ScoringServiceStub,
                    request: scoring_pb2.ReportResultRequest, bound_s: float,
                    ) -> tuple[int | None, list[str]]:
    """Report until stored, within `bound_s`: (its offset or None, the failures meanwhile)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    failures: list[str] = []
    while (left := deadline - loop.time()) > 0:
        try:
            reply = await stub.ReportResult(request, timeout=left)
            return reply.offset, failures
        except grpc.aio.AioRpcError as err:
            failures.append(f"{err.code().name}: {err.details()}")
            if err.code() != grpc.StatusCode.UNAVAILABLE:
                break
        await asyncio.sleep(0.2)
    return None, failures


async def test_a_partitioned_replica_holding_the_head_stops_no_other(
        replicas: tuple[Proc, Proc, str], proxy: TcpProxy) -> None:
    a, b, direct = replicas
    holder = await psycopg.AsyncConnection.connect(direct)  # its transaction holds the head
    observer = await psycopg.AsyncConnection.connect(direct, autocommit=True)
    async with holder, observer, aio_channel(a, "table") as to_a, \
            aio_channel(b, "table") as to_b:
        stub_a = scoring_pb2_grpc.ScoringServiceStub(to_a)
        stub_b = scoring_pb2_grpc.ScoringServiceStub(to_b)
        await holder.execute(HEAD_FOR_UPDATE)
        at_a = asyncio.ensure_future(stub_a.ReportResult(report("t-a"), timeout=A_BOUND_S))
        try:
            await partitioned(stub_a, stub_b, at_a, holder, observer, proxy)
        finally:
            at_a.cancel()


async def partitioned(stub_a: scoring_pb2_grpc.ScoringServiceStub,
                      stub_b: scoring_pb2_grpc.ScoringServiceStub,
                      at_a: asyncio.Future[scoring_pb2.ReportResultResponse],
                      holder: Connection, observer: Connection, proxy: TcpProxy) -> None:
    a_pid = await backend_waiting_on(observer, holder.info.backend_pid)
    proxy.blackhole()  # the partition: from now on A and its backend hear nothing of each other
    await holder.commit()  # A's backend takes the head; its answer stays in the proxy
    for _ in range(int(WAIT_S / POLL_S)):
        if await state_of(observer, a_pid) != "active":
            break
        await asyncio.sleep(POLL_S)
    assert await state_of(observer, a_pid) == "idle in transaction", (
        "A's backend should hold the head, idle in its transaction")

    offset, failures = await stored_by(stub_b, report("t-b"), B_BOUND_S)
    assert offset == 1, (f"B stored nothing within {B_BOUND_S} s of A's partition "
                         f"(A's backend: {await state_of(observer, a_pid)}): {failures}")
    with pytest.raises(grpc.aio.AioRpcError) as at_a_failed:
        await asyncio.wait_for(at_a, A_BOUND_S)
    assert at_a_failed.value.code() == grpc.StatusCode.UNAVAILABLE

    proxy.resume()
    offset, failures = await stored_by(stub_a, report("t-a"), A_BOUND_S)
    assert offset == 2, f"A did not store again once healed: {failures}"
