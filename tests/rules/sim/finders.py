"""Which actions look sensible on a table: pure queries for the agents, the Hypothesis machines
and the benchmarks. They never change the table.

Plans name melds by a card in them (an anchor), not by id, since ids change with splits: a
`Step` turns into an action on the table as it is when its turn comes (None: stale, skipped).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from itertools import combinations

from machiavelox.rules import (
    Action,
    Card,
    Declare,
    Move,
    Place,
    Seat,
    Suit,
    Table,
    is_regular,
)
from machiavelox.rules.melds import split_on_removal

from .engine import calata_is_open, held_cards, live_ops, trial_cards_by_meld

Step = Callable[[Table], Action | None]


# --------------------------------------------------------------------------- melds
def alike(cards: Collection[Card], c: Card) -> bool:
    """Could `c` join `cards` in a meld at all: the same rank as all of them, or the same suit
    (M3.1, M3.4)?"""
    return all(x.rank == c.rank for x in cards) or all(x.suit == c.suit for x in cards)


def promising(cards: Sequence[Card]) -> bool:
    """Regular (M3), or fewer than 3 cards that one or two more could complete (a meld being
    built in a rearrangement)."""
    if len(cards) >= 3:
        return is_regular(cards)
    if len({c.rank for c in cards}) == 1:
        return len({c.suit for c in cards}) == len(cards)
    if len({c.suit for c in cards}) > 1 or len(cards) != 2:
        return False
    return (cards[0].rank - cards[1].rank) % 13 in (1, 2, 11, 12)


def takes(meld: Sequence[Card], c: Card, *, partial: bool = False) -> bool:
    """Does `meld` stay regular (M3) with `c` added (`partial`: or stay on its way to be)?"""
    if c in meld or not alike(meld, c):
        return False
    return promising([*meld, c]) if partial else is_regular([*meld, c])


def leaves_order(meld: Sequence[Card], c: Card) -> bool:
    """Does taking `c` out of its meld leave it regular (both sides of an interior removal,
    M3.6 and the interior-removal decision)? Not when it empties the meld: that takes a meld
    away rather than rearranging it."""
    halves = split_on_removal(meld, c)
    if halves is not None:
        return all(is_regular(h) for h in halves)
    return is_regular([x for x in meld if x is not c])


def melds_among(cards: Collection[Card], limit: int = 30,
                longest: int = 5) -> list[tuple[Card, ...]]:
    """Regular melds among `cards`, at most `limit`: sets of 3 and 4 distinct suits (M3.4),
    then runs of 3 to `longest` consecutive cards of a suit (M3.1, round the Ace, M3.2)."""
    by_rank: dict[int, dict[Suit, Card]] = {}
    by_suit: dict[Suit, dict[int, Card]] = {}
    for c in sorted(cards):
        by_rank.setdefault(c.rank, {}).setdefault(c.suit, c)
        by_suit.setdefault(c.suit, {}).setdefault(c.rank, c)
    out: list[tuple[Card, ...]] = []
    for suits in by_rank.values():
        picked = tuple(suits.values())
        out += combinations(picked, 3)
        if len(picked) == 4:
            out.append(picked)
    for ranks in by_suit.values():
        for r, c in ranks.items():
            meld = [c]
            for k in range(1, longest):
                nxt = ranks.get((r - 1 + k) % 13 + 1)
                if nxt is None:
                    break
                meld.append(nxt)
                if len(meld) >= 3:
                    out.append(tuple(meld))
    return out[:limit]


# --------------------------------------------------------------------------- the table
def _shapes(table: Table) -> list[tuple[int, list[Card], int, int]]:
    """Per meld, by id: (id, cards, its only rank or 0, its only suit or -1)."""
    out = []
    for mid, m in sorted(table.board.melds.items()):
        ranks, suits = {c.rank for c in m}, {int(c.suit) for c in m}
        out.append((mid, m, ranks.pop() if len(ranks) == 1 else 0,
                    suits.pop() if len(suits) == 1 else -1))
    return out


def fits(table: Table, cards: Collection[Card], *,
         partial: bool = False) -> list[tuple[Card, int]]:
    """(card, meld) pairs, by meld id then card, where the card leaves the meld regular (M3),
    or (`partial`) on its way to be."""
    return _fits(_shapes(table), cards, partial)


def _fits(shapes: list[tuple[int, list[Card], int, int]], cards: Collection[Card],
          partial: bool) -> list[tuple[Card, int]]:
    test = promising if partial else is_regular
    ordered = sorted(cards)
    return [(c, mid) for mid, m, rank, suit in shapes for c in ordered
            if (c.rank == rank or c.suit == suit) and c not in m and test([*m, c])]


def misfits(table: Table, cards: Collection[Card]) -> list[tuple[Card, int]]:
    """(card, meld) pairs where the card would leave the meld irregular (a blunder)."""
    ordered = sorted(cards)
    return [(c, mid) for mid, m, rank, suit in _shapes(table) for c in ordered
            if c not in m and not ((c.rank == rank or c.suit == suit) and is_regular([*m, c]))]


def free_table_cards(table: Table, seat: Seat) -> list[Card]:
    """Table cards `seat` may move: not held by another player (M6.4), not reserved for
    another (M6.5)."""
    held = held_cards(table, but=seat)
    return [c for c in table.board.where if c not in held
            and table.reserved.get(c, seat) == seat]


@dataclass(frozen=True)
class TrialWork:
    """Other players' work on trial (M5.4.3), as `seat` sees it."""

    cards: dict[int, set[Card]]  # meld -> its cards last brought by another's open calata
    melds: set[int]  # the live melds such work touched (sources of moves included)


