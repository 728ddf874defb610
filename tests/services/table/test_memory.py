"""Memory that does not grow with uptime: a table that has ended, whose results are stored and
whose resume grace has passed leaves the shard, and its whole object graph is freed by
reference counting alone, with the cycle collector off.

That matters because a shard freezes what survives a young collection (table/main.py,
`tune_gc`): an object in a reference cycle is never collected there, so a table tied into a
cycle (say by a refusal's traceback, whose frames hold the table) would stay in memory
forever. The real Shard in process, journaling to a real SQLite store; would fail if ended
tables were kept (`Shard.sweep`) or if any of them were part of a cycle.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from machiavelox import rules
from machiavelox.table.host import TableHost
from machiavelox.table.journal_store import open_journal
from machiavelox.table.recovery import recover
from machiavelox.table.shard import Shard
from tests.support.shard_items import play_to_end, recording_link, ticking_clock

PLAYERS = ["ann", "bob", "cy"]


@pytest.fixture
def no_cycle_collector() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.usefixtures("no_cycle_collector")
async def test_ended_tables_leave_memory_and_are_freed(tmp_path: Path) -> None:
    shard = Shard("shard-0", 100, ticking_clock(), resume_grace_s=10)
    await recover(shard, await open_journal(f"sqlite:///{tmp_path / 'j.sqlite3'}", "shard-0"))
    link, sent = recording_link(shard)
    hosts: list[weakref.ref[TableHost]] = []
    for n in range(20):
        table_id = f"shard-0.t{n}"
        hosts.append(weakref.ref(shard.create_table(table_id, PLAYERS,
                                                    rules.MatchKind.SINGLE, True)))
        await shard.durable()
        await play_to_end(shard, link, table_id, PLAYERS)
    assert all(h() is not None and h().finished for h in hosts)  # type: ignore[union-attr]
    assert shard.sweep(0.0) == 0  # ended and reported: the resume grace starts
    assert shard.sweep(5.0) == 0 and len(shard.tables) == 20  # within it: kept
    shard.sweep(10.0)  # past it: each table's journal is closed ...
    await shard.durable()
    assert shard.sweep(10.0) == 20  # ... and once that is stored, it leaves
    assert not shard.tables and len(shard.retention.final) == 20  # (for late resumes)
    sent.clear()
    assert [h for h in hosts if h() is not None] == [], "freed by reference counting alone"
    await shard.close()
