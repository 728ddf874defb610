"""From a solution (target melds, as faces) to the gestures that build it, in an order the
engine accepts.

Physical cards first: each target keeps the cards of its home meld (a kept meld extended in
place, or a meld taken apart whose cards overlap it most), then takes the table cards that
must move (all of them find a place: M3.6), then pool cards. Then the gestures:

- nothing on the table moves and no pozzetto is open: one Attach per card (M5.2);
- otherwise DECLARE the pool cards (M5.3, the 40 s start), MOVE table cards one at a time
  (a meld built anew starts with a card moved to a new meld), then the direct melds of pool
  cards alone (M5.1), then PLACE the rest; the calata then concludes by itself when its
  pozzetto is empty and its work in order (rules decision), or by an explicit Conclude when
  pozzetto cards are left (M5.3.6).

Moves are ordered on a model of the table (`board_model.py`) so that no split (interior
removal, runs over 10, M3.3) separates the cards a target keeps; the result is checked on the
model, and a target whose home cannot be kept together is built anew instead (with every
target built anew the plan is always right: new melds of at most 10 cards never split).
Destinations are named by a card they hold (`Step.anchor`), resolved on the live view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from machiavelox.rules import Card, is_regular

from .board_model import BoardModel
from .candidates import Face, face_of
from .position import Position
from .solver import Solution, Target

DECLARE, MOVE, DIRECT, PLACE, ATTACH, CONCLUDE = (
    "declare", "move", "direct", "place", "attach", "conclude")


@dataclass(frozen=True, slots=True)
class Step:
    kind: str
    cards: tuple[Card, ...]
    anchor: Card | None = None  # destination: the meld holding this card (None: a new meld)
    before: frozenset[frozenset[Card]] = frozenset()  # the plan's melds just before the step


@dataclass(frozen=True, slots=True)
class Plan:
    steps: tuple[Step, ...]
    placed: int  # pool cards put on the table
    closes: bool  # the pool ends empty (M8.1)
    has_direct: bool  # a direct meld among the steps (M8.2(2))
    universe: frozenset[Card]  # the cards of the melds the plan works on
    moves: int = 0


@dataclass
class _Build:
    target: Target
    stay: list[Card] = field(default_factory=list)  # table cards already in its home meld
    table_in: list[Card] = field(default_factory=list)  # table cards moved into it
    pool_in: list[Card] = field(default_factory=list)  # pool cards placed into it

    @property
    def cards(self) -> list[Card]:
        return self.stay + self.table_in + self.pool_in


def build_plan(position: Position, solution: Solution) -> Plan | None:
    """The gestures for `solution`, or None when it places nothing."""
    if solution.placed == 0:
        return None
    fresh: set[int] = set()
    for _ in range(len(solution.targets) + 1):
        builds = _assign(position, solution, fresh)
        plan, apart = _order(position, builds, solution)
        if plan is not None:
            return plan
        homed = {i for i, b in enumerate(builds) if b.stay}
        if not homed:
            break
        fresh |= (apart & homed) or homed
    return None  # not reached for a consistent solution (all-new targets always work)


def _assign(position: Position, solution: Solution, fresh: set[int]) -> list[_Build]:
    """Physical cards for every target. `fresh`: targets that must be built anew."""
    by_id = {m.id: m for m in position.melds}
    builds = [_Build(t) for t in solution.targets]
    homes: dict[int, int] = {}  # target index -> meld id
    for i, t in enumerate(solution.targets):
        if t.home is not None and i not in fresh:
            homes[i] = t.home
    taken = set(homes.values())
    broken = [mid for mid in solution.broken if mid in by_id]
    pairs = []
    for i, t in enumerate(solution.targets):
        if i in homes or i in fresh or t.direct:
            continue
        for mid in broken:
            overlap = len(set(t.faces) & {face_of(c) for c in by_id[mid].cards})
            if overlap >= 2:
                pairs.append((-overlap, i, mid))
    for _, i, mid in sorted(pairs):
        if i not in homes and mid not in taken:
            homes[i] = mid
            taken.add(mid)
    free: dict[Face, list[Card]] = {}
    for i, home in homes.items():
        b = builds[i]
        want = set(b.target.faces)
        for c in by_id[home].cards:
            if face_of(c) in want:
                want.discard(face_of(c))
                b.stay.append(c)
    staying = {c for b in builds for c in b.stay}
    for mid in solution.broken:
        for c in by_id[mid].cards:
            if c not in staying:
                free.setdefault(face_of(c), []).append(c)
    for i, t in enumerate(solution.targets):  # kept homes built anew: their cards move
        if t.home is not None and i in fresh:
            for c in by_id[t.home].cards:
                free.setdefault(face_of(c), []).append(c)
    pool: dict[Face, list[Card]] = {}
    for c in position.hand + position.pozzetto:  # pop() takes pozzetto cards first
        pool.setdefault(face_of(c), []).append(c)
    for b in sorted(builds, key=lambda b: b.target.direct):  # direct melds: pool only
        have = {face_of(c) for c in b.stay}
        for f in b.target.faces:
            if f in have:
                continue
            if not b.target.direct and free.get(f):
                b.table_in.append(free[f].pop())
            else:
                b.pool_in.append(pool[f].pop())
    return builds


def _order(position: Position, builds: list[_Build],
           solution: Solution) -> tuple[Plan | None, set[int]]:
    """The plan, or None and the targets that did not come out whole on the model."""
    by_id = {m.id: m for m in position.melds}
    sources = set(solution.broken) | {t.home for t in solution.targets if t.home is not None}
    model = BoardModel(by_id[mid].cards for mid in sorted(sources) if mid in by_id)
    played = [c for b in builds for c in b.pool_in]
    universe = frozenset({c for mid in sources if mid in by_id for c in by_id[mid].cards}
                         | set(played))
    pozzetto = set(position.pozzetto)
    moves = [(c, i) for i, b in enumerate(builds) for c in b.table_in]
    simple = not moves and not pozzetto and not position.tiebreak and not position.stop and \
        all(b.stay for b in builds)
    steps: list[Step] = []
    if simple:  # M5.2: attach hand cards one by one (each a calata of its own)
        for b in builds:
            for c in _outward(b.stay, b.pool_in):
                steps.append(Step(ATTACH, (c,), b.stay[0], model.shape(universe)))
                model.add(c, model.where[b.stay[0]])
    else:
        declare = tuple(c for c in played if c not in pozzetto)
        if declare:
            steps.append(Step(DECLARE, _sorted(declare), None, model.shape(universe)))
        anchors: dict[int, Card] = {i: b.stay[0] for i, b in enumerate(builds) if b.stay}
        pending = list(moves)
        moved: set[Card] = set()
        while pending:
            card, i = pending.pop(_next_move(model, builds, anchors, moved, pending))
            anchor = anchors.get(i)
            steps.append(Step(MOVE, (card,), anchor, model.shape(universe)))
            model.move(card, anchor)
            moved.add(card)
            anchors.setdefault(i, card)
        for i, b in enumerate(builds):
            if i not in anchors:  # the pool alone: a direct meld (M5.1)
                steps.append(Step(DIRECT, _sorted(b.pool_in), None, model.shape(universe)))
                anchors[i] = b.pool_in[0]
                model.new(b.pool_in)
        for i, b in enumerate(builds):
            if b.stay or b.table_in:
                for c in _outward(b.stay + b.table_in, b.pool_in):
                    steps.append(Step(PLACE, (c,), anchors[i], model.shape(universe)))
                    model.add(c, model.where[anchors[i]])
        left = pozzetto - set(played)
        if left:  # unplaced pozzetto cards go back to the hand at the conclusion (M5.3.6)
            steps.append(Step(CONCLUDE, (), None, model.shape(universe)))
    final = model.shape(universe)
    if final != frozenset(frozenset(b.cards) for b in builds) or \
            not all(is_regular(m) for m in final):
        return None, {i for i, b in enumerate(builds) if frozenset(b.cards) not in final}
    return Plan(tuple(steps), len(played), len(played) == len(position.pool),
                any(s.kind == DIRECT for s in steps), universe, len(moves)), set()


def _next_move(model: BoardModel, builds: list[_Build], anchors: dict[int, Card],
               moved: set[Card], pending: list[tuple[Card, int]]) -> int:
    """The first pending move after which every target's gathered cards (those it keeps and
    those already moved into it) still sit in one meld: no split came between them (M3.3,
    interior removal). The first move when none is (the plan is then checked and rebuilt)."""
    for k, (card, i) in enumerate(pending):
        trial = model.copy()
        trial.move(card, anchors.get(i))
        now = moved | {card}
        if all(len({trial.where[c] for c in b.stay + b.table_in if c in b.stay or c in now})
               <= 1 for b in builds):
            return k
    return 0


def _outward(kept: Iterable[Card], adding: list[Card]) -> list[Card]:
    """Cards to add to a meld, nearest to its cards first (a run grows from its ends)."""
    ranks = {c.rank for c in kept}
    out: list[Card] = []
    rest = list(adding)
    while rest:
        best = min(rest, key=lambda c: min((_dist(c.rank, r) for r in ranks), default=0))
        rest.remove(best)
        out.append(best)
        ranks.add(best.rank)
    return out


def _dist(a: int, b: int) -> int:
    d = abs(a - b) % 13
    return min(d, 13 - d)


def _sorted(cards: Iterable[Card]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.suit, c.rank, c.copy)))

