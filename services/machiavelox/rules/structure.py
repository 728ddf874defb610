"""What runs and sets can still become (M3): the structure that cuts the least-work search
(trial.py), on faces `(rank - 1) * 4 + suit` (a card's two copies share a face).

`viable`: can one regular meld hold every card that stays in a piece (no later op moves it),
with the cards there and those that may still arrive? A branch of the search that leaves a
judged piece unable to is over. The faces that may arrive are kept as one int (`code`, `bring`)
so that the answer is remembered across searches (`viable_coded`).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence

from .cards import Card
from .melds import FULL_CIRCLE, MAX_RUN_BEFORE_SPLIT


def viable(stay: Collection[Card], able: Collection[Card]) -> bool:
    """Can a regular meld (M3) hold every card of `stay`, with cards of `able` only (`stay`
    among them)? A run: one suit, a stretch of the circle every rank of which `able` has
    (twice over the ranks that `stay` holds twice: a run round the circle, M3.3); a set: one
    rank, distinct suits, three or four of them among `able`."""
    have = [0] * 52
    for c in able:
        have[face(c)] += 1
    return viable_faces(sorted(face(c) for c in stay), have)


def face(c: Card) -> int:
    return (c.rank - 1) * 4 + c.suit


def viable_faces(stay: Sequence[int], have: Sequence[int]) -> bool:
    """`viable` on faces (rank-1)*4 + suit: `stay` (with repeats), `have` counts per face."""
    if not stay:
        return True
    rank, suit = divmod(stay[0], 4)
    same_rank = all(f // 4 == rank for f in stay)
    if same_rank and len(set(stay)) == len(stay) and sum(
            1 for t in range(4) if have[rank * 4 + t]) >= 3:
        return True  # M3.4
    if any(f % 4 != suit for f in stay):
        return False
    count = [0] * (FULL_CIRCLE + 1)
    for r in range(FULL_CIRCLE):
        count[r + 1] = have[r * 4 + suit]
    need = [0] * (FULL_CIRCLE + 1)
    for f in stay:
        need[f // 4 + 1] += 1
    twice = [r for r in range(1, FULL_CIRCLE + 1) if need[r] == 2]
    if not twice:
        return _in_one_stretch([r for r in range(1, FULL_CIRCLE + 1) if need[r]],
                               [x >= 1 for x in count], 3)
    # round the circle: every rank, and the ranks held twice inside one stretch held twice
    if any(count[r] == 0 for r in range(1, FULL_CIRCLE + 1)):
        return False
    return _in_one_stretch(twice, [x >= 2 for x in count], 1)


def _in_one_stretch(ranks: Sequence[int], present: Sequence[bool], least: int) -> bool:
    """Do `ranks` lie in one stretch of the circle of ranks that are all `present`, of at least
    `least` ranks?"""
    if all(present[1:]):
        return least <= FULL_CIRCLE
    # the stretch around ranks[0]: walk down and up while present
    start = ranks[0]
    lo = start
    while present[(lo - 2) % FULL_CIRCLE + 1] and (lo - 2) % FULL_CIRCLE + 1 != start:
        lo = (lo - 2) % FULL_CIRCLE + 1
    length = 0
    inside: set[int] = set()
    r = lo
    while present[r] and length < FULL_CIRCLE:
        inside.add(r)
        length += 1
        r = r % FULL_CIRCLE + 1
    return length >= least and all(x in inside for x in ranks)


def long_run_possible(cards: Iterable[Card]) -> bool:
    """Could these cards make a run of more than 10 (the only run that splits as it grows)?"""
    ranks: dict[int, set[int]] = {}
    for c in cards:
        ranks.setdefault(c.suit, set()).add(c.rank)
    return any(len(rs) > MAX_RUN_BEFORE_SPLIT for rs in ranks.values())


def code(cards: Iterable[Card]) -> int:
    """A multiset of faces as one int: 4 bits per face (`_face`), a count in each."""
    code = 0
    for c in cards:
        code += 1 << (((c.rank - 1) * 4 + c.suit) << 2)
    return code


def bring(code: int, cards: Iterable[Card]) -> int:
    """`code` with `cards` added, each face counted up to 2 only (`viable_faces` asks for one
    or two), so that a card brought back many times never overflows into the next face."""
    for c in cards:
        shift = ((c.rank - 1) * 4 + c.suit) << 2
        if (code >> shift) & 15 < 2:
            code += 1 << shift
    return code


def _counts(code: int) -> list[int]:
    return [(code >> (f << 2)) & 15 for f in range(52)]


@functools.lru_cache(maxsize=1 << 16)
def viable_coded(stay: int, here: int, brought: int) -> bool:
    """`viable_faces` for the faces that stay, those of the meld, those that may arrive (each
    a `code`): a pure function, remembered across searches."""
    have = [a + b for a, b in zip(_counts(here), _counts(brought), strict=True)]
    faces = [f for f, n in enumerate(_counts(stay)) for _ in range(n)]
    return viable_faces(faces, have)

