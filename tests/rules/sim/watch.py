"""Checks across a whole smazzata, after every step of a simulation: the cheap invariants of
`invariants.py`, M5.5.8 (consolidated is definitive, and consolidations never wait on each
other in a circle), and the cheap state summary compared around every refused action.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from machiavelox.rules import Action, Card, Table

from .engine import CalataStatus
from .invariants import (
    check_cards_in_one_place,
    check_live_board_is_replay,
    check_untouched_melds_regular,
)


@dataclass
class Driver:
    """How steps reach the engine: a lone table, or the current table of a match."""

    apply: Callable[[Action, int], object]
    advance: Callable[[int], object]


def table_driver(t: Table) -> Driver:
    return Driver(t.apply, t.advance)


@dataclass
class Watch:
    """What must hold across a whole smazzata (M5.5.8: consolidated is definitive)."""

    op_cards: dict[int, tuple[Card, ...]] = field(default_factory=dict)  # every op seen live
    consolidated: dict[int, tuple[tuple[int, ...], tuple[Card, ...]]] = field(
        default_factory=dict)  # calata id -> (its op seqs, their cards) when it consolidated


def check_consolidated(table: Table, watch: Watch) -> None:
    """M5.5.8: a consolidated calata is never reached by a chain nor by an ANNULLA: it stays
    CONSOLIDATED, keeps all its ops, and its cards stay on the table (later ops may move them
    from meld to meld, never off the table: M3.6)."""
    for seq in table.live:
        if seq not in watch.op_cards:
            watch.op_cards[seq] = table.ops[seq].cards
    for cid, cal in table.calate.items():
        if cal.status is CalataStatus.CONSOLIDATED and cid not in watch.consolidated:
            missing = [s for s in cal.ops if s not in watch.op_cards]
            assert not missing, f"ops {missing} of calata {cid} were never seen live"
            cards = tuple(c for s in cal.ops for c in watch.op_cards[s])
            watch.consolidated[cid] = (tuple(cal.ops), cards)
    for cid, (ops, cards) in watch.consolidated.items():
        cal = table.calate[cid]
        assert cal.status is CalataStatus.CONSOLIDATED, (
            f"M5.5.8: consolidated calata {cid} of {cal.player} became {cal.status.value}")
        assert tuple(cal.ops) == ops, f"M5.5.8: consolidated calata {cid} lost ops"
        off = [str(c) for c in cards if c not in table.board.where]
        assert not off, f"M5.5.8: cards {off} of consolidated calata {cid} left the table"


def waiting_circle(table: Table, horizon: int) -> list[int] | None:
    """A circle of confirmed calate, all due to consolidate by `horizon`, each waiting for the
    next one's consolidation (an op of one needs or moved a card of an op of the next)."""
    due = {cid: cal for cid, cal in table.calate.items()
           if cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms is not None
           and cal.consolidate_ms <= horizon}
    if len(due) < 2:
        return None
    waits: dict[int, list[int]] = {}
    for cid, cal in due.items():
        for seq in cal.ops:
            op = table.ops[seq]
            for dep in (*op.needs, *(p for p in op.prev if p is not None)):
                dop = table.ops.get(dep)
                if dop is not None and dop.calata != cid and dop.calata in due:
                    waits.setdefault(cid, []).append(dop.calata)
    done: set[int] = set()
    for start in sorted(waits):
        path = [start]
        todo = [iter(waits.get(start, []))]
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                done.add(path.pop())
                todo.pop()
            elif nxt in path:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in done:
                path.append(nxt)
                todo.append(iter(waits.get(nxt, [])))
    return None


def check_no_consolidation_livelock(table: Table) -> None:
    """M5.5.8: a confirmed calata becomes definitive once nothing it depends on can still fall;
    consolidations must not wait on each other in a circle. Confirmed calate whose time has come
    (their consolidation postponed to the next millisecond) and that wait for each other would
    never consolidate, and their timers would fire every millisecond for ever."""
    circle = waiting_circle(table, table.now_ms)  # due by now, yet still waiting
    assert circle is None, (
        f"M5.5.8: confirmed calate {circle} wait for each other's consolidation at "
        f"{table.now_ms} ms: they never consolidate and their timers fire every ms")


def check_step(table: Table, watch: Watch) -> None:
    """Everything checked after every step of a simulation."""
    check_cards_in_one_place(table)
    check_untouched_melds_regular(table)
    check_live_board_is_replay(table)
    check_consolidated(table, watch)
    check_no_consolidation_livelock(table)


def advance_to(table: Table, driver: Driver, watch: Watch | None, at: int) -> None:
    """Let time pass to `at`. When confirmed calate that wait for each other come due on the
    way, stop just after they do and check them first (the check above), so that an engine
    that spins on them fails at once instead of firing a timer per millisecond to `at`."""
    circle = waiting_circle(table, at)
    if circle is not None:
        due = max(c.consolidate_ms or 0 for c in map(table.calate.__getitem__, circle))
        if table.now_ms <= due < at:
            driver.advance(due + 1)
            check_no_consolidation_livelock(table)
            if watch is not None:
                check_step(table, watch)
    driver.advance(at)


def fingerprint(t: Table) -> tuple[object, ...]:
    """A cheap summary of the table's state, taken before every action: a refused action must
    leave it unchanged. (The full `invariants.snapshot` is compared on a sample of actions; it
    costs too much to take at every step of thousands of smazzate.)"""
    return (
        t.now_ms, t.phase, len(t.log), len(t.events), t.inactivity_ms, t.inactivity_left_ms,
        t.stopper, t.stop_deadline_ms, t.frozen, t.tiebreak_players, t.tiebreak_ms,
        frozenset(t.common), tuple(t.reserved.items()), t.result, tuple(t.live),
        len(t.parents),
        tuple((tuple(p.tallone), frozenset(p.hand), frozenset(p.pozzetto), p.status, p.drawn,
               frozenset(p.direct_meld_calate), p.calata,
               None if p.hold is None else (p.hold.card, p.hold.deadline_ms), p.silent,
               p.last_sign_ms, p.absence_since_ms, p.said_stop, p.pending_draws)
              for p in t.players),
        tuple((mid, tuple(cs)) for mid, cs in t.board.melds.items()),
        tuple((c.id, c.status, tuple(c.ops), c.deadline_ms, c.consolidate_ms, c.fail_ops,
               c.is_stop, c.suspended_left_ms, c.consolidate_left_ms, tuple(c.needs.items()),
               c.touched_now) for c in t.calate.values()),
        tuple((k, tuple(v.visits.items()), frozenset(v.movers)) for k, v in t.episodes.items()),
    )
