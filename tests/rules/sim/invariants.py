"""Invariants of the rules engine, shared by the property tests and the seeded simulations.

Each check raises AssertionError with a message naming the rule it protects. `check_all` runs
every check that holds at any moment of a game; `assert_refusal_changed_nothing` is the check
around a refused action; `check_settles` is a liveness check (M5.5.8) run on a copy.

A `Snapshot` compares everything observable plus every attribute of the table, generically, so
that new engine state is covered without changing the tests. A pure cache added to `Table`
(one that may legitimately differ between a table and its replay) belongs in `_SEPARATE`.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections import Counter
from collections.abc import Iterator
from typing import Any

from machiavelox.rules import (
    ALL_CARDS,
    SEATS,
    Card,
    Event,
    Seat,
    Table,
    is_regular,
    timers,  # internal: its cache is checked (check_timer_cache)
    view_for,
)
from machiavelox.rules.board import replay
from machiavelox.rules.state import CALATA_MS, CONSOLIDATION_MS, CalataStatus, Phase


def _cards(cs: Any) -> tuple[Card, ...]:
    return tuple(sorted(cs))


_FIELDS: dict[type, tuple[str, ...]] = {}
_ATOMS = (Card, str, int, float, bool, type(None))


def _field_names(t: type) -> tuple[str, ...] | None:
    names = _FIELDS.get(t)
    if names is None and dataclasses.is_dataclass(t):
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    return names


def _sorted_any(items: list[Any]) -> list[Any]:
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


def normalized(value: object) -> object:
    """A comparable, order-independent rendering of engine state: sets sorted, dataclasses as
    (type, fields), so that every field is compared, including ones added later."""
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset)):
        return ("set", *_sorted_any([normalized(v) for v in value]))
    if isinstance(value, (list, tuple)):
        return tuple(normalized(v) for v in value)
    if isinstance(value, dict):
        return ("dict", *_sorted_any([(normalized(k), normalized(v))
                                      for k, v in value.items()]))
    names = _field_names(type(value))
    if names is not None:
        return (type(value).__name__, *(normalized(getattr(value, n)) for n in names))
    raise AssertionError(f"cannot compare engine state of type {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """Everything a player could observe of a table (hands, pozzetti, talloni in order, melds,
    holds, calate, phase, time), plus the rest of the engine's state: every attribute of the
    table, normalized. Comparable with ``==``."""

    now_ms: int
    phase: object
    hands: tuple[tuple[Card, ...], ...]
    pozzetti: tuple[tuple[Card, ...], ...]
    talloni: tuple[tuple[Card, ...], ...]
    holds: tuple[object, ...]
    melds: tuple[tuple[int, tuple[Card, ...]], ...]
    open_calate: tuple[object, ...]
    players: tuple[object, ...]
    calate: tuple[object, ...]
    rest: tuple[tuple[str, object], ...]  # every other attribute of the table
    log_len: int
    events: tuple[Event, ...]


_SEPARATE = {"deal", "log", "events", "players", "calate", "board", "phase", "now_ms", "ops",
             "fired", "timer_cache"}  # bookkeeping of the timers' cache: see check_timer_cache


def snapshot(table: Table) -> Snapshot:
    ps = table.players
    return Snapshot(
        now_ms=table.now_ms,
        phase=normalized(table.phase),
        hands=tuple(_cards(p.hand) for p in ps),
        pozzetti=tuple(_cards(p.pozzetto) for p in ps),
        talloni=tuple(tuple(p.tallone) for p in ps),  # in order: the order is state too
        holds=tuple(normalized(p.hold) for p in ps),
        melds=tuple(sorted((mid, _cards(cs)) for mid, cs in table.board.melds.items())),
        open_calate=tuple(normalized(c) for s in SEATS
                          if (c := table.open_calata(s)) is not None),
        players=tuple(normalized(p) for p in ps),
        calate=tuple(normalized(c) for _, c in sorted(table.calate.items())),
        rest=(("board", normalized(table.board)), ("ops", normalized(table.ops)),
              *sorted((k, normalized(v)) for k, v in vars(table).items()
                      if k not in _SEPARATE)),
        log_len=len(table.log),
        events=tuple(table.events),
    )


def assert_refusal_changed_nothing(before: Snapshot, table: Table, what: object) -> None:
    """errors.py: a refused action leaves the state exactly unchanged."""
    after = snapshot(table)
    if after != before:
        diff = [f.name for f in dataclasses.fields(Snapshot)
                if getattr(before, f.name) != getattr(after, f.name)]
        raise AssertionError(f"refused {what} changed the table: {diff}")


# --------------------------------------------------------------------------- the checks
def check_cards_in_one_place(table: Table) -> None:
    """M1.1 (and M1.2-M1.3, M4): each of the 104 physical cards is in exactly one place:
    removed, out of play (explicit deals), a tallone, a hand, a pozzetto, the tiebreak's common
    pozzetto (M10.2) or one table meld;
    `board.where` indexes `board.melds` exactly; a held card is a table card (M6.1)."""
    places: Counter[Card] = Counter()
    dealt = table.deal.all_dealt()
    places.update(c for c in ALL_CARDS if c not in dealt)
    places.update(table.removed)
    for p in table.players:
        places.update(p.tallone)
        places.update(p.hand)
        places.update(p.pozzetto)
        assert not (p.hand & p.pozzetto), f"M4.3: {p.seat} has cards in hand and pozzetto"
    places.update(table.common)  # M10.2: the tiebreak's common pozzetto
    board = table.board
    where: dict[Card, int] = {}
    for mid, cs in board.melds.items():
        assert cs, f"M3.5: meld {mid} is empty but listed"
        for c in cs:
            places[c] += 1
            where[c] = mid
    wrong = {c: n for c, n in places.items() if n != 1}
    missing = [c for c in ALL_CARDS if c not in places]
    assert not wrong and not missing, f"M1.1: misplaced cards {wrong}, missing {missing}"
    assert len(places) == len(ALL_CARDS) == 104
    assert where == board.where, "board.where disagrees with board.melds"
    for p in table.players:
        if p.hold is not None:
            assert p.hold.card in board.where, f"M6.1: {p.seat} holds {p.hold.card}, off table"


def open_touch(table: Table, mid: int) -> bool:
    """Is meld `mid` touched by an open calata (M5.4.3: work on trial)? Touched: a live op of an
    open calata touched one of the meld's lineage ids, or brought one of its cards."""
    board = table.board
    lineage = set(board.lineage(mid))
    cards = set(board.melds[mid])
    for op in table.live_ops():
        if table.calate[op.calata].status is not CalataStatus.OPEN:
            continue
        if lineage.intersection(op.touched) or cards.intersection(op.cards):
            return True
    return False


