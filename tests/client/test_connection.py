"""The client's connection over real processes (a shard, the gateway) with a TCP proxy the test
owns between the client and the gateway: the session resumes from its last event after its
connection drops, and sends an unanswered action again with the same id (docs/protocol.md,
"Resuming", "Resending")."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from machiavelox import rules
from machiavelox._gen.v1 import gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.client.connection import Gateway, Incoming, Link, TableSession
from machiavelox.local.processes import Proc, aio_channel
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.timeout(90)
STEP_S = 20.0


@pytest.fixture
async def table(table_cluster: dict[str, Proc]) -> AsyncIterator[str]:
    async with aio_channel(table_cluster["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id="shard-0.c1", player_ids=["ann", "bob", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)
    yield "shard-0.c1"


class Inbox:
    """What a session passed on, and a way to wait for one of it."""

    def __init__(self) -> None:
        self.items: list[Incoming] = []
        self._changed = asyncio.Event()

    def __call__(self, item: Incoming) -> None:
        self.items.append(item)
        self._changed.set()

    def responses(self) -> list[gateway_pb2.PlayResponse]:
        return [i for i in self.items if not isinstance(i, Link)]

    async def until(self, found: Callable[[Incoming], bool], timeout_s: float = STEP_S) -> None:
        async def wait() -> None:
            for _ in range(10_000):
                if any(found(i) for i in self.items):
                    return
                self._changed.clear()
                await self._changed.wait()
            raise AssertionError("never came")

        await asyncio.wait_for(wait(), timeout_s)


def answer_to(action_id: str) -> Callable[[Incoming], bool]:
    def found(item: Incoming) -> bool:
        return (not isinstance(item, Link) and item.WhichOneof("kind") == "ack"
                and item.ack.client_action_id == action_id)
    return found


def drew(item: Incoming) -> bool:
    return not isinstance(item, Link) and item.WhichOneof("kind") == "event" \
        and item.event.kind == "drew"


async def test_a_dropped_connection_resumes_and_the_unanswered_action_is_sent_once_more(
        table_cluster: dict[str, Proc], table: str) -> None:
    """ann draws; then her second draw reaches the table but its answer is lost with the
    connection. The session reconnects, resumes after the last event it had (no gap, no
    duplicate) and sends the draw again with the same id: it gets the original Ack, and the
    table applied it once (two drawn cards, not three). Fails without the resume (the drawn
    event is missed or seen twice), without the resend (no answer ever) or with a fresh id for
    it (a third draw)."""
    gateway_port = int(table_cluster["gateway"].address.rsplit(":", 1)[1])
    proxy = TcpProxy("127.0.0.1", gateway_port)
    await proxy.start()
    gateway = Gateway(f"127.0.0.1:{proxy.port}")
    inbox = Inbox()
    session: TableSession | None = None
    task = None
    try:
        await gateway.login("ann")
        session = gateway.session(table, inbox, heartbeat_s=0.5)
        task = asyncio.create_task(session.run())
        await inbox.until(lambda i: not isinstance(i, Link) and i.HasField("snapshot"))
        first = session.act(rules.Draw(rules.Seat.P1))
        await inbox.until(answer_to(first))
        await inbox.until(drew)
        assert session.last_seq == 1

        proxy.stall(replies_only=True)  # the draw goes through; its answer does not come back
        second = session.act(rules.Draw(rules.Seat.P1))
        await asyncio.sleep(1.0)
        assert second in session.pending
        await proxy.cut()  # the connection drops
        proxy.resume()
        await inbox.until(answer_to(second))
        assert session.connects >= 2, "it reconnected"
        assert not session.pending

        session.want_view()
        snapshots = len([r for r in inbox.responses() if r.HasField("snapshot")])
        await inbox.until(lambda i: len([r for r in inbox.responses()
                                         if r.HasField("snapshot")]) > snapshots)
        view = [r for r in inbox.responses() if r.HasField("snapshot")][-1].snapshot.view
        assert len(view.hand) == 2 and view.seats[0].tallone_count == 32, "applied once each"
        seqs = [r.event.seq for r in inbox.responses() if r.HasField("event")]
        assert seqs == list(range(1, len(seqs) + 1)), f"no gap and no duplicate: {seqs}"
        assert len([r for r in inbox.responses() if drew(r)]) == 2
        acks = [r.ack for r in inbox.responses() if r.HasField("ack")]
        assert [a.client_action_id for a in acks] == [first, second]
        assert acks[1].arrival_index == 2
    finally:
        if session is not None:
            session.stop()
        if task is not None:
            await asyncio.wait_for(task, 10)
        await gateway.close()
        await proxy.close()


async def test_a_session_the_table_does_not_know_ends_with_the_reason(
        table_cluster: dict[str, Proc]) -> None:
    """A stream no reconnect can mend (no such table) ends the session at once with the
    server's reason, instead of reconnecting forever."""
    gateway = Gateway(table_cluster["gateway"].address)
    inbox = Inbox()
    try:
        await gateway.login("dan")
        session = gateway.session("shard-0.nope", inbox)
        await asyncio.wait_for(session.run(), STEP_S)
        assert session.final is not None and session.final.reason == "table/unknown"
        closed = [i for i in inbox.items if isinstance(i, Link) and i.state == "closed"]
        assert closed and session.connects == 1
    finally:
        await gateway.close()


async def test_fresh_views_are_asked_within_the_gateways_pace(
        table_cluster: dict[str, Proc], table: str) -> None:
    """The gateway allows one Resync every 2 s, 3 at once (docs/protocol.md). A screen that
    asks for a fresh view twenty times in a second gets its snapshots without one
    `rate/limited` reaching it: the session keeps one Resync in flight, a gap between two,
    and after a refusal waits for the bucket to refill; the last ask is answered. Fails
    without the coalescing (twenty Resyncs, most of them refused)."""
    gateway = Gateway(table_cluster["gateway"].address)
    inbox = Inbox()
    session: TableSession | None = None
    task = None
    try:
        await gateway.login("bob")
        session = gateway.session(table, inbox)
        task = asyncio.create_task(session.run())
        await inbox.until(lambda i: not isinstance(i, Link) and i.HasField("snapshot"))
        for _ in range(20):
            session.want_view()
            await asyncio.sleep(0.05)
        asked = len(inbox.items)

        def answered(_: Incoming) -> bool:
            return any(not isinstance(i, Link) and i.HasField("snapshot")
                       for i in inbox.items[asked:])

        await inbox.until(answered, timeout_s=10)
        refused = [r for r in inbox.responses() if r.HasField("refused")]
        assert refused == [], refused
        snapshots = [r for r in inbox.responses() if r.HasField("snapshot")]
        assert 2 <= len(snapshots) <= 8, len(snapshots)
    finally:
        if session is not None:
            session.stop()
        if task is not None:
            await asyncio.wait_for(task, 10)
        await gateway.close()
