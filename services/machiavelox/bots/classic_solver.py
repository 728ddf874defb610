"""The classic turn planner's search: the turn that puts the most hand cards onto a valid
table (C3, C5), on the shared integer program (`solver.py`) with classic's additions.

What it sees is ONE player's classic view (`classic.view_for`, or the wire view read back):
the own hand, the table's melds (what each joker stands for), whether the player has opened
and the table's variants; never another player's hand.

- Once the player has opened (C8), every meld on the table may be taken apart and rebuilt
  (C3, C5: the engine judges the table only at `End`); every table card stays on the table in
  a valid meld, every table joker too (a joker leaves the table only by a swap, C2: see
  `classic_mind.py`).
- Before the opening, no table card may be touched: the play is new melds of hand cards alone,
  worth at least the threshold (C8: A 1, J/Q/K 10, the others their face, a joker the card it
  stands for); none worth it, no play (the player draws).

Jokers, in the program (`Extension`): j[s, f], the copies of candidate s where a joker stands
for face f; every face row counts naturals only (sum x[s] - sum j[s, f] = table naturals +
hand naturals laid); one row keeps every table joker on the table (sum j = table jokers +
hand jokers laid, each laid joker worth a card); per candidate sum_f j[s, f] <= (|s| - 2) x[s]
(two naturals in every meld, C2) and j[s, f] <= x[s] (a face once per copy). The opening adds
sum value(s) x[s] >= threshold. The decision is bounded in time (`time_limit_s`, the model's
construction included); from an opened position the search starts from the table as it is,
so at the limit there is always a valid play (the best found so far).

Bounded levels (`classic_levels.py`: `depth`, the table melds one turn may rearrange). The
shared program bounds the melds taken apart (`Rules.depth`), not the melds a turn touches: a
kept meld may still take in cards of a broken one, or give up a joker to a natural. So the
caller names the melds the play may rework (`rework`); only they are in the program's
position, and every other meld may only take hand cards:

- a[m, s] in 0/1: a meld m not reworked becomes s, one of its `extensions`, with hand cards
  only: a natural of each added face the hand has, a hand joker for the others (none where
  the hand has the natural; the meld's own jokers keep the faces they stand for, so no
  attach displaces one); at most one s per meld. Every a[m, s] takes its naturals out of the
  face rows (the hand's u) and its jokers out of the joker row.

With no meld reworked the program is the hand's alone plus the a columns. The search starts
from the reworked melds as they are and no attach (with none reworked: nothing placed, every
column 0). Which melds to rework is `classic_mind.py`'s choice. (Marking them in the program
instead, t[m] in 0/1 with sum t <= depth, is exact but slow: on the positions of medium games
a quarter of the solves reached a 100 ms limit with nothing better than no play, 130 ms to
1.8 s to the optimum.)
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass

from machiavelox.classic import (
    Aces,
    ClassicCard,
    ClassicView,
    Joker,
    Seat,
    Variants,
    natural,
    opening_value,
    parse_face,
)
from machiavelox.rules import Card, Suit

from .candidates import RANKS, Face, face_of, face_rank, face_suit
from .classic_candidates import ClassicShape, ClassicTableMeld, extensions
from .classic_levels import HARD
from .position import Position
from .solver import INF, Built, Extension, Rules, W, solve

TIME_LIMIT_S = HARD.solver_s  # per decision (a classic turn is not a race: C7 gives minutes)


@dataclass(frozen=True, slots=True)
class ClassicPosition:
    """What the planner may use, from one player's view."""
    hand: tuple[ClassicCard, ...]
    melds: tuple[ClassicTableMeld, ...]  # the melds the play may touch (none before opening)
    table: dict[int, tuple[ClassicCard, ...]]  # every meld on the table, by id
    opening: int  # points the play must be worth (C8); 0 once opened or without the rule
    variants: Variants

    @property
    def opened(self) -> bool:
        return self.opening == 0


def face_of_text(text: str) -> Face:
    face, _ = parse_face(text)
    assert face is not None
    rank, suit = face
    return suit * RANKS + rank - 1


