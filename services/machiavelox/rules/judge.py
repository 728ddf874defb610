"""Judgement of one calata (M5.4): are the melds it touched regular, and what did it need?

The melds judged are those the calata's ops touched (took from, added to, created: M5.4,
M5.4.1), in the state its ops produced (M5.4.2). Other calate's work on those melds counts as
follows:
- ops of a calata that is still open are "on trial" (M5.4.3): they are left out, neither against
  nor for, unless the meld is irregular without them and regular with some of them: then the
  smallest such set (earliest first on ties) counts, and the calata *needs* them (M5.4.4);
- ops of a confirmed, not yet consolidated calata count like the table they are, and the calata
  needs each one without which its meld would be irregular (M5.5.2: "what happens to the meld if
  that card disappears");
- consolidated work is simply the table.
A card of another calata that an own op moved is always needed (M5.5.1). A meld the calata
emptied is gone, so in order, unless it is gone only thanks to other calate's work on it or on
the melds it was split from: then that work is needed too.
Leaving ops out is done by replaying the others from the consolidated board (`board.replay`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from .board import Board, Op, replay
from .cards import Card
from .deps import closure, dependents
from .melds import is_regular
from .state import Calata, CalataStatus

if TYPE_CHECKING:
    from .table import Table

MAX_TRIAL_SEARCH = 6  # trial ops considered per meld; more are rare and left out (documented)
MAX_REPLAYS = 48  # replays per judgement before the fallback (documented)


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


def judge(table: Table, cal: Calata, board: Board | None = None,
          live: Sequence[Op] | None = None) -> Judgement:
    """Judge `cal` on `board` (default: the live table) whose live ops are `live`."""
    if board is None:
        board = table.board
    if live is None:
        live = table.live_ops()
    own = [op for op in live if op.calata == cal.id]
    if not own:
        return EMPTY
    current = board.melds_touched(own)
    gone_by_op = {op.seq: _gone(board, op) for op in own}
    gone = set().union(*gone_by_op.values())
    foreign = [op for op in live if op.calata != cal.id
               and table.calate[op.calata].status is not CalataStatus.CONSOLIDATED]
    foreign_touch = {f.seq: board.melds_touched((f,)) for f in foreign}
    # Pieces of one meld (a meld and the halves split off it, theirs too) share the root of
    # their lineage; work on one piece may reach another when a split is left out or undone.
    foreign_roots = {f.seq: {_root(board, x) for x in f.touched} for f in foreign}
    ctx: _Context | None = None
    irregular: set[int] = set()
    needs_by_meld: dict[int, frozenset[int]] = {}
    # Melds on the table, then melds the calata emptied (it took away their last cards): gone
    # is in order, but it may be gone only thanks to other calate's work (a half left by
    # another player's interior removal, emptied, joins its other side again if that removal
    # falls, and is then without the cards taken from it: M5.4.4, M5.5.2).
    for mid in (*current, *gone):
        cards = board.melds.get(mid)  # None: gone
        root = _root(board, mid)
        related = [f for f in foreign
                   if mid in foreign_touch[f.seq] or root in foreign_roots[f.seq]]
        if not related:
            if cards is not None and not is_regular(cards):
                irregular.add(mid)
            continue
        if ctx is None:
            ctx = _Context(table, board, own, live)
        needed = ctx.search(related, mid, cards)
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
    return Judgement(frozenset(irregular), frozenset(fail), needs, frozenset(current))


class _Context:
    """What one judgement shares across its melds: the reverse dependency graph, replays
    already made (by the set of ops left out), and a budget of replays."""

    def __init__(self, table: Table, board: Board, own: list[Op], live: Sequence[Op]) -> None:
        self.table = table
        self.last_op = board.last_op  # who last moved each card on the board judged
        self.live = live
        self.own_seqs = {op.seq for op in own}
        self.required = _card_sources(own, live)
        self.rev = dependents(table, live, ignore_needs_of=self.own_seqs)
        # replays made, by the ops left out: the board and the meld ids the own ops touched
        # there (None: an own op could not stand)
        self.boards: dict[frozenset[int], tuple[Board, set[int]] | None] = {}
        self.budget = MAX_REPLAYS

    def search(self, related: list[Op], mid: int,
               cards: list[Card] | None) -> frozenset[int] | None:
        """The other calate's ops the meld needs to be regular, or None if it cannot be.
        `cards`: the meld on the table, None when it is gone from it."""
        status = self.table.calate
        trial = [f for f in related if status[f.calata].status is CalataStatus.OPEN]
        settled = [f for f in related if status[f.calata].status is not CalataStatus.OPEN]
        optional = [f for f in trial if f.seq not in self.required][:MAX_TRIAL_SEARCH]
        left_out = {f.seq for f in trial if f.seq not in self.required} - {
            f.seq for f in optional}
        for k in range(len(optional) + 1):
            for chosen in combinations(optional, k):
                keep = {f.seq for f in chosen}
                excluded = {f.seq for f in optional if f.seq not in keep} | left_out
                verdict = self.regular_without(excluded, mid, cards)
                if verdict is _OVER_BUDGET:
                    return self._fallback(trial, settled, cards)
                if verdict is not True:
                    continue  # irregular, or an own op could not stand without these
                needed = set(keep)
                for f in settled:  # M5.5.2: settled work it could not do without
                    if self.regular_without(excluded | {f.seq}, mid, cards) is not True:
                        needed.add(f.seq)
                return frozenset(needed)
        return None

    @staticmethod
    def _fallback(trial: list[Op], settled: list[Op],
                  cards: list[Card] | None) -> frozenset[int] | None:
        """Too many combinations: judge the meld as it stands and depend on all that touches
        it (documented approximation; only reached in pathological tables)."""
        if cards is not None and not is_regular(cards):
            return None
        return frozenset(f.seq for f in (*trial, *settled))

    def regular_without(self, excluded: set[int], mid: int,
                        cards: list[Card] | None) -> bool | object | None:
        """Is meld `mid` (`cards` on the table, None if gone from it) regular when the ops in
        `excluded` never happened (and so neither did the ops that needed them: "what happens
        to the meld if that card disappears", M5.5.2)? None if an own op could not stand
        without them; _OVER_BUDGET past the budget."""
        closed = frozenset(closure(self.rev, excluded))
        if closed & self.own_seqs:
            return None
        if closed not in self.boards:
            if self.budget <= 0:
                return _OVER_BUDGET
            self.budget -= 1
            touched: dict[int, tuple[int, ...]] = {}
            board, stuck = replay(self.table.base,
                                  (op for op in self.live if op.seq not in closed), touched)
            own_ids = {m for seq in self.own_seqs for m in touched.get(seq, ())}
            self.boards[closed] = (None if any(op.seq in self.own_seqs for op in stuck)
                                   else (board, own_ids))
        made = self.boards[closed]
        if made is None:
            return None
        board, own_ids = made
        # The meld under its id there, wherever its cards are there, and the pieces of it that
        # the own ops touched there: without the ops left out a removal may cut a run
        # elsewhere (an interior card instead of an end one, leaving a lone card), and a half
        # may never be split off. Only the cards that are there as on the table (last moved by
        # the same op) are followed; those that ops left out had brought are not.
        homes = {board.where[c] for c in cards or ()
                 if c in board.where and board.last_op.get(c) == self.last_op.get(c)}
        target = board.resolve(mid)
        if target in board.melds:
            homes.add(target)
        root = _root(board, target)
        homes.update(m for m in own_ids if m in board.melds and _root(board, m) == root)
        return all(is_regular(board.melds[h]) for h in homes)


_OVER_BUDGET = object()


def _root(board: Board, meld_id: int) -> int:
    """The meld that `meld_id` was split from, at the start of its lineage (itself if none)."""
    return board.lineage(meld_id)[-1]


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
