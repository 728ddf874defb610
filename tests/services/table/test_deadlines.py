"""The shard's timer heap (table/deadlines.py): one live entry per table, earliest wins, and
only due tables come out."""

from __future__ import annotations

import asyncio

from machiavelox.table.deadlines import Deadlines


def test_only_due_tables_come_out_in_order() -> None:
    d = Deadlines(lambda: 0)
    d.arm("a", 300)
    d.arm("b", 100)
    d.arm("c", None)  # no deadline: nothing armed
    assert d.pop_due(99) == []
    assert d.pop_due(100) == ["b"]
    assert d.pop_due(1000) == ["a"]
    assert d.pop_due(10**9) == []


def test_an_earlier_deadline_supersedes_and_a_later_one_waits() -> None:
    d = Deadlines(lambda: 0)
    d.arm("a", 500)
    d.arm("a", 200)  # earlier: supersedes
    d.arm("a", 900)  # later than the armed one: the armed one stands
    assert d.pop_due(1000) == ["a"]  # once, though the heap held two entries
    assert len(d) == 0


def test_the_heap_does_not_grow_with_actions() -> None:
    d = Deadlines(lambda: 0)
    for _ in range(10_000):  # every action re-arms the same deadline
        d.arm("a", 500)
    assert len(d) == 1


async def test_run_tells_each_due_table_with_the_time() -> None:
    now = [0]
    d = Deadlines(lambda: now[0])
    told: list[tuple[str, int]] = []
    d.arm("a", 5)
    now[0] = 10
    runner = asyncio.create_task(d.run(lambda table, at: told.append((table, at))))
    for _ in range(100):  # bounded
        if told:
            break
        await asyncio.sleep(0.01)
    runner.cancel()
    assert told == [("a", 10)]