def position_of(view: ClassicView, seat: Seat, variants: Variants) -> ClassicPosition:
    opened = view.seats[seat].opened or variants.opening == 0
    melds: list[ClassicTableMeld] = []
    for m in view.table:
        naturals = tuple(c for c in m.cards if isinstance(c, Card))
        faces = tuple(sorted(face_of(c) if isinstance(c, Card) else face_of_text(f or "")
                             for c, f in zip(m.cards, m.stands_for, strict=True)
                             if isinstance(c, Card) or f))
        regular = m.kind is not None and len(faces) == len(m.cards)
        melds.append(ClassicTableMeld(m.id, naturals, regular, faces,
                                      len(m.cards) - len(naturals)))
    return ClassicPosition(
        hand=view.hand, melds=tuple(melds) if opened else (),
        table={m.id: m.cards for m in view.table},
        opening=0 if opened else variants.opening, variants=variants)


@dataclass(frozen=True, slots=True)
class Copy:
    """One meld of the table after the play: its natural faces and how many jokers."""
    naturals: tuple[Face, ...]
    jokers: int
    is_run: bool


@dataclass(frozen=True, slots=True)
class Attachment:
    """Hand cards added to a table meld the play does not rework (bounded levels)."""
    meld: int
    naturals: tuple[Face, ...]
    jokers: int


@dataclass(frozen=True, slots=True)
class ClassicSolution:
    placed: int  # hand cards put on the table (jokers included)
    copies: tuple[Copy, ...]  # every meld of the reworked table afterwards
    status: str  # optimal | time-limit | none
    solve_ms: float
    size: int  # cards in the position (hand + touchable table)
    attaches: tuple[Attachment, ...] = ()
    reworked: tuple[int, ...] | None = None  # the melds it may rework (None: every one)


@functools.lru_cache(maxsize=8192)
def _opening_value(faces: tuple[Face, ...], aces: Aces) -> int:
    """C8: the points of a candidate (a joker counts as the face it stands for)."""
    return opening_value(tuple(natural(face_rank(f), Suit(face_suit(f)), 1) for f in faces),
                         aces)


class _Jokers:
    """The classic rows and columns (see the module docstring), then their reading."""

    def __init__(self, hand_jokers: int, table_jokers: int, opening: int, aces: Aces,
                 start_jokers: dict[tuple[Face, ...], list[Face]]) -> None:
        self.aces = aces
        self.hand_jokers = hand_jokers
        self.table_jokers = table_jokers
        self.opening = opening
        self.start_jokers = start_jokers  # kept meld faces -> the joker faces of each
        self.j_cols: dict[tuple[int, Face], int] = {}
        self.u_col: int | None = None
        self.row: int | None = None  # the jokers' row (every table joker stays on the table)
        self.built: Built | None = None

    def add(self, built: Built) -> None:
        self.built = built
        model = built.model
        if self.hand_jokers + self.table_jokers:
            row = self.row = model.row(float(self.table_jokers), float(self.table_jokers))
            self.u_col = model.var(float(W), float(self.hand_jokers), [(row, -1.0)])
            for i, cand in enumerate(built.cands):
                x = built.x_cols[i]
                lone = model.row(-INF, 0.0)  # C2: two naturals in every meld
                model.cols[x].append((lone, -float(len(cand.faces) - 2)))
                upper = model.upper[x]
                for f in cand.faces:
                    cap = model.row(-INF, 0.0)  # a face once per copy
                    model.cols[x].append((cap, -1.0))
                    self.j_cols[i, f] = model.var(0.0, upper, [
                        (built.face_row[f], -1.0), (row, 1.0), (lone, 1.0), (cap, 1.0)])
        if self.opening:  # C8
            row = model.row(float(self.opening), INF)
            for i, cand in enumerate(built.cands):
                worth = _opening_value(cand.faces, self.aces)
                model.cols[built.x_cols[i]].append((row, float(worth)))
        if built.start:  # the table as it is: its jokers where they stand
            index = {c.faces: i for i, c in enumerate(built.cands)}
            for faces, joker_faces in self.start_jokers.items():
                for f in joker_faces:
                    col = self.j_cols[index[faces], f]
                    built.start[col] = built.start.get(col, 0.0) + 1.0

    def copies(self, values: tuple[float, ...]) -> tuple[int, list[Copy]]:
        """(jokers laid from the hand, every copy with its jokers dealt round-robin: each
        copy gets a face at most once and at most |s| - 2 jokers, C2)."""
        built = self.built
        assert built is not None
        out: list[Copy] = []
        for i, cand in enumerate(built.cands):
            n = round(values[built.x_cols[i]])
            if n <= 0:
                continue
            slots: list[list[Face]] = [[] for _ in range(n)]
            k = 0
            for f in cand.faces:
                for _ in range(round(values[self.j_cols[i, f]]) if self.j_cols else 0):
                    slots[k % n].append(f)
                    k += 1
            for held in slots:
                out.append(Copy(tuple(f for f in cand.faces if f not in held), len(held),
                                cand.is_run))
        laid = round(values[self.u_col]) if self.u_col is not None else 0
        return laid, out


