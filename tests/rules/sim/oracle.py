"""A brute-force oracle for the judgement of a calata (M5.4): the definition, searched naively;
and the engine's side of the comparisons (`engine_judgement`, `cut_replay_mismatches`).

It knows nothing of how `rules.judge` and `rules.trial` find their answer. For every meld the
calata touched (and every meld it emptied), with the other calate's work related to it:
- ops of calate still open are on trial (M5.4.3); of those, the ops the calata's own ops stand
  on are always kept; every subset of the others is tried, smallest first and, among subsets
  of one size, in order of arrival (`itertools.combinations` over the ops in arrival order):
  the first that makes the meld regular counts and is needed (M5.4.4); none: irregular;
- each op of a confirmed calata is needed if the meld is irregular without it (M5.5.2).
"The meld without some ops" is the whole table replayed from the consolidated board without
them and without everything that stood on them (`board.replay`, `deps.closure`), never a cut
of it; the meld there is judged where its cards are (those last moved by the same op as on the
table), under its own id, and in every piece of its lineage the own ops touched.

Exponential in the trial ops on a meld: for small positions only (`MAX_TRIAL_OPS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

from machiavelox.rules import Table, is_regular
from machiavelox.rules import judge as judge_module
from machiavelox.rules.board import Board, Op, replay
from machiavelox.rules.cards import Card
from machiavelox.rules.deps import closure, dependents
from machiavelox.rules.state import Calata, CalataStatus

MAX_TRIAL_OPS = 12  # beyond this the oracle would take too long: the caller skips the case


def order_key(work: Iterable[int]) -> tuple[int, tuple[int, ...]]:
    """The order in which this oracle tries subsets (`combinations` over the ops in arrival
    order): smallest first; among equal sizes, the work that came first (the earliest op in
    which two sets differ belongs to the one that goes first). The engine's search keeps it
    too (`trial._first`)."""
    ordered = tuple(sorted(work))
    return len(ordered), ordered


class TooBig(Exception):
    """More trial ops on one meld than the oracle is willing to try all subsets of."""


def oracle_judgement(table: Table, cal: Calata) -> tuple[frozenset[int], frozenset[int],
                                                         dict[int, frozenset[int]]]:
    """(irregular melds, own ops that fall, own op -> the other calate's ops it needed) for
    the calata on the live table, by brute force. Raises TooBig."""
    board = table.board
    live = table.live_ops()
    own = [op for op in live if op.calata == cal.id]
    if not own:
        return frozenset(), frozenset(), {}
    own_seqs = {op.seq for op in own}
    current = board.melds_touched(own)
    gone_by_op = {op.seq: {board.resolve(m) for m in op.touched
                           if board.resolve(m) not in board.melds} for op in own}
    gone = set().union(*gone_by_op.values())
    foreign = [op for op in live if op.calata != cal.id
               and table.calate[op.calata].status is not CalataStatus.CONSOLIDATED]
    rev = dependents(table, live, ignore_needs_of=own_seqs)
    sources = _card_sources(own, live)
    irregular: set[int] = set()
    needs_by_meld: dict[int, frozenset[int]] = {}
    for mid in (*current, *gone):
        cards = board.melds.get(mid)
        root = board.lineage(mid)[-1]
        related = [f for f in foreign if mid in board.melds_touched((f,))
                   or root in {board.lineage(x)[-1] for x in f.touched}]
        if not related:
            if cards is not None and not is_regular(cards):
                irregular.add(mid)
            continue
        needed = _search(table, live, rev, own_seqs, sources, related, mid, cards)
        if needed is None:
            irregular.add(mid)
        elif needed:
            needs_by_meld[mid] = needed
    fail: set[int] = set()
    needs: dict[int, frozenset[int]] = {}
    for op in own:
        hit = (board.melds_touched((op,)) & current) | gone_by_op[op.seq]
        if hit & irregular:
            fail.add(op.seq)
        op_needs = frozenset().union(*(needs_by_meld.get(m, frozenset()) for m in hit))
        if op_needs:
            needs[op.seq] = op_needs
    return frozenset(irregular), frozenset(fail), needs


def _search(table: Table, live: list[Op], rev: dict[int, list[int]], own: set[int],
            sources: set[int], related: list[Op], mid: int,
            cards: list[Card] | None) -> frozenset[int] | None:
    status = table.calate
    trial = [f for f in related if status[f.calata].status is CalataStatus.OPEN]
    settled = [f for f in related if status[f.calata].status is not CalataStatus.OPEN]
    optional = [f for f in trial if f.seq not in sources]
    if len(optional) > MAX_TRIAL_OPS:
        raise TooBig(len(optional))
    for k in range(len(optional) + 1):
        for chosen in combinations(optional, k):
            keep = {f.seq for f in chosen}
            out = {f.seq for f in optional} - keep
            if _regular_without(table, live, rev, own, out, mid, cards) is not True:
                continue
            needed = set(keep)
            for f in settled:
                if _regular_without(table, live, rev, own, out | {f.seq}, mid,
                                    cards) is not True:
                    needed.add(f.seq)
            return frozenset(needed)
    return None


def _regular_without(table: Table, live: list[Op], rev: dict[int, list[int]], own: set[int],
                     out: set[int], mid: int, cards: list[Card] | None) -> bool | None:
    closed = closure(rev, out)
    if closed & own:
        return None
    touched: dict[int, tuple[int, ...]] = {}
    board, stuck = replay(table.base, (op for op in live if op.seq not in closed), touched)
    if any(op.seq in own for op in stuck):
        return None
    last = table.board.last_op
    homes = {board.where[c] for c in cards or ()
             if c in board.where and board.last_op.get(c) == last.get(c)}
    target = board.resolve(mid)
    if target in board.melds:
        homes.add(target)
    root = _root(board, target)
    own_ids = {m for seq in own for m in touched.get(seq, ())}
    homes.update(m for m in own_ids if m in board.melds and _root(board, m) == root)
    return all(is_regular(board.melds[h]) for h in homes)


def _root(board: Board, meld_id: int) -> int:
    return board.lineage(meld_id)[-1]


def _card_sources(own: list[Op], live: list[Op]) -> set[int]:
    """The other calate's ops whose cards the own ops moved, transitively (M5.5.1)."""
    by_seq = {op.seq: op for op in live}
    own_seqs = {op.seq for op in own}
    out: set[int] = set()
    stack = [p for op in own for p in op.prev if p is not None]
    while stack:
        seq = stack.pop()
        if seq in out or seq in own_seqs or seq not in by_seq:
            continue
        out.add(seq)
        stack.extend(p for p in by_seq[seq].prev if p is not None)
    return out


# --------------------------------------------------------------------------- the engine's side
def engine_judgement(table: Table, cal: Calata) -> tuple[frozenset[int], frozenset[int],
                                                         dict[int, frozenset[int]]]:
    """The engine's verdict on the calata (`rules.judge.judge`), in the oracle's terms."""
    verdict = judge_module.judge(table, cal)
    return verdict.irregular, verdict.fail_ops, verdict.needs


def cut_replay_mismatches(table: Table, left_out: Iterable[int]) -> list[int]:
    """board.py "Cut boards": the lineage roots whose replay on a board cut to that lineage
    (only the live ops that name it, `judge._Context.replay_root`) differs from the lineage's
    melds (ids and cards) in the replay of the whole table, with the ops `left_out` and
    everything that stands on them left out."""
    live = table.live_ops()
    out = closure(dependents(table, live), left_out)
    whole, stuck = replay(table.base, [op for op in live if op.seq not in out])
    assert not stuck, "a set closed under dependencies always replays"
    ctx = judge_module._Context(table, table.board, [], live)
    wrong: list[int] = []
    for root in sorted({ctx.root(m) for m in (*whole.melds, *table.base.melds)}):
        made = ctx.replay_root(root, frozenset(out))
        assert made is not None
        cut, _ = made
        want = {m: sorted(cs) for m, cs in whole.melds.items() if ctx.root(m) == root}
        got = {m: sorted(cs) for m, cs in cut.melds.items()}
        if got != want:
            wrong.append(root)
    return wrong