def trial_work(table: Table, seat: Seat) -> TrialWork:
    melds: set[int] = set()
    for op in live_ops(table):
        if op.player != seat and calata_is_open(table, op.calata):
            melds.update(m for m in op.touched if m in table.board.melds)
    return TrialWork(trial_cards_by_meld(table, seat), melds)


def leans(table: Table, seat: Seat, cards: Collection[Card]) -> list[tuple[Card, int]]:
    """(card, meld) pairs where the card fits the meld only thanks to another player's cards
    on trial (M5.4.4: the card needs them, and falls with them, M5.5)."""
    out: list[tuple[Card, int]] = []
    for mid, trial in sorted(trial_cards_by_meld(table, seat).items()):
        meld = table.board.melds[mid]
        without = [c for c in meld if c not in trial]
        for x in sorted(cards):
            if is_regular([*meld, x]) and not is_regular([*without, x]):
                out.append((x, mid))
    return out


# --------------------------------------------------------------------------- plans
def fixed(action: Action) -> Step:
    return lambda t: action


def move_to(p: Seat, y: Card, anchor: Card | None) -> Step:
    """Move `y` from wherever it is to the meld holding `anchor` (None: a new meld)."""
    def step(t: Table) -> Action | None:
        src = t.board.where.get(y)
        dst = None if anchor is None else t.board.where.get(anchor)
        if src is None or (anchor is not None and dst is None):
            return None
        return Move(p, y, src, dst)
    return step


def place_at(p: Seat, x: Card, anchor: Card) -> Step:
    def step(t: Table) -> Action | None:
        mid = t.board.where.get(anchor)
        return None if mid is None else Place(p, x, mid)
    return step


def rearrangements(table: Table, p: Seat, rng: random.Random,
                   limit: int = 4) -> list[list[Step]]:
    """Declare-move-place plans (M5.3) for hand cards that no meld takes as they are:
    make room (y leaves S for D, then x fits D: ``4C 5C 6C`` + 7C from a full set of sevens,
    then 8C), swap (x takes y's place in S, y goes to D), and new meld (y1 and y2 leave their
    melds and make a new one with x)."""
    melds, where = table.board.melds, table.board.where
    shapes = _shapes(table)
    fitting = {c for c, _ in _fits(shapes, table.players[p].hand, False)}
    hand = [x for x in sorted(table.players[p].hand) if x not in fitting]
    if not hand:
        return []
    rng.shuffle(hand)
    ys = free_table_cards(table, p)
    rng.shuffle(ys)
    ys = ys[:10]
    leavers = [y for y in ys if leaves_order(melds[where[y]], y)]
    out: list[list[Step]] = []
    for x in hand[:2]:
        for y in ys:
            src = where[y]
            rest = [c for c in melds[src] if c is not y]
            leaves = y in leavers
            swap = bool(rest) and alike(rest, x) and is_regular([*rest, x])
            if not leaves and not swap:
                continue
            for dst, d, rank, suit in shapes:
                if dst == src or not (y.rank == rank or y.suit == suit):  # alike(d, y)
                    continue
                with_y = [*d, y]
                if leaves and alike(with_y, x) and is_regular([*with_y, x]):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y, d[0]),
                                place_at(p, x, d[0])])
                elif swap and is_regular(with_y):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y, d[0]),
                                place_at(p, x, rest[0])])
                if len(out) >= limit:
                    return out
        for i, y1 in enumerate(leavers):
            for y2 in leavers[i + 1:]:
                if where[y1] != where[y2] and is_regular([x, y1, y2]):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y1, None),
                                move_to(p, y2, y1), place_at(p, x, y1)])
                    if len(out) >= limit:
                        return out
    return out
