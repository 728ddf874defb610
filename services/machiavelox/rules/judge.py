"""Judgement of one calata (M5.4): are the melds it touched regular, and what did it need?

The melds judged are those the calata's ops touched (took from, added to, created: M5.4,
M5.4.1), in the state its ops produced (M5.4.2). Other calate's work on those melds counts as
follows:
- ops of a calata that is still open are "on trial" (M5.4.3): they are left out, neither against
  nor for, unless the meld is irregular without them and regular with some of them: then the
  least such work counts (the fewest ops; among as many, the earliest: where two trial cards
  could serve, the first on the table), and the calata *needs* it (M5.4.4). It is found
  exactly, with no limit on the trial work looked at (`trial.py`);
- ops of a confirmed, not yet consolidated calata count like the table they are, and the calata
  needs each one without which its meld would be irregular (M5.5.2: "what happens to the meld if
  that card disappears");
- consolidated work is simply the table.
A card of another calata that an own op moved is always needed (M5.5.1). A meld the calata
emptied is gone, so in order, unless it is gone only thanks to other calate's work on it or on
the melds it was split from: then that work is needed too.
Leaving ops out is done by replaying the others from the consolidated board, one lineage at a
time (the meld and the pieces split off it: a cut board, board.py). Answers are remembered on
the consolidated board by everything they depend on (`_Context.signature`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import trial
from .board import Board, Op, OpKind
from .cards import Card
from .deps import closure, dependents
from .melds import is_regular
from .state import Calata, CalataStatus

if TYPE_CHECKING:
    from .tablestate import TableState


class Verdict(enum.Enum):
    """A meld judged without some ops (`_Context.regular_without`)."""

    REGULAR = "regular"
    IRREGULAR = "irregular"
    CANNOT_STAND = "cannot-stand"  # an own op could not stand without them: not a way


@dataclass(frozen=True)
class Judgement:
    irregular: frozenset[int]  # current ids of touched melds left irregular
    fail_ops: frozenset[int]  # own ops that touched them: what falls (M5.4.5)
    needs: dict[int, frozenset[int]]  # own op seq -> other calate's ops it needed
    touched: frozenset[int]  # current ids of every touched meld (the calata's zone, M6.6)

    @property
    def in_order(self) -> bool:
        return not self.irregular


EMPTY = Judgement(frozenset(), frozenset(), {}, frozenset())


def judge(table: TableState, cal: Calata, board: Board | None = None,
          live: Sequence[Op] | None = None) -> Judgement:
    """Judge `cal` on `board` (default: the live table) whose live ops are `live`."""
    if board is None:
        board = table.board
    if live is None:
        live = table.live_ops()
    own = [op for op in live if op.calata == cal.id]
    if not own:
        return EMPTY
    reach: dict[int, frozenset[int]] = {}  # Board.melds_touched, by id, on this board
    roots: dict[int, int] = {}
    current = board.melds_touched(own, reach)
    gone_by_op = {op.seq: _gone(board, op) for op in own}
    gone = set().union(*gone_by_op.values())
    foreign = [op for op in live if op.calata != cal.id
               and table.calate[op.calata].status is not CalataStatus.CONSOLIDATED]
    # Other calate's work on a meld: ops that touched it, or any piece of it. Pieces of one
    # meld (a meld and the halves split off it, theirs too) share the root of their lineage;
    # work on one piece may reach another when a split is left out or undone.
    by_meld: dict[int, list[Op]] = {}
    by_root: dict[int, list[Op]] = {}
    for f in foreign:
        for x in board.melds_touched((f,), reach):
            by_meld.setdefault(x, []).append(f)
        for r in {_root(board, x, roots) for x in f.touched}:
            by_root.setdefault(r, []).append(f)
    irregular: set[int] = set()
    needs_by_meld: dict[int, frozenset[int]] = {}
    searched: list[tuple[int, list[Card] | None, list[Op]]] = []
    # Melds on the table, then melds the calata emptied (it took away their last cards): gone
    # is in order, but it may be gone only thanks to other calate's work (a half left by
    # another player's interior removal, emptied, joins its other side again if that removal
    # falls, and is then without the cards taken from it: M5.4.4, M5.5.2).
    for mid in (*current, *gone):
        cards = board.melds.get(mid)  # None: gone
        root = _root(board, mid, roots)
        related = list({f.seq: f for f in (*by_meld.get(mid, ()), *by_root.get(root, ()))
                        }.values())
        if related:
            searched.append((mid, cards, related))
        elif cards is not None and not is_regular(cards):
            irregular.add(mid)
    if searched:
        found = _Context(table, board, own, live).search(searched)
        for mid, needed in found.items():
            if needed is None:
                irregular.add(mid)
            elif needed:
                needs_by_meld[mid] = needed
    fail: set[int] = set()
    needs: dict[int, frozenset[int]] = {}
    for op in own:
        hit = (board.melds_touched((op,), reach) & current) | gone_by_op[op.seq]
        if hit & irregular:
            fail.add(op.seq)
        op_needs = frozenset().union(*(needs_by_meld.get(m, frozenset()) for m in hit))
        if op_needs:
            needs[op.seq] = op_needs
    return Judgement(frozenset(irregular), frozenset(fail), needs, frozenset(current))


@dataclass
class _Meld:
    """A meld being searched: its trial work that may be left out (`free`), always kept
    (`must`: the own ops stand on it), the settled work on it, and the answer so far."""

    id: int
    cards: list[Card] | None
    free: frozenset[int]
    must: frozenset[int]
    settled: frozenset[int]
    key: object = None
    chosen: frozenset[int] | None = None


class _Context:
    """What one judgement shares across its melds: the reverse dependency graph, the ops that
    work on each lineage, and the replays already made (by lineage and the ops left out)."""

    def __init__(self, table: TableState, board: Board, own: list[Op], live: Sequence[Op]) -> None:
        self.table = table
        self.base = table.base
        self.last_op = board.last_op  # who last moved each card on the board judged
        self.live = live
        self.own_seqs = {op.seq for op in own}
        self.required = _card_sources(own, live)
        self.rev = dependents(table, live, ignore_needs_of=self.own_seqs)
        self.roots: dict[int, int] = {}
        self.on_root: dict[int, list[tuple[Op, bool, bool]]] | None = None
        self.base_on_root: dict[int, list[int]] | None = None
        # replays made, by lineage root and the ops on it left out: the cut board and the meld
        # ids the own ops touched there (None: an own op could not stand)
        self.boards: dict[tuple[int, frozenset[int]], tuple[Board, set[int]] | None] = {}
        self._own_anc: set[int] | None = None
        self._fwd: dict[int, list[int]] | None = None
        self._leaves: dict[int, set[int]] = {}  # never changed once made: shared
        self.bundles = {op.seq: op.bundle for op in live if op.bundle is not None}
        self._lineage_sig: dict[int, tuple[tuple[tuple[int, bool, bool], ...], frozenset[int],
                                           frozenset[int]]] = {}
        self._leave_cache: dict[tuple[int, int], tuple[frozenset[int], frozenset[int],
                                                       bool]] = {}

    def root(self, meld_id: int) -> int:
        r = self.roots.get(meld_id)
        if r is None:
            r = self.roots[meld_id] = _root(self.base, meld_id)
        return r

    def ops_on(self, root: int) -> list[tuple[Op, bool, bool]]:
        """The live ops that change lineage `root`, in order, with the sides of each that are
        on it (take: its card leaves a meld of the lineage; put: it arrives in one)."""
        if self.on_root is None:
            self.on_root = {}
            for op in self.live:
                src = self.root(op.src_meld) if op.kind is OpKind.MOVE and \
                    op.src_meld is not None else None
                dst = self.root(op.dst)
                if src is not None and src != dst:
                    self.on_root.setdefault(src, []).append((op, True, False))
                    self.on_root.setdefault(dst, []).append((op, False, True))
                else:
                    self.on_root.setdefault(dst, []).append((op, src is not None, True))
        return self.on_root.get(root, [])

    def base_melds(self, root: int) -> list[int]:
        if self.base_on_root is None:
            self.base_on_root = {}
            for mid in self.base.melds:
                self.base_on_root.setdefault(self.root(mid), []).append(mid)
        return self.base_on_root.get(root, [])

    def replay_root(self, root: int, closed: frozenset[int]) -> tuple[Board, set[int]] | None:
        """Lineage `root` replayed from the consolidated board without the ops in `closed`
        (a cut board: board.py, "Cut boards"), and the ids the own ops touched there; None if
        an own op could not stand."""
        ops = self.ops_on(root)
        key = (root, frozenset(op.seq for op, _, _ in ops if op.seq in closed))
        if key in self.boards:
            return self.boards[key]
        board = self.base.cut(self.base_melds(root))
        own_ids: set[int] = set()
        made: tuple[Board, set[int]] | None = (board, own_ids)
        for op, take, put in ops:
            if op.seq in closed:
                continue
            if (take or op.kind is not OpKind.MOVE) and not board.can_apply(op):
                if op.seq in self.own_seqs:
                    made = None
                    break
                continue
            ids = board.apply(op, take, put)
            if op.seq in self.own_seqs:
                own_ids.update(ids)
        self.boards[key] = made
        return made

    def search(self, melds: list[tuple[int, list[Card] | None, list[Op]]]
               ) -> dict[int, frozenset[int] | None]:
        """For each meld (its id, its cards on the table or None if gone, the other calate's
        ops related to it): the other calate's ops it needs to be regular (M5.4.4, M5.5.2), or
        None if it cannot be. Melds of one lineage with the same trial work that may be left
        out are searched together (trial.py), and answers already given on this consolidated
        board are reused (`signature`)."""
        status = self.table.calate
        memo = _memo(self.base)
        out: dict[int, frozenset[int] | None] = {}
        todo: dict[tuple[int, frozenset[int]], list[_Meld]] = {}
        for mid, cards, related in melds:
            trial_ops = [f for f in related if status[f.calata].status is CalataStatus.OPEN]
            settled = {f.seq for f in related
                       if status[f.calata].status is not CalataStatus.OPEN}
            optional = {f.seq for f in trial_ops if f.seq not in self.required}
            must = optional & self.own_ancestors()
            m = _Meld(mid, cards, frozenset(optional - must), frozenset(must),
                      frozenset(settled))
            m.key = self.signature(m)
            if m.key in memo:
                out[mid] = memo[m.key]  # type: ignore[assignment]
            elif self.regular_without(set(m.free), mid, cards) is Verdict.REGULAR:
                m.chosen = frozenset()
                out[mid] = memo[m.key] = self.settle(m)
            elif not m.free:
                out[mid] = memo[m.key] = None
            else:
                todo.setdefault((self.root(mid), m.free), []).append(m)
        for (root, free), group in todo.items():
            answers = self.least_work(root, free, group)
            for m, chosen in zip(group, answers, strict=True):
                m.chosen = chosen
                out[m.id] = memo[m.key] = self.settle(m)
        return out

    def settle(self, m: _Meld) -> frozenset[int] | None:
        """The whole answer for a meld once its trial work is chosen: that work, the trial
        work always kept, and the settled work it could not do without (M5.5.2)."""
        if m.chosen is None:
            return None
        excluded = set(m.free - m.chosen)
        needed = set(m.must | m.chosen)
        for f in sorted(m.settled):
            if self.regular_without(excluded | {f}, m.id, m.cards) is not Verdict.REGULAR:
                needed.add(f)
        return frozenset(needed)

    def least_work(self, root: int, free: frozenset[int],
                   group: list[_Meld]) -> list[frozenset[int] | None]:
        """The least trial work of `free` that makes each meld of `group` (all on lineage
        `root`) regular, or None (trial.py)."""
        steps = [trial.Step(op, take, put) for op, take, put in self.ops_on(root)]
        wanted = {st.op.seq for st in steps} | free
        under: dict[int, set[int]] = {seq: set() for seq in wanted}
        for u in free:
            for seq in self.leaves(u) & wanted:
                under[seq].add(u)
        stands_on = {seq: frozenset(us) for seq, us in under.items()}
        judged = [trial.Judged(m.id, {c: self.last_op.get(c) for c in m.cards or ()},
                               self._end_judge(root, m)) for m in group]
        return trial.Search(steps, self.base.cut(self.base_melds(root)), free, stands_on,
                            self.own_seqs, judged).run()

    def _end_judge(self, root: int, m: _Meld) -> Callable[[Board, frozenset[int]], bool]:
        def regular(board: Board, own_ids: frozenset[int]) -> bool:
            return all(is_regular(h) for h in self._homes(board, own_ids, root, m.id, m.cards))
        return regular

    def leaves(self, seq: int) -> set[int]:
        """The ops left out with op `seq` (itself and all that stands on it)."""
        got = self._leaves.get(seq)
        if got is None:
            got = closure(self.rev, (seq,))
            bundle = self.bundles.get(seq)
            if bundle is None:
                self._leaves[seq] = got
            else:  # M6.5 decision: a bundle's ops stand on each other (deps.dependents)
                for x in got:
                    if self.bundles.get(x) == bundle:
                        self._leaves[x] = got
        return got

    def left_out_with(self, excluded: Iterable[int]) -> frozenset[int]:
        """The ops left out with those of `excluded` (`deps.closure`, the union of each one's
        `leaves`: what depends on a set is what depends on any of its ops)."""
        out: set[int] = set()
        for x in excluded:
            out |= self.leaves(x)
        return frozenset(out)

    def signature(self, m: _Meld) -> object:
        """Everything the search of meld `m` depends on: its cards on the table (and who last
        moved each), the ops on its lineage (and which sides of them), the ops that may be
        left out and what leaving each out takes with it among those ops and the own ones,
        the ops always kept; with the consolidated board (its version, kept by `_memo`), that
        is the whole input of the search, so equal signatures have equal answers."""
        root = self.root(m.id)
        lineage = self._lineage_sig.get(root)
        if lineage is None:
            steps = self.ops_on(root)
            lineage = self._lineage_sig[root] = (
                tuple((op.seq, take, put) for op, take, put in steps),
                frozenset(op.seq for op, _, _ in steps),
                frozenset(op.seq for op, _, _ in steps if op.seq in self.own_seqs))
        shape, on_lineage, own_here = lineage
        leave = tuple((x, self._leave_sig(x, root, on_lineage, m.free))
                      for x in sorted(m.free | m.settled))
        return (m.id, root,
                None if m.cards is None else tuple((c, self.last_op.get(c)) for c in m.cards),
                shape, tuple(sorted(m.free)), tuple(sorted(m.settled)), tuple(sorted(m.must)),
                leave, own_here)

    def _leave_sig(self, x: int, root: int, on_lineage: frozenset[int],
                   free: frozenset[int]) -> tuple[frozenset[int], frozenset[int], bool]:
        """What leaving op `x` out takes with it that a search on lineage `root` sees: ops of
        the lineage, ops that may be left out, and whether an own op."""
        got = self._leave_cache.get((x, root))
        if got is None:
            out = self.leaves(x)
            got = self._leave_cache[(x, root)] = (frozenset(out & on_lineage), frozenset(out),
                                                  not out.isdisjoint(self.own_seqs))
        return got[0], got[1] & free, got[2]

    def own_ancestors(self) -> set[int]:
        if self._own_anc is None:
            fwd = self.forward()
            out: set[int] = set()
            stack = [d for s in self.own_seqs for d in fwd.get(s, ())]
            while stack:
                x = stack.pop()
                if x not in out:
                    out.add(x)
                    stack.extend(fwd.get(x, ()))
            self._own_anc = out
        return self._own_anc

    def forward(self) -> dict[int, list[int]]:
        if self._fwd is None:
            self._fwd = {}
            for d, users in self.rev.items():
                for u in users:
                    self._fwd.setdefault(u, []).append(d)
        return self._fwd

    def _homes(self, board: Board, own_ids: Iterable[int], root: int, mid: int,
               cards: list[Card] | None) -> list[list[Card]]:
        """The pieces of meld `mid` on a replay of its lineage: where its cards are there (those
        last moved by the same op as on the table), the meld under its id, and the pieces of the
        lineage the own ops touched."""
        homes = {board.where[c] for c in cards or ()
                 if c in board.where and board.last_op.get(c) == self.last_op.get(c)}
        target = board.resolve(mid)
        if target in board.melds:
            homes.add(target)
        homes.update(m for m in own_ids if m in board.melds and self.root(m) == root)
        return [board.melds[h] for h in homes]

    def regular_without(self, excluded: set[int], mid: int,
                        cards: list[Card] | None) -> Verdict:
        """Is meld `mid` (`cards` on the table, None if gone from it) regular when the ops in
        `excluded` never happened (and so neither did the ops that needed them: "what happens
        to the meld if that card disappears", M5.5.2)? CANNOT_STAND if an own op could not
        stand without them."""
        closed = self.left_out_with(excluded)
        if closed & self.own_seqs:
            return Verdict.CANNOT_STAND
        root = self.root(mid)
        made = self.replay_root(root, closed)
        if made is None:
            return Verdict.CANNOT_STAND
        board, own_ids = made
        # The meld under its id there, wherever its cards are there, and the pieces of it that
        # the own ops touched there: without the ops left out a removal may cut a run
        # elsewhere (an interior card instead of an end one, leaving a lone card), and a half
        # may never be split off. Only the cards that are there as on the table (last moved by
        # the same op) are followed; those that ops left out had brought are not.
        regular = all(is_regular(h) for h in self._homes(board, own_ids, root, mid, cards))
        return Verdict.REGULAR if regular else Verdict.IRREGULAR


MEMO_ENTRIES = 4096  # a cache: emptied when full, which changes no outcome


def _memo(base: Board) -> dict[object, object]:
    """The judgements already made on the consolidated board `base` (Board.memo), emptied
    when it changes (a consolidation applies ops to it) or when full."""
    if base.memo_version != len(base.applied) or len(base.memo) >= MEMO_ENTRIES:
        base.memo.clear()
        base.memo_version = len(base.applied)
    return base.memo


def _root(board: Board, meld_id: int, cache: dict[int, int] | None = None) -> int:
    """The meld that `meld_id` was split from, at the start of its lineage (itself if none)."""
    got = None if cache is None else cache.get(meld_id)
    if got is None:
        got = board.lineage(meld_id)[-1]
        if cache is not None:
            cache[meld_id] = got
    return got


def _gone(board: Board, op: Op) -> set[int]:
    """The melds `op` touched that are no longer on `board` (their last cards were taken)."""
    out: set[int] = set()
    for mid in op.touched:
        current = board.resolve(mid)
        if current not in board.melds:
            out.add(current)
    return out


def _card_sources(own: list[Op], live: Sequence[Op]) -> set[int]:
    """Ops of other calate whose cards the own ops moved, transitively (M5.5.1)."""
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
