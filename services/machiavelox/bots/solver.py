"""The solver: the play that puts the most cards of the pool on the table (integer programming).

An integer program over the candidate melds (`candidates.py`), as the published Rummikub /
Machiavelli ILP solvers do, solved with HiGHS (`highspy`). Faces stand for cards (both copies
of a face are interchangeable for regularity, M1.1):

- x[s] in 0..2: copies of candidate meld s in the touched part of the table after the play;
- u[f]: pool cards of face f laid in those melds;
- d[s]: copies of s laid from the pool alone as a direct meld (only when the player still
  needs one for a valid closing, M8.2(2)), with g: "the play holds a direct meld";
- e[m, s] in 0/1: touchable table meld m is kept and becomes s (s = m: left alone; s a
  superset: extended in place). A meld with no e is taken apart (counted against `depth`).

Every face f: sum x[s] over s holding f = table cards of f + u[f] (M3.6: table cards stay on
the table; every touched meld ends regular, M5.4); u[f] + sum d[s] <= pool cards of f.
Maximise W * (pool cards laid) + B * g + (cards of the melds kept): the most cards first, then
a direct meld when one is still owed, then the fewest table cards moved. The hand is never
emptied unless the closing would be valid (M8.2, M8.4: -15 otherwise).

Bounded in time: `time_limit_s` bounds the whole decision (the model's construction counts
against it); HiGHS stops there and the best play found by then is returned (`status`
"time-limit"), or no play when none was found ("none": the caller draws or waits). The search
starts from the table as it is, given to HiGHS complete (every column), so it never solves an
LP to fill a partial start in.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import highspy
import numpy as np

from .candidates import MACHIAVELOX, Candidate, Face, Shape, face_of
from .position import Position, TableMeld

W = 1000  # one pool card on the table outweighs every meld kept (at most 104 cards)
DIRECT_BONUS = 2 * W  # a direct meld still owed (M8.2(2)) is worth two cards
INF = highspy.kHighsInf
def _quiet_banner() -> None:
    """HiGHS writes its copyright banner to the process's stdout (file descriptor 1, below
    Python) when its first model is made, before `output_flag` can be set: a terminal client
    would show it on its screen. Made once here, at import (before any thread or screen), with
    descriptor 1 pointed at /dev/null; later models print nothing (`output_flag` off)."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


_quiet_banner()

