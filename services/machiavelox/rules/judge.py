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
A card of another calata that an own op moved is always needed (M5.5.1).
Leaving ops out is done by replaying the others from the consolidated board (`board.replay`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

from .board import Board, Op, replay
from .melds import is_regular
from .state import Calata, CalataStatus

if TYPE_CHECKING:
    from .table import Table

MAX_TRIAL_SEARCH = 8  # trial ops considered per meld; more are rare and left out (documented)


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
    foreign = [op for op in live if op.calata != cal.id
               and table.calate[op.calata].status is not CalataStatus.CONSOLIDATED]
    foreign_touch = {f.seq: board.melds_touched((f,)) for f in foreign}
    irregular: set[int] = set()
    needs_by_meld: dict[int, frozenset[int]] = {}
    for mid in current:
        cards = board.melds[mid]
        related = [f for f in foreign if mid in foreign_touch[f.seq]]
        if not related:
            if not is_regular(cards):
                irregular.add(mid)
            continue
        needed = _search(table, own, related, live, mid)
        if needed is None:
            irregular.add(mid)
        elif needed:
            needs_by_meld[mid] = needed
    fail: set[int] = set()
    needs: dict[int, frozenset[int]] = {}
    for op in own:
        hit = board.melds_touched((op,)) & current
        if hit & irregular:
            fail.add(op.seq)
        op_needs = frozenset().union(*(needs_by_meld.get(m, frozenset()) for m in hit))
        if op_needs:
            needs[op.seq] = op_needs
    return Judgement(frozenset(irregular), frozenset(fail), needs, frozenset(current))


def _search(table: Table, own: list[Op], related: list[Op], live: Sequence[Op],
            mid: int) -> frozenset[int] | None:
    """The other calate's ops the meld needs to be regular, or None if it cannot be."""
    status = table.calate
    trial = [f for f in related if status[f.calata].status is CalataStatus.OPEN]
    settled = [f for f in related if status[f.calata].status is not CalataStatus.OPEN]
    required = _card_sources(own, live)
    optional = [f for f in trial if f.seq not in required][:MAX_TRIAL_SEARCH]
    left_out_always = {f.seq for f in trial if f.seq not in required} - {f.seq for f in optional}
    own_seqs = {op.seq for op in own}
    for k in range(len(optional) + 1):
        for chosen in combinations(optional, k):
            keep = {f.seq for f in chosen}
            excluded = {f.seq for f in optional if f.seq not in keep} | left_out_always
            verdict = _regular_without(table, live, excluded, own_seqs, mid)
            if verdict is None:
                continue  # an own op could not stand without these: not a valid choice
            if not verdict:
                continue
            needed = set(keep)
            for f in settled:  # M5.5.2: settled work it could not do without
                if _regular_without(table, live, excluded | {f.seq}, own_seqs, mid) is not True:
                    needed.add(f.seq)
            return frozenset(needed)
    return None


def _regular_without(table: Table, live: Sequence[Op], excluded: set[int],
                     own_seqs: set[int], mid: int) -> bool | None:
    """Is meld `mid` regular when the ops in `excluded` never happened (and so neither did
    the ops that needed them: "what happens to the meld if that card disappears", M5.5.2)?
    None if an own op could not stand without them."""
    excluded = _with_dependents(table, live, excluded, own_seqs)
    if excluded & own_seqs:
        return None
    board, stuck = replay(table.base, (op for op in live if op.seq not in excluded))
    if any(op.seq in own_seqs for op in stuck):
        return None
    target = board.resolve(mid)
    if target not in board.melds:
        return True  # the meld is gone: nothing left irregular
    return is_regular(board.melds[target])


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


def _with_dependents(table: Table, live: Sequence[Op], excluded: set[int],
                     own_seqs: set[int]) -> set[int]:
    """`excluded` plus every live op that needed one of them or moved one of their cards.

    The needs of the calata being judged are what is being recomputed: they do not count."""
    out = set(excluded)
    changed = True
    while changed:
        changed = False
        for op in live:
            if op.seq in out:
                continue
            cal = table.calate[op.calata]
            if op.seq in own_seqs:
                needs: frozenset[int] = frozenset()
            elif cal.status is CalataStatus.OPEN:
                needs = cal.needs.get(op.seq, op.needs)
            else:
                needs = op.needs
            if any(p in out for p in op.prev if p is not None) or needs & out:
                out.add(op.seq)
                changed = True
    return out