def check_untouched_melds_regular(table: Table) -> None:
    """M3, M5.4, M5.5.4: the table is in order wherever no open calata is working: every meld
    not touched by an open calata is regular (confirmed and consolidated work is judged and,
    when irregular, undone with everything depending on it)."""
    for mid, cs in table.board.melds.items():
        if not is_regular(cs) and not open_touch(table, mid):
            raise AssertionError(
                f"M5.4/M5.5.4: meld {mid} {[str(c) for c in cs]} is irregular and no open "
                f"calata touches it")


def check_live_board_is_replay(table: Table) -> None:
    """board.py: the table is always replay(consolidated base, live ops)."""
    board, stuck = replay(table.base, table.live_ops())
    assert not stuck, f"live ops that cannot replay: {[op.seq for op in stuck]}"
    got = sorted(_cards(cs) for cs in board.melds.values())
    want = sorted(_cards(cs) for cs in table.board.melds.values())
    assert got == want, "the live board differs from the replay of the live ops"


def check_replay(table: Table) -> None:
    """Determinism: (deal, action log) rebuilds the same table, events included
    (rules/__init__: replayable; docs/rules-engine.md: `Table.replay`)."""
    again = Table.replay(table.deal, table.log, now_ms=table.now_ms, start_ms=table.start_ms)
    assert [str(e) for e in again.events] == [str(e) for e in table.events], (
        "replay: the events differ")
    a, b = snapshot(table), snapshot(again)
    if a != b:
        diff = [f.name for f in dataclasses.fields(Snapshot)
                if getattr(a, f.name) != getattr(b, f.name)]
        raise AssertionError(f"replay of the log differs in {diff}")