HIGHS_OPTIONS: dict[str, bool | int | float | str] = {
    "output_flag": False,
    "threads": 1,
    # Models of a few hundred columns: HiGHS' presolve, restarts, symmetry detection and
    # primal heuristics cost more than they save here; the dual simplex alone for the LPs (no
    # interior point for an analytic centre). Measured on 3 000 positions of ladder games:
    # p50 10.6 -> 7.0 ms, solves stopped at the 50 ms limit 112 -> 33.
    "presolve": "off",
    "mip_lp_solver": "simplex",
    "mip_allow_restart": False,
    "mip_detect_symmetry": False,
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_feasibility_jump": False,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}


@dataclass(frozen=True, slots=True)
class Target:
    """One meld of the table after the play (faces), built in place on `home` or new."""
    faces: tuple[Face, ...]
    is_run: bool
    home: int | None = None  # a kept table meld extended in place
    direct: bool = False  # laid from the pool alone as a direct meld (M5.1)


@dataclass(frozen=True, slots=True)
class Solution:
    placed: int  # pool cards put on the table
    targets: tuple[Target, ...] = ()  # the touched melds after the play (untouched ones omitted)
    broken: tuple[int, ...] = ()  # ids of the table melds taken apart
    pool_faces: tuple[Face, ...] = ()  # faces of the pool cards laid
    has_direct: bool = False
    status: str = "none"  # "optimal", "time-limit", "none"
    solve_ms: float = 0.0
    size: int = 0  # cards in the position (pool + touchable table)
    pool_size: int = 0
    columns: tuple[float, ...] = ()  # every column's value, when an `Extension` asked for it

    @property
    def empties_pool(self) -> bool:
        return self.placed > 0 and self.placed == self.pool_size


@dataclass(frozen=True, slots=True)
class Rules:
    """What the player may do with the hand (M8.2) and how far the search may go."""
    drawn: bool = True  # M8.2(1)
    has_direct: bool = True  # M8.2(2), already met
    depth: int | None = None  # table melds the play may take apart (None: any number)
    time_limit_s: float = 0.05


class _Model:
    """A column-wise MIP under construction (HiGHS' passModel is far faster than addVar)."""

    def __init__(self) -> None:
        self.cost: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.cols: list[list[tuple[int, float]]] = []
        self.row_lo: list[float] = []
        self.row_hi: list[float] = []

    def var(self, cost: float, upper: float, entries: list[tuple[int, float]]) -> int:
        self.cost.append(cost)
        self.lower.append(0.0)
        self.upper.append(upper)
        self.cols.append(entries)
        return len(self.cost) - 1

    def row(self, lo: float, hi: float) -> int:
        self.row_lo.append(lo)
        self.row_hi.append(hi)
        return len(self.row_lo) - 1

    def solve(self, time_limit_s: float, abs_gap: float,
              start: dict[int, float]) -> tuple[list[float] | None, str]:
        lp = highspy.HighsLp()
        lp.num_col_ = len(self.cost)
        lp.num_row_ = len(self.row_lo)
        lp.col_cost_ = np.array(self.cost, dtype=np.float64)
        lp.col_lower_ = np.array(self.lower, dtype=np.float64)
        lp.col_upper_ = np.array(self.upper, dtype=np.float64)
        lp.row_lower_ = np.array(self.row_lo, dtype=np.float64)
        lp.row_upper_ = np.array(self.row_hi, dtype=np.float64)
        starts = [0]
        index: list[int] = []
        value: list[float] = []
        for entries in self.cols:
            for r, v in entries:
                index.append(r)
                value.append(v)
            starts.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(value, dtype=np.float64)
        lp.integrality_ = [highspy.HighsVarType.kInteger] * lp.num_col_
        lp.sense_ = highspy.ObjSense.kMaximize
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        h.setOptionValue("time_limit", max(time_limit_s, 0.001))
        h.setOptionValue("mip_abs_gap", abs_gap)
        for name, option in HIGHS_OPTIONS.items():
            h.setOptionValue(name, option)
        h.passModel(lp)
        if start:  # a feasible play to begin from: at the time limit there is always one
            full = np.zeros(lp.num_col_, dtype=np.float64)  # complete: HiGHS need not
            for col, v in start.items():  # solve an LP to fill it in
                full[col] = v
            h.setSolution(lp.num_col_, np.arange(lp.num_col_, dtype=np.int32), full)
        h.run()
        status = h.getModelStatus()
        if status == highspy.HighsModelStatus.kOptimal:
            return list(h.getSolution().col_value), "optimal"
        if h.getInfo().primal_solution_status == 2:  # feasible, not proven optimal
            return list(h.getSolution().col_value), "time-limit"
        return None, "none"


@dataclass
class Built:
    """The model as `solve` built it, handed to an `Extension` before the solve: it may add
    rows and columns (and entries to existing columns) and complete the start."""
    model: _Model
    cands: list[Candidate]
    x_cols: list[int]
    face_row: dict[Face, int]
    u_cols: dict[Face, int]
    e_cols: list[tuple[int, int, int]]
    kept: list[TableMeld]
    start: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Extension:
    """A ruleset's additions to the program (classic Machiavelli's jokers and opening,
    `classic_solver.py`): `pool_cards` / `table_cards` are cards the faces do not count (the
    jokers), `add` adds their rows and columns. The solution then carries every column's
    value (`Solution.columns`) for the extension to read."""
    pool_cards: int
    table_cards: int
    add: Callable[[Built], None]


def solve(position: Position, rules: Rules = Rules(), shape: Shape = MACHIAVELOX,
          extension: Extension | None = None) -> Solution:
    """The best play for `position` under `rules` (see the module docstring). `shape` and
    `extension` are Machiavelox's by default (M3); classic Machiavelli passes its own."""
    started = time.perf_counter()
    pool = Counter(face_of(c) for c in position.pool)
    table = Counter(face_of(c) for m in position.melds for c in m.cards)
    n_table = sum(table.values()) + (extension.table_cards if extension else 0)
    pool_size = len(position.pool) + (extension.pool_cards if extension else 0)
    size = pool_size + n_table
    if not pool_size:
        return Solution(0, status="none", size=size, pool_size=pool_size)
    avail = pool + table
    kept_regular = [m for m in position.melds
                    if m.regular and shape.is_shape(shape.meld_faces(m.cards, m))]
    cands = shape.candidates(avail, [shape.meld_faces(m.cards, m) for m in kept_regular])
    need_direct = not rules.has_direct and not position.tiebreak
    model = _Model()
    face_row = {f: model.row(float(table[f]), float(table[f])) for f in avail}
    for cand in cands:  # faces no card has (a joker would stand for them): classic only
        for f in cand.faces:
            if f not in face_row:
                face_row[f] = model.row(0.0, 0.0)
    pool_row = ({f: model.row(-INF, float(pool[f])) for f in pool} if need_direct else {})
    # x[s]
    x_cols: list[int] = []
    for cand in cands:
        upper = shape.upper(cand, avail)
        x_cols.append(model.var(0.0, float(upper), [(face_row[f], 1.0) for f in cand.faces]))
    # u[f]: pool cards of face f in the x melds
    total_row = None
    if not position.tiebreak and (not rules.drawn or need_direct):
        # M8.2, M8.4: keep a card unless the closing is valid (a direct meld in this play
        # makes it valid when the player has drawn: g below)
        total_row = model.row(-INF, float(len(position.pool) - 1))
    u_cols: dict[Face, int] = {}
    for f in pool:
        entries = [(face_row[f], -1.0)]
        if f in pool_row:
            entries.append((pool_row[f], 1.0))
        if total_row is not None:
            entries.append((total_row, 1.0))
        u_cols[f] = model.var(float(W), float(pool[f]), entries)
    # d[s] and g: a direct meld from the pool alone (M5.1, M8.2(2))
    d_cols: list[tuple[Candidate, int]] = []
    if need_direct:
        g_row = model.row(-INF, 0.0)
        for cand in cands:
            if all(pool[f] > 0 for f in cand.faces):
                entries = [(pool_row[f], 1.0) for f in cand.faces] + [(g_row, -1.0)]
                if total_row is not None:
                    entries.append((total_row, float(len(cand.faces))))
                upper = min(pool[f] for f in cand.faces)
                d_cols.append((cand, model.var(float(W * len(cand.faces)), float(upper),
                                               entries)))
        g_entries = [(g_row, 1.0)]
        if total_row is not None and rules.drawn:
            g_entries.append((total_row, -1.0))
        model.var(float(DIRECT_BONUS), 1.0, g_entries)
    # e[m, s]: melds kept (and maybe extended in place)
    index = {c.faces: i for i, c in enumerate(cands)}
    by_face: dict[Face, list[int]] = {}
    for i, c in enumerate(cands):
        for f in c.faces:
            by_face.setdefault(f, []).append(i)
    cap_rows: dict[int, int] = {}
    e_cols: list[tuple[int, int, int]] = []  # (meld id, candidate index, column)
    depth_row = None
    if rules.depth is not None:
        depth_row = model.row(float(len(kept_regular) - rules.depth), INF)
    for m in kept_regular:
        mf = shape.meld_faces(m.cards, m)
        if mf not in index:
            continue
        one_row = model.row(-INF, 1.0)
        supersets = [i for i in by_face.get(mf[0], ()) if set(mf) <= set(cands[i].faces)]
        for i in supersets:
            if i not in cap_rows:
                cap_rows[i] = model.row(-INF, 0.0)
                model.cols[x_cols[i]].append((cap_rows[i], -1.0))
            entries = [(one_row, 1.0), (cap_rows[i], 1.0)]
            if depth_row is not None:
                entries.append((depth_row, 1.0))
            e_cols.append((m.id, i, model.var(float(len(mf)), 1.0, entries)))
    # The objective is W * cards + a multiple of W for the direct meld + at most n_table for
    # the melds kept: a gap below W - n_table proves the cards (and the direct meld) optimal,
    # leaving only the choice among equally good plays of which melds to keep.
    start: dict[int, float] = {}
    if len(kept_regular) == len(position.melds):  # the table as it is: nothing placed
        for mid, i, col in e_cols:
            kept = next(m for m in kept_regular if m.id == mid)
            if cands[i].faces == shape.meld_faces(kept.cards, kept):
                start[col] = 1.0
                start[x_cols[i]] = start.get(x_cols[i], 0.0) + 1.0
    if extension is not None:
        extension.add(Built(model, cands, x_cols, face_row, u_cols, e_cols, kept_regular,
                            start))
    # the limit bounds the whole decision: the model's construction counts against it
    left = rules.time_limit_s - (time.perf_counter() - started)
    values, status = model.solve(left, float(W - n_table - 1), start)
    ms = (time.perf_counter() - started) * 1000
    if values is None:
        return Solution(0, status="none", solve_ms=ms, size=size, pool_size=pool_size)
    solution = _read(position, cands, values, x_cols, u_cols, d_cols, e_cols, status, ms,
                     size, shape)
    if extension is None:
        return solution
    return replace(solution, columns=tuple(values), pool_size=pool_size)


def _read(position: Position, cands: list[Candidate], values: list[float], x_cols: list[int],
          u_cols: dict[Face, int], d_cols: list[tuple[Candidate, int]],
          e_cols: list[tuple[int, int, int]], status: str, ms: float, size: int,
          shape: Shape) -> Solution:
    def val(col: int) -> int:
        return round(values[col])

    copies = {i: val(col) for i, col in enumerate(x_cols) if val(col) > 0}
    targets: list[Target] = []
    kept: set[int] = set()
    for mid, i, col in e_cols:
        if val(col) == 1:
            kept.add(mid)
            copies[i] -= 1
            meld = next(m for m in position.melds if m.id == mid)
            if cands[i].faces != shape.meld_faces(meld.cards, meld):
                targets.append(Target(cands[i].faces, cands[i].is_run, home=mid))
    for i, n in copies.items():
        targets += [Target(cands[i].faces, cands[i].is_run)] * n
    pool_faces: list[Face] = []
    for f, col in u_cols.items():
        pool_faces += [f] * val(col)
    has_direct = False
    for cand, col in d_cols:
        for _ in range(val(col)):
            targets.append(Target(cand.faces, cand.is_run, direct=True))
            pool_faces += list(cand.faces)
            has_direct = True
    broken = tuple(m.id for m in position.melds if m.id not in kept)
    return Solution(placed=len(pool_faces), targets=tuple(targets), broken=broken,
                    pool_faces=tuple(sorted(pool_faces)), has_direct=has_direct,
                    status=status, solve_ms=ms, size=size, pool_size=len(position.pool))
