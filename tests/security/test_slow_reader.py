"""A client that never reads, and one that resumes from the start of a long game: neither can
hurt anyone (docs/security.md, "Slow readers" and "The shared gateway-shard link"). Real gateway
and shard processes on loopback."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from machiavelox import rules
from machiavelox.table.shard import PAGE_BYTES
from tests.security.gateway_shard import (
    app,
    churn,
    cluster,
    create_table,
    drawn_card,
    rss_kb,
    seated,
)

FAST = {"MACHIAVELOX_GATEWAY_ACTION_RATE": "5000", "MACHIAVELOX_GATEWAY_ACTION_BURST": "5000",
        "MACHIAVELOX_GATEWAY_MESSAGE_RATE": "5000", "MACHIAVELOX_GATEWAY_MESSAGE_BURST": "5000"}
FAST_SHARD = {"MACHIAVELOX_TABLE_ACTION_RATE": "5000", "MACHIAVELOX_TABLE_ACTION_BURST": "5000"}
# An app that stopped reading: with BDP probing off its HTTP/2 window stays at 16 KiB and is
# never opened again, so the gateway's writes to it wait as soon as that is full.
NEVER_READS = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 16384)]
LONG_GAME = 1500  # actions: 3,000 events (two each), more than two pages of them


async def test_a_client_that_never_reads_is_cut_and_memory_stays_flat(tmp_path: Path) -> None:
    """The finding: a client that never reads made the gateway grow by 300 MB a minute while
    another seat played fast. Proves: its session ends with RESOURCE_EXHAUSTED `session/slow`
    once what waits for it passes the bound; the gateway's memory grows by a bounded amount;
    the player who plays is never held back (every action answered); the cut client resumes
    from its last sequence number and gets exactly the rest."""
    limits = {"MACHIAVELOX_GATEWAY_SESSION_QUEUE_MESSAGES": "200",
              "MACHIAVELOX_GATEWAY_SESSION_QUEUE_BYTES": str(256 * 1024)}
    with cluster(tmp_path, gateway={**FAST, **limits}, shard=FAST_SHARD) as c:
        await create_table(c.shard, "shard-0.t1")
        async with grpc.aio.insecure_channel(c.gateway.address, options=NEVER_READS) as slow, \
                app(c.gateway.address) as ch:
            ann = await seated(slow, "ann", "shard-0.t1", batched=True)  # reads no more
            bob = await seated(ch, "bob", "shard-0.t1", batched=True)
            before = rss_kb(c.gateway)
            card = await drawn_card(bob, rules.Seat.P2)
            last = await churn(bob, rules.Seat.P2, card, LONG_GAME)
            grown = rss_kb(c.gateway) - before
            assert c.metric(c.gateway, "machiavelox_gateway_slow_sessions_total") == 1.0
            # the app reads again: what was on its way, then the status
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await ann.until(lambda r: False, 10)
            assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "session/slow" in (err.value.details() or "")
            assert grown < 30_000, grown  # (kB: the bounded queue, not the game)
            # what ann had read is its business; it resumes from the last it has
            have = max([0, *(r.batch.events[-1].seq for r in ann.batches
                            if r.batch.events)])
            again = await seated(ch, "ann", "shard-0.t1", last_seq=max(have, 1),
                                 batched=True)
            seqs: list[int] = []
            while not seqs or seqs[-1] < last:
                r = await again.next(10)
                if r.WhichOneof("kind") == "event":
                    seqs.append(r.event.seq)
            assert seqs == list(range(max(have, 1) + 1, last + 1))
            for client in (ann, bob, again):
                await client.close()


async def test_a_resume_from_the_start_is_paged_and_exact(tmp_path: Path) -> None:
    """The finding: after a long game `Join{last_seq: 1}` made the shard send the whole log as
    one item (over 4 MB: the gateway's read failed, it reconnected and resubscribed the same
    session, again and again, and the other tables on that shard got no answer). Proves: the
    resume comes in pages of at most PAGE_BYTES, exactly the events after 1, in order, once
    each; meanwhile a player at another table on the same shard is answered."""
    with cluster(tmp_path, gateway=FAST, shard=FAST_SHARD) as c:
        await create_table(c.shard, "shard-0.t1")
        await create_table(c.shard, "shard-0.t2", ("dan", "eve", "fay"))
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            card = await drawn_card(ann, rules.Seat.P1)
            last = await churn(ann, rules.Seat.P1, card, LONG_GAME)
            dan = await seated(ch, "dan", "shard-0.t2")
            bob = await seated(ch, "bob", "shard-0.t1", last_seq=1, batched=True)
            dan.act(rules.Draw(rules.Seat.P1))
            seqs: list[int] = []
            while not seqs or seqs[-1] < last:
                r = await bob.next(10)
                assert r.WhichOneof("kind") == "event", r
                seqs.append(r.event.seq)
            assert seqs == list(range(2, last + 1))
            sizes = [r.ByteSize() for r in bob.batches]
            assert len(sizes) >= 2 and max(sizes) <= PAGE_BYTES + 1024, sizes
            ack = await dan.until(lambda r: r.WhichOneof("kind") == "ack")
            assert ack.ack.arrival_index == 1
            for client in (ann, bob, dan):
                await client.close()