def _reachable_cards(obj: object) -> Iterator[Card]:
    """Every Card object reachable from a view (dataclasses, containers)."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, Card):
            yield x
        elif isinstance(x, (enum.Enum, *_ATOMS)):
            continue
        elif isinstance(x, (tuple, list, set, frozenset)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif (names := _field_names(type(x))) is not None:
            stack.extend(getattr(x, n) for n in names)
        else:
            raise AssertionError(f"unexpected object in a view: {type(x).__name__}")


def check_views(table: Table) -> None:
    """P5, M4.3, M5.3.8: a view shows no opponent's hand card and no tallone card; the
    viewer's own hand is exactly theirs; pozzetti, table and removed cards are public (P1)."""
    secret_tallone = {c for p in table.players for c in p.tallone}
    viewers: list[Seat | None] = [*SEATS, None]
    for viewer in viewers:
        view = view_for(table, viewer)
        hidden = set(secret_tallone)
        for p in table.players:
            if p.seat != viewer:
                hidden |= p.hand
        leaked = [c for c in _reachable_cards(view) if c in hidden]
        assert not leaked, f"P5: the view of {viewer} shows hidden cards {leaked}"
        own = table.players[viewer].hand if viewer is not None else set()
        assert set(view.hand) == own and len(view.hand) == len(own)


def check_settles(table: Table) -> None:
    """M5.0.1, M5.5.8: when nobody acts any more, every open calata concludes within 40 s and
    every concluded one becomes definitive (consolidated) once the chain can no longer reach
    it: nothing stays provisional for ever. Checked on a copy, left alone for 81 s."""
    if table.phase is not Phase.PLAYING:
        return
    t = copy.deepcopy(table)
    t.advance(t.now_ms + CALATA_MS + CONSOLIDATION_MS + 1_000)
    if t.phase is not Phase.PLAYING:
        return  # an ending (M7.3, M10) came first
    pending = {c.id: c.status.value for c in t.calate.values()
               if c.status in (CalataStatus.OPEN, CalataStatus.CONFIRMED)}
    assert not pending, f"M5.5.8: calate still not definitive 81 s after the last action: {pending}"


def check_timer_cache(table: Table) -> None:
    """timers.all_timers caches per (log length, timers fired): the cache must be the timers
    computed afresh from the state (no state change escapes the key)."""
    fresh = timers._compute(table)
    assert timers.all_timers(table) == fresh, "stale timer cache"
    assert timers.next_deadline(table) == (min(t.at_ms for t in fresh) if fresh else None)


def check_touched_cache(table: Table) -> None:
    """Board.melds_touched with a cache of ids (judge.py shares one over a judgement's calls)
    gives, for every live op, what it gives afresh: the cache changes no answer."""
    reach: dict[int, frozenset[int]] = {}
    ops = table.live_ops()
    for op in ops:
        assert table.board.melds_touched((op,), reach) == table.board.melds_touched((op,)), \
            f"cached melds_touched differs for op {op.seq}"
    assert table.board.melds_touched(ops, reach) == table.board.melds_touched(ops)


def check_all(table: Table, *, replay_log: bool = True) -> None:
    check_timer_cache(table)
    check_touched_cache(table)
    check_cards_in_one_place(table)
    check_untouched_melds_regular(table)
    check_live_board_is_replay(table)
    check_views(table)
    if replay_log:
        check_replay(table)
