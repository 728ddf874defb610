"""The dependency graph of the live ops, reversed: who falls if this op falls (M5.5.1-M5.5.2;
the moves of a reserved card in its ping-pong as one unit, M6.5 decision).

An op depends on the ops that last moved its cards (`Op.prev`) and on the other calate's ops it
needed (`Op.needs` once its calata concluded, `Calata.needs` while it is open). Built once per
judgement or undo plan, so following the chain costs O(edges), not O(ops) per step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .board import Op
from .state import Calata, CalataStatus

if TYPE_CHECKING:
    from .tablestate import TableState


def needs_of(table: TableState, op: Op) -> frozenset[int]:
    cal = table.calate[op.calata]
    if cal.status is CalataStatus.OPEN:
        return cal.needs.get(op.seq, op.needs)
    return op.needs


def dependents(table: TableState, live: Sequence[Op],
               ignore_needs_of: set[int] | frozenset[int] = frozenset()) -> dict[int, list[int]]:
    """seq -> the live ops that depend on it directly. `ignore_needs_of`: ops whose needs are
    being recomputed (a calata under judgement) and so must not count."""
    rev: dict[int, list[int]] = {}
    bundles: dict[int, list[int]] = {}
    for op in live:
        for p in op.prev:
            if p is not None:
                rev.setdefault(p, []).append(op.seq)
        if op.seq not in ignore_needs_of:
            for n in needs_of(table, op):
                rev.setdefault(n, []).append(op.seq)
        if op.bundle is not None:
            bundles.setdefault(op.bundle, []).append(op.seq)
    for seqs in bundles.values():  # M6.5 decision: one unit (a cycle: each reaches all)
        for a, b in zip(seqs, seqs[1:] + seqs[:1], strict=True):
            if a != b:
                rev.setdefault(a, []).append(b)
    return rev


def closure(rev: dict[int, list[int]], start: Iterable[int]) -> set[int]:
    """`start` and everything that depends on it, transitively."""
    out = set(start)
    stack = list(out)
    while stack:
        for nxt in rev.get(stack.pop(), ()):
            if nxt not in out:
                out.add(nxt)
                stack.append(nxt)
    return out


def dependency_group(table: TableState, cal: Calata) -> list[Calata]:
    """`cal` and the not yet definitive calate it depends on (through needed ops and moved
    cards), transitively: they consolidate together (M5.5.8)."""
    seen = {cal.id}
    stack = [cal]
    while stack:
        current = stack.pop()
        for seq in current.ops:
            op = table.ops[seq]
            needs = current.needs.get(seq, op.needs) if current.status is \
                CalataStatus.OPEN else op.needs
            for dep in (*needs, *(p for p in op.prev if p is not None)):
                dop = table.ops.get(dep)
                if dop is None or dop.calata in seen:
                    continue
                other = table.calate[dop.calata]
                if other.status in (CalataStatus.OPEN, CalataStatus.CONFIRMED):
                    seen.add(other.id)
                    stack.append(other)
    return [table.calate[i] for i in sorted(seen)]
