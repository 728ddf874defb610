"""Acknowledged means durable: the real Shard in process, journaling to a real SQLite store, and
a gateway's link whose every write checks what the store holds at that moment.

Would fail if an answer (ack, event) could leave before the journal write covering its records
were stored, if a restored shard did not get the same table back, or if the group commit did
not put the records of one frame in one write.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.host import INTERRUPTED
from machiavelox.table.journal_store import LOAD, StoredFrame, open_journal
from machiavelox.table.recovery import gather, recover
from machiavelox.table.shard import Shard
from tests.support.shard_items import action_item, subscribe_item, ticking_clock

PLAYERS = ["ann", "bob", "cy"]
TABLE = "shard-0.t"


def subscribe(player: str) -> table_pb2.GatewayItem:
    return subscribe_item(TABLE, player)


def act(player: str, action: rules.Action, action_id: str) -> table_pb2.GatewayItem:
    return action_item(TABLE, player, action, action_id)


class Gateway:
    """A gateway's side of the stream: when a frame is sent to it, what the store holds of the
    table is read then and there (synchronously, from the SQLite file: WAL allows a reader)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.frames: list[tuple[table_pb2.ConnectResponse, int]] = []

    async def write(self, frame: table_pb2.ConnectResponse) -> None:
        with contextlib.closing(sqlite3.connect(self.path)) as conn:
            rows = conn.execute(LOAD, ("shard-0", "shard-0", 0)).fetchall()
        stored = gather([StoredFrame(int(n), bool(c), bytes(p)) for n, c, p in rows])
        self.frames.append((frame, len(stored.get(TABLE, b""))))


async def step(shard: Shard, link: GatewayLink, *items: table_pb2.GatewayItem) -> None:
    """As the stream handler does it (table/service.py)."""
    link.hold()
    later = shard.handle_frame(link, items)
    await shard.durable()
    await link.flush()
    shard.settle(later)


async def test_no_answer_leaves_before_its_records_are_stored(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    clock = iter(range(1_000, 10**9, 7))
    store = await open_journal(url, "shard-0")
    shard = Shard("shard-0", 10, lambda: next(clock))
    await recover(shard, store)
    gateway = Gateway(tmp_path / "journal.sqlite3")
    link = GatewayLink("gw", gateway.write, window_s=0, gated=True)
    shard.links.add(link)
    host = shard.create_table(TABLE, PLAYERS, rules.MatchKind.SINGLE, True)
    await shard.durable()
    await step(shard, link, subscribe("ann"), subscribe("bob"))
    writes_before = shard.journal.writes if shard.journal else 0
    await step(shard, link, act("ann", rules.Draw(rules.Seat.P1), "a1"),
               act("bob", rules.Draw(rules.Seat.P2), "b1"))
    assert shard.journal is not None and shard.journal.writes == writes_before + 1  # grouped
    acked = [(frame, stored) for frame, stored in gateway.frames
             if any(i.batch.HasField("ack") for i in frame.items)]
    assert acked, "the actions were acknowledged"
    for _, stored in acked:  # when it was sent, the store held the table's records
        assert stored == len(host.journal.data)
    # a shard started afresh on the same store gets the same table, same events
    await shard.close()
    store2 = await open_journal(url, "shard-0")
    again = Shard("shard-0", 10, lambda: 10**9)
    done = await recover(again, store2)
    assert done.tables == 1 and not done.lost
    restored = again.tables[TABLE]
    assert restored.events[:host.seq] == host.events
    assert restored.events[host.seq].kind == INTERRUPTED  # and one event says so
    assert restored.view(rules.Seat.P1).hand == host.view(rules.Seat.P1).hand
    await again.close()


async def test_checkpoints_keep_the_store_to_the_open_tables(tmp_path: Path) -> None:
    """With a checkpoint at every write, the store holds from the latest checkpoint on: a
    restarted shard reads a checkpoint first, restores the open table exactly, and not the
    closed one. Would fail if a checkpoint missed a table's records or kept closed tables."""
    url = f"sqlite:///{tmp_path / 'journal.sqlite3'}"
    store = await open_journal(url, "shard-0")
    shard = Shard("shard-0", 10, ticking_clock(step_ms=7), resume_grace_s=0)
    await recover(shard, store)
    journal = shard.journal
    assert journal is not None
    journal.checkpoint_s = 0.0
    link = GatewayLink("gw", Gateway(tmp_path / "journal.sqlite3").write, window_s=0,
                       gated=True)
    shard.links.add(link)
    kept = shard.create_table(TABLE, PLAYERS, rules.MatchKind.SINGLE, True)
    gone = shard.create_table("shard-0.gone", PLAYERS, rules.MatchKind.SINGLE, True)
    await shard.durable()
    await step(shard, link, act("ann", rules.Draw(rules.Seat.P1), "a1"))
    for player, seat in (("bob", rules.Seat.P2), ("cy", rules.Seat.P3)):  # M11.6: it ends
        await step(shard, link, action_item("shard-0.gone", player, rules.Abandon(seat),
                                            f"bye-{player}"))
    assert gone.finished
    shard.sweep(0.0)  # (no scoring here: its result counts as stored) its journal closes
    await shard.durable()
    assert shard.sweep(0.0) == 1
    for _ in range(3):  # more writes, each after a checkpoint
        await step(shard, link, act("bob", rules.Draw(rules.Seat.P2), "b"))
    await shard.close()
    store2 = await open_journal(url, "shard-0")
    frames = await store2.load()
    assert frames[0].checkpoint and len(frames) <= 3
    again = Shard("shard-0", 10, lambda: 10**9)
    done = await recover(again, store2)
    assert list(again.tables) == [TABLE] and done.tables == 1
    assert again.tables[TABLE].events[:kept.seq] == kept.events
    await again.close()
