"""Chain cancellation (M5.5): undo exactly as far as the dependencies reach.

`plan_undo` computes, from a first set of ops that fall, the whole set that must fall and the
board that remains. It is a fixpoint over four rules, each adding ops, never removing:

1. card dependency (M5.5.1): an op that moved a card brought by a falling op falls;
2. meld dependency (M5.5.2, M5.4.4): an op that needed a falling op (recorded when its calata
   was judged) falls;
3. a confirmed calata reached by the chain falls whole (M5.5.5); an open one loses only the
   connected ops; consolidated work is never reached (M5.5.8);
4. wounds (M5.5.4): after replaying the survivors, a meld left irregular with no open calata
   working on it brings down the most recent confirmed calata that touched it; and the calata
   being concluded is judged again on what is left (its other ops on melds now irregular fall,
   and if none of its own cards remains the rest of its moves is void: M5.3.7).

Each round replays the surviving ops from the consolidated board. The set only grows and is
bounded by the live ops, so the fixpoint is reached in at most that many rounds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .board import Board, Op, replay
from .deps import dependents
from .judge import judge
from .melds import is_regular
from .state import Calata, CalataStatus

if TYPE_CHECKING:
    from .tablestate import TableState


@dataclass
class UndoPlan:
    fallen: set[int]  # op seqs
    board: Board
    survivors: list[Op]
    touched: dict[int, tuple[int, ...]]  # survivor seq -> the meld ids it touches on `board`


def plan_undo(table: TableState, first: set[int], concluding: Calata | None) -> UndoPlan:
    live = table.live_ops()
    by_seq = {op.seq: op for op in live}
    rev = dependents(table, live)
    fallen: set[int] = set()
    pending = set(first)
    while True:
        _close(table, by_seq, rev, fallen, pending, concluding)
        survivors = [op for op in live if op.seq not in fallen]
        touched: dict[int, tuple[int, ...]] = {}
        board, stuck = replay(table.base, survivors, touched)
        if stuck:
            pending.update(op.seq for op in stuck)
            continue
        if concluding is not None:
            pending.update(_concluding_rest(table, concluding, board, survivors))
            if pending:
                continue
        pending.update(_wounds(table, board, survivors))
        if not pending:
            return UndoPlan(fallen, board, survivors, touched)


def _close(table: TableState, by_seq: dict[int, Op], rev: dict[int, list[int]], fallen: set[int],
           pending: set[int], concluding: Calata | None) -> None:
    while pending:
        seq = pending.pop()
        if seq in fallen or seq not in by_seq:
            continue
        cal = table.calate[by_seq[seq].calata]
        if cal.status is CalataStatus.CONSOLIDATED:
            continue  # M5.5.8: never reached
        fallen.add(seq)
        if cal.status is CalataStatus.CONFIRMED and cal is not concluding:
            pending.update(cal.ops)  # M5.5.5: a concluded calata falls whole
        pending.update(d for d in rev.get(seq, ()) if d not in fallen)


def _concluding_rest(table: TableState, cal: Calata, board: Board, survivors: list[Op]) -> set[int]:
    own = [op for op in survivors if op.calata == cal.id]
    if not own:
        return set()
    verdict = judge(table, cal, board, survivors)
    if verdict.fail_ops:
        return set(verdict.fail_ops)
    if not cal.is_stop and not any(op.own_cards for op in own):
        return {op.seq for op in own}  # M5.3.7: moves without an own card are void
    return set()


def _wounds(table: TableState, board: Board, survivors: list[Op]) -> set[int]:
    """M5.5.4: a meld left irregular that only settled work rests on."""
    trial: list[Op] = []
    settled: list[Op] = []
    for op in survivors:
        status = table.calate[op.calata].status
        if status is CalataStatus.OPEN:
            trial.append(op)
        elif status is CalataStatus.CONFIRMED:
            settled.append(op)
    if not settled:
        return set()
    out: set[int] = set()
    irregular = [mid for mid, cards in board.melds.items() if not is_regular(cards)]
    if not irregular:
        return out
    worked_on = board.melds_touched(trial)
    for mid in irregular:
        if mid in worked_on:
            continue  # an open calata is working on it: its own business (M5.4.3)
        culprits = [op for op in settled if board.touches(op, mid)]
        if culprits:
            latest = max(culprits, key=lambda op: op.seq)
            out.update(table.calate[latest.calata].ops)
    return out
