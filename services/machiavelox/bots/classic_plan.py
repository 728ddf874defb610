"""From a classic solution (melds as faces and jokers) to the turn's actions: meld, attach,
move, swap, end, draw (C2, C5), and a check of the whole turn before it is played.

Physical cards first: every meld afterwards takes as home the table meld it overlaps most
(naturals of its faces, and jokers) and keeps those cards; the other table cards move (every
table card finds a place: the solution keeps them all on the table), then hand cards fill the
rest. A classic table is judged only at `End` (C5; a meld emptied by moves disappears, nothing
splits by itself), so any order of gestures reaches the same table:

- a meld with a home: `Move` of its table cards in, then `Attach` of its hand cards;
- a new meld with table cards: the first `Move` to a new meld, the others after it;
- a new meld of hand cards alone: one `Meld` (the only gesture before the opening, C8);
- hand cards onto a meld a bounded level does not rework (`ClassicSolution.attaches`): an
  `Attach` each; only the melds it reworks give or take table cards;
- then `End`.

Destinations are named by a card they hold (`ClassicStep.anchor`) and turned into meld ids on
the live view (`resolve`). `check` plays the whole turn on a copy of the table and accepts it
only if `End` would be: every meld valid (C2, C3), a hand card played (C5), before the
opening only new melds of hand cards worth the threshold (C8). No refusal the view could
predict is ever sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from machiavelox.classic import (
    Attach,
    ClassicAction,
    ClassicCard,
    ClassicView,
    Draw,
    End,
    Joker,
    Meld,
    Move,
    Restore,
    Seat,
    Swap,
    is_valid,
    opening_value,
)
from machiavelox.rules import Card

from .candidates import Face, face_of
from .classic_solver import ClassicPosition, ClassicSolution

MELD, ATTACH, MOVE, SWAP, END, DRAW, RESTORE = (
    "meld", "attach", "move", "swap", "end", "draw", "restore")


@dataclass(frozen=True, slots=True)
class ClassicStep:
    kind: str
    cards: tuple[ClassicCard, ...] = ()
    anchor: ClassicCard | None = None  # the destination: the meld holding it (None: new)
    joker: Joker | None = None  # a swap's joker


END_STEP = ClassicStep(END)
DRAW_STEP = ClassicStep(DRAW)
RESTORE_STEP = ClassicStep(RESTORE)


@dataclass
class _Build:
    naturals: tuple[Face, ...]
    jokers: int
    home: int | None = None
    stay: tuple[ClassicCard, ...] = ()
    table_in: tuple[ClassicCard, ...] = ()
    hand_in: tuple[ClassicCard, ...] = ()


def build_plan(pos: ClassicPosition, sol: ClassicSolution) -> list[ClassicStep] | None:
    """The turn's steps for `sol` (ending with `End`), or None when it places nothing or its
    cards do not add up (never for a consistent solution)."""
    if sol.placed == 0:
        return None
    builds = [_Build(c.naturals, c.jokers) for c in sol.copies]
    touchable = {m.id: pos.table[m.id] for m in pos.melds
                 if sol.reworked is None or m.id in sol.reworked}
    _homes(builds, touchable)
    free_nat: dict[Face, list[ClassicCard]] = {}
    free_jok: list[ClassicCard] = []
    staying = {c for b in builds for c in b.stay}
    for cards in touchable.values():
        for c in cards:
            if c not in staying:
                _pile(c, free_nat, free_jok)
    hand_nat: dict[Face, list[ClassicCard]] = {}
    hand_jok: list[ClassicCard] = []
    for c in sorted(pos.hand, key=lambda c: c.index, reverse=True):
        _pile(c, hand_nat, hand_jok)
    for b in builds:
        have = {face_of(c) for c in b.stay if isinstance(c, Card)}
        jokers = sum(1 for c in b.stay if isinstance(c, Joker))
        table_in: list[ClassicCard] = []
        hand_in: list[ClassicCard] = []
        for f in b.naturals:
            if f in have:
                continue
            if free_nat.get(f):
                table_in.append(free_nat[f].pop())
            elif hand_nat.get(f):
                hand_in.append(hand_nat[f].pop())
            else:
                return None
        for _ in range(b.jokers - jokers):
            if free_jok:
                table_in.append(free_jok.pop())
            elif hand_jok:
                hand_in.append(hand_jok.pop())
            else:
                return None
        b.table_in, b.hand_in = tuple(table_in), tuple(hand_in)
    if free_jok or any(free_nat.values()):
        return None  # a table card left without a meld
    steps: list[ClassicStep] = []
    for b in builds:
        if b.stay:
            anchor: ClassicCard = b.stay[0]
            steps += [ClassicStep(MOVE, (c,), anchor) for c in b.table_in]
        elif b.table_in:
            anchor = b.table_in[0]
            steps.append(ClassicStep(MOVE, (anchor,), None))
            steps += [ClassicStep(MOVE, (c,), anchor) for c in b.table_in[1:]]
        else:
            steps.append(ClassicStep(MELD, b.hand_in))
            continue
        steps += [ClassicStep(ATTACH, (c,), anchor) for c in b.hand_in]
    for a in sol.attaches:  # hand cards onto a meld the play does not rework
        added: list[ClassicCard] = []
        for f in a.naturals:
            if not hand_nat.get(f):
                return None
            added.append(hand_nat[f].pop())
        if len(hand_jok) < a.jokers:
            return None
        added += [hand_jok.pop() for _ in range(a.jokers)]
        steps += [ClassicStep(ATTACH, (c,), pos.table[a.meld][0]) for c in added]
    return [*steps, END_STEP]


def reworked(pos: ClassicPosition, steps: Sequence[ClassicStep]) -> set[int]:
    """The table melds (as at the turn's start) that `steps` take a card from, move a table
    card into or swap a joker of: what a level's `depth` bounds (hand cards attached to a
    meld do not rework it)."""
    where = {c: mid for mid, cards in pos.table.items() for c in cards}
    moved = {c for step in steps if step.kind == MOVE for c in step.cards}
    out: set[int] = set()
    for step in steps:
        if step.kind == MOVE:
            out.add(where[step.cards[0]])
            if step.anchor is not None and step.anchor not in moved and step.anchor in where:
                out.add(where[step.anchor])
        elif step.kind == SWAP and step.joker is not None:
            out.add(where[step.joker])
    return out


def _pile(c: ClassicCard, naturals: dict[Face, list[ClassicCard]],
          jokers: list[ClassicCard]) -> None:
    if isinstance(c, Card):
        naturals.setdefault(face_of(c), []).append(c)
    else:
        jokers.append(c)


def _homes(builds: list[_Build], table: Mapping[int, tuple[ClassicCard, ...]]) -> None:
    """Each meld afterwards keeps the cards of the table meld it overlaps most (fewest moves)."""
    pairs: list[tuple[int, int, int]] = []
    for i, b in enumerate(builds):
        want = set(b.naturals)
        for mid, cards in table.items():
            fit = len(want & {face_of(c) for c in cards if isinstance(c, Card)})
            fit += min(b.jokers, sum(1 for c in cards if isinstance(c, Joker)))
            if fit:
                pairs.append((-fit, i, mid))
    taken: set[int] = set()
    for _, i, mid in sorted(pairs):
        b = builds[i]
        if b.home is not None or mid in taken:
            continue
        b.home = mid
        taken.add(mid)
        want = set(b.naturals)
        stay: list[ClassicCard] = []
        jokers = b.jokers
        for c in table[mid]:
            if isinstance(c, Card) and face_of(c) in want:
                want.discard(face_of(c))
                stay.append(c)
            elif isinstance(c, Joker) and jokers:
                jokers -= 1
                stay.append(c)
        b.stay = tuple(stay)


def swap_step(pos: ClassicPosition) -> ClassicStep | None:
    """A hand card that takes a table joker's place, the meld staying valid (C2): a turn that
    places nothing else still ends without a draw (the hand keeps its size, the joker)."""
    if not pos.opened:
        return None  # C8: no swap before the opening
    naturals = sorted((c for c in pos.hand if isinstance(c, Card)), key=lambda c: c.index)
    for m in pos.melds:
        cards = pos.table[m.id]
        for joker in (c for c in cards if isinstance(c, Joker)):
            for c in naturals:
                if is_valid([c if x == joker else x for x in cards], pos.variants.aces):
                    return ClassicStep(SWAP, (c,), None, joker)
    return None


# ---------------------------------------------------------------------------- resolution
def where_of(view: ClassicView) -> dict[ClassicCard, int]:
    return {c: m.id for m in view.table for c in m.cards}


def resolve(step: ClassicStep, where: Mapping[ClassicCard, int], seat: Seat
            ) -> ClassicAction | None:
    """The engine action for `step` on a table whose cards are `where`, or None when the
    table does not hold what the step names."""
    match step.kind:
        case "meld":
            return Meld(seat, step.cards)
        case "attach":
            if step.anchor is None or step.anchor not in where:
                return None
            return Attach(seat, step.cards[0], where[step.anchor])
        case "move":
            card = step.cards[0]
            if card not in where or (step.anchor is not None and step.anchor not in where):
                return None
            dst = None if step.anchor is None else where[step.anchor]
            return Move(seat, card, where[card], dst)
        case "swap":
            card = step.cards[0]
            if step.joker is None or step.joker not in where or not isinstance(card, Card):
                return None
            return Swap(seat, card, step.joker, where[step.joker])
        case "end":
            return End(seat)
        case "draw":
            return Draw(seat)
        case "restore":
            return Restore(seat)
    raise ValueError(f"unknown step {step.kind!r}")


def check(pos: ClassicPosition, steps: Iterable[ClassicStep], seat: Seat) -> bool:
    """Play `steps` on a copy of the table: True when every gesture is possible and the final
    `End` would be accepted (see the module docstring)."""
    melds = {mid: list(cards) for mid, cards in pos.table.items()}
    where = {c: mid for mid, cards in melds.items() for c in cards}
    hand = set(pos.hand)
    next_id = max(melds, default=0) + 1
    played, new, only_new = 0, [], True
    for step in steps:
        action = resolve(step, where, seat)
        match action:
            case Meld(cards=cards):
                if len(cards) < 3 or not set(cards) <= hand or len(set(cards)) != len(cards):
                    return False
                hand -= set(cards)
                melds[next_id] = list(cards)
                where.update((c, next_id) for c in cards)
                new.append(next_id)
                next_id += 1
                played += len(cards)
            case Attach(card=card, meld=mid):
                if card not in hand:
                    return False
                hand.discard(card)
                melds[mid].append(card)
                where[card] = mid
                played += 1
                only_new = False
            case Move(card=card, src=src, dst=dst):
                melds[src].remove(card)
                if not melds[src]:
                    del melds[src]
                if dst is None:
                    dst, next_id = next_id, next_id + 1
                    melds[dst] = []
                elif dst == src or dst not in melds:
                    return False
                melds[dst].append(card)
                where[card] = dst
                only_new = False
            case Swap(card=card, joker=joker, meld=mid):
                swapped = [card if c == joker else c for c in melds[mid]]
                if card not in hand or not is_valid(swapped, pos.variants.aces):
                    return False
                melds[mid] = swapped
                del where[joker]
                where[card] = mid
                hand.discard(card)
                hand.add(joker)
                played += 1
                only_new = False
            case End():
                if played == 0 or not all(is_valid(m, pos.variants.aces)
                                          for m in melds.values()):
                    return False
                if pos.opening:
                    worth = sum(opening_value(melds[m], pos.variants.aces) for m in new)
                    return only_new and worth >= pos.opening
                return True
            case _:
                return False
    return False