class _Attaches:
    """The a columns of a bounded play (see the module docstring), then their reading."""

    def __init__(self, melds: tuple[ClassicTableMeld, ...], hand: Counter[Face],
                 hand_jokers: int, aces: Aces, jokers: _Jokers) -> None:
        self.melds = melds  # the melds not reworked
        self.hand = hand
        self.hand_jokers = hand_jokers
        self.aces = aces
        self.jokers = jokers
        self.cols: list[tuple[Attachment, int]] = []

    def add(self, built: Built) -> None:
        self.jokers.add(built)
        model = built.model
        for m in self.melds:
            one = model.row(-INF, 1.0)
            for ext in extensions(m.faces, self.aces):
                added = [f for f in ext if f not in m.faces]
                naturals = tuple(f for f in added if self.hand[f] > 0)
                wild = len(added) - len(naturals)
                if wild > self.hand_jokers:
                    continue
                entries = [(built.face_row[f], 1.0) for f in naturals] + [(one, 1.0)]
                if wild:
                    assert self.jokers.row is not None
                    entries.append((self.jokers.row, float(wild)))
                self.cols.append((Attachment(m.id, naturals, wild),
                                  model.var(0.0, 1.0, entries)))
        if not built.start and model.cost:  # nothing placed, every column given (0)
            built.start[0] = 0.0

    def read(self, values: tuple[float, ...]) -> tuple[Attachment, ...]:
        return tuple(a for a, col in self.cols if round(values[col]) == 1)


def solve_classic(pos: ClassicPosition, time_limit_s: float = TIME_LIMIT_S,
                  rework: Collection[int] | None = None) -> ClassicSolution:
    """The play that puts the most hand cards on a valid table (see the module docstring),
    reworking only the melds of `rework` (None: every one) and attaching to the others."""
    naturals = tuple(c for c in pos.hand if isinstance(c, Card))
    hand_jokers = sum(1 for c in pos.hand if isinstance(c, Joker))
    melds = pos.melds if rework is None else tuple(m for m in pos.melds if m.id in rework)
    table_jokers = sum(m.jokers for m in melds)
    start_jokers: dict[tuple[Face, ...], list[Face]] = {}
    for m in melds:  # (the joker faces of every meld, for the start)
        nat = {face_of(c) for c in m.cards}
        start_jokers.setdefault(m.faces, []).extend(f for f in m.faces if f not in nat)
    jokers = _Jokers(hand_jokers, table_jokers, pos.opening, pos.variants.aces, start_jokers)
    attach: _Attaches | None = None
    add = jokers.add
    if len(melds) < len(pos.melds):
        ids = {m.id for m in melds}
        attach = _Attaches(tuple(m for m in pos.melds if m.id not in ids),
                           Counter(face_of(c) for c in naturals), hand_jokers,
                           pos.variants.aces, jokers)
        add = attach.add
    shape = ClassicShape(pos.variants.aces, hand_jokers + table_jokers, pos.variants.decks)
    position = Position(hand=naturals, pozzetto=(), melds=melds, fixed=())
    solution = solve(position, Rules(time_limit_s=time_limit_s), shape,
                     Extension(hand_jokers, table_jokers, add))
    reworked = None if rework is None else tuple(m.id for m in melds)
    if not solution.columns:
        return ClassicSolution(0, (), solution.status, solution.solve_ms, solution.size,
                               reworked=reworked)
    laid_jokers, copies = jokers.copies(solution.columns)
    attaches = attach.read(solution.columns) if attach is not None else ()
    return ClassicSolution(solution.placed + laid_jokers, tuple(copies), solution.status,
                           solution.solve_ms, solution.size, attaches, reworked)
