"""Move finders for random players (property tests, random simulations): which actions look
sensible on a table. Pure queries of the table; they never change it.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from machiavelox.rules import (
    ALL_CARDS,
    Action,
    Attach,
    Cancel,
    Card,
    Conclude,
    Declare,
    Direct,
    Draw,
    Move,
    Place,
    Put,
    Release,
    Seat,
    Table,
    Take,
    Undeclare,
    is_regular,
)
from machiavelox.rules.melds import split_on_removal
from machiavelox.rules.state import CalataStatus


def promising(cards: Sequence[Card]) -> bool:
    """Regular (M3), or fewer than 3 cards that one or two more could complete."""
    if len(cards) >= 3:
        return is_regular(cards)
    if len({c.rank for c in cards}) == 1:
        return len({c.suit for c in cards}) == len(cards)
    if len({c.suit for c in cards}) > 1 or len(cards) != 2:
        return False
    gap = (cards[0].rank - cards[1].rank) % 13
    return gap in (1, 2, 11, 12)


def fits(table: Table, cards: Collection[Card]) -> list[tuple[Card, int]]:
    """(card, meld) pairs where the card would leave the meld regular, or on its way to be
    (a meld of fewer than 3 cards being built in a rearrangement)."""
    shapes = []  # (id, meld, its only rank or 0, its only suit or -1)
    for mid, m in sorted(table.board.melds.items()):
        ranks, suits = {c.rank for c in m}, {int(c.suit) for c in m}
        shapes.append((mid, m, ranks.pop() if len(ranks) == 1 else 0,
                       suits.pop() if len(suits) == 1 else -1))
    out: list[tuple[Card, int]] = []
    for c in sorted(cards):
        for mid, m, rank, suit in shapes:
            if (c.rank == rank or c.suit == suit) and c not in m and promising([*m, c]):
                out.append((c, mid))
    return out


def regular_subsets(cards: Collection[Card], sizes: Sequence[int] = (3, 4),
                    limit: int = 30) -> list[tuple[Card, ...]]:
    """Regular melds (M3) among `cards`, at most `limit` of them (only cards sharing a rank or
    a suit can meld, so only those groups are searched)."""
    by_rank: dict[int, list[Card]] = {}
    by_suit: dict[int, list[Card]] = {}
    for c in sorted(cards):
        by_rank.setdefault(c.rank, []).append(c)
        by_suit.setdefault(c.suit, []).append(c)
    groups = [g for g in (*by_rank.values(), *by_suit.values()) if len(g) >= 3]
    out: list[tuple[Card, ...]] = []
    for k in sizes:
        for g in groups:
            for combo in combinations(g, k):
                if is_regular(combo):
                    out.append(combo)
                    if len(out) >= limit:
                        return out
    return out


def _leaves_order(cards: Sequence[Card], card: Card) -> bool:
    """Does taking `card` out of the meld leave it regular (both sides, for an interior card of
    a run: the interior-removal decision)?"""
    halves = split_on_removal(cards, card)
    if halves is not None:
        return all(is_regular(h) for h in halves)
    rest = [c for c in cards if c is not card]
    return not rest or is_regular(rest)


def _alike(cards: Sequence[Card], card: Card) -> bool:
    """Could `card` join `cards` in a meld: same rank as all of them, or same suit as all?"""
    return (all(c.rank == card.rank for c in cards)
            or all(c.suit == card.suit for c in cards))


def rearrangements(table: Table, seat: Seat, limit: int = 20) -> list[list[Action]]:
    """Declare-move-place plans (M5.3) for a hand card x that no meld takes as it is: a table
    card y leaves its meld S (which stays in order) for a meld D, after which x fits D
    (``4C 5C 6C`` + 7C from a full set of sevens, then 8C). The meld ids are those of now; a
    plan may go stale as others play (then it is refused)."""
    ps = table.players[seat]
    melds, where = table.board.melds, table.board.where
    held = {p.hold.card for p in table.players if p.hold is not None}
    direct = {c for c, _ in fits(table, ps.hand)}
    hand = [x for x in sorted(ps.hand) if x not in direct]
    by_face: dict[tuple[int, int], list[Card]] = {}
    for y in sorted(where):
        if y not in held:
            by_face.setdefault((y.rank, y.suit), []).append(y)
    out: list[list[Action]] = []
    for x in hand:
        for dst, d_cards in sorted(melds.items()):
            if not _alike(d_cards, x):
                continue
            # the missing face y between D and x, brought from its meld S
            faces = [*((r, x.suit) for r in range(1, 14)), *((x.rank, t) for t in range(4))]
            for face in faces:
                for y in by_face.get(face, ()):
                    src = where[y]
                    if (src != dst and is_regular([*d_cards, y, x])
                            and _leaves_order(melds[src], y)):
                        out.append([Declare(seat, (x,)), Move(seat, y, src, dst),
                                    Place(seat, x, dst)])
            if len(out) >= limit:
                return out[:limit]
    return out


def trial_cards(table: Table, seat: Seat) -> dict[int, set[Card]]:
    """Per meld, its cards on trial (M5.4.3) in the open calate of players other than `seat`:
    brought by a live op of an open calata."""
    out: dict[int, set[Card]] = {}
    for op in table.live_ops():
        cal = table.calate[op.calata]
        if cal.player == seat or cal.status is not CalataStatus.OPEN:
            continue
        for c in op.cards:
            mid = table.board.where.get(c)
            if mid is not None and table.board.last_op.get(c) == op.seq:
                out.setdefault(mid, set()).add(c)
    return out


def leans(table: Table, seat: Seat, cards: Collection[Card]) -> list[tuple[Card, int]]:
    """(card, meld) pairs where the card fits the meld only thanks to another player's cards
    on trial (M5.4.4: the card needs them, and falls with them, M5.5)."""
    out: list[tuple[Card, int]] = []
    for mid, trial in sorted(trial_cards(table, seat).items()):
        meld = table.board.melds[mid]
        without = [c for c in meld if c not in trial]
        for x in sorted(cards):
            if is_regular([*meld, x]) and not is_regular([*without, x]):
                out.append((x, mid))
    return out


# --------------------------------------------------------------------------- random players
@dataclass
class RandomPlayers:
    """Three hurried players sharing one random source: each call of `choose` is what one of
    them would try now; `tick` is when the next action arrives. Plans (declare, move, place;
    declare, direct) are carried out over several calls, while the others play."""

    rng: random.Random
    table: Table
    plans: dict[Seat, list[Action]] = field(default_factory=dict)

    def junk(self, p: Seat) -> Action:
        """Anything, by anyone: mostly refused."""
        rng = self.rng
        c = rng.choice(ALL_CARDS)
        some = tuple(rng.sample(ALL_CARDS, rng.randint(0, 3)))
        mid = rng.choice([*self.table.board.melds, 0, -1, 10_000])
        dst = rng.choice([None, mid, *self.table.board.melds])
        options: list[Action] = [
            Draw(p), Declare(p, some), Undeclare(p, some), Direct(p, some), Attach(p, c, mid),
            Place(p, c, mid), Take(p, c, mid), Put(p, dst), Move(p, c, mid, dst), Release(p),
            Conclude(p), Cancel(p)]
        return rng.choice(options)

    def choose(self, p: Seat) -> Action | None:
        """What a hurried but sensible player would try now (sometimes a blunder)."""
        rng, t = self.rng, self.table
        ps = t.players[p]
        if rng.random() < 0.06:
            return self.junk(p)
        plan = self.plans.get(p)
        if plan:
            return plan.pop(0)
        if ps.hold is not None:
            spots = [mid for _, mid in fits(t, [ps.hold.card])]
            if spots and rng.random() < 0.8:
                return Put(p, rng.choice(spots))
            loose: list[Action] = [Put(p, None), Release(p)]
            return rng.choice(loose)
        pozzetto, hand = sorted(ps.pozzetto), sorted(ps.hand)
        if pozzetto:
            r = rng.random()
            if r < 0.5 and (direct := regular_subsets(pozzetto, (3, 4, 5))):
                return Direct(p, rng.choice(direct))
            if r < 0.6 and (leaning := leans(t, p, pozzetto)):
                c, mid = rng.choice(leaning)
                return Place(p, c, mid)
            if r < 0.75 and (placing := fits(t, pozzetto)):
                c, mid = rng.choice(placing)
                return Place(p, c, mid)
            if r < 0.85 and (moving := [(c, mid) for c, mid in fits(t, t.board.where)
                                        if t.board.where[c] != mid]):
                c, mid = rng.choice(moving)
                return (Move(p, c, t.board.where[c], mid) if rng.random() < 0.7
                        else Take(p, c, t.board.where[c]))
            other: list[Action] = [Conclude(p), Cancel(p), Undeclare(p, (rng.choice(pozzetto),)),
                                   Declare(p, tuple(rng.sample(hand, min(1, len(hand)))))]
            return rng.choice(other)
        r = rng.random()
        if (not hand or r < 0.2) and ps.tallone:
            return Draw(p)
        if not hand:
            return Conclude(p) if ps.calata is not None else None
        if r < 0.4 and (leaning := leans(t, p, hand)):
            c, mid = rng.choice(leaning)
            return Attach(p, c, mid)
        if r < 0.55 and (ready := regular_subsets(hand)):
            meld = rng.choice(ready)
            self.plans[p] = [Direct(p, meld)]
            return Declare(p, meld)
        if r < 0.7 and (plans := rearrangements(t, p, limit=6)):
            plan = list(rng.choice(plans))
            self.plans[p] = plan[1:] if rng.random() < 0.8 else plan[1:2]  # or stop halfway
            return plan[0]
        attach = fits(t, hand)
        if attach and r < 0.9:
            c, mid = rng.choice(attach)
            return Attach(p, c, mid)
        if ps.calata is not None:
            end: list[Action] = [Conclude(p), Cancel(p)]
            return rng.choice(end)
        return Declare(p, tuple(rng.sample(hand, rng.randint(1, min(3, len(hand))))))

    def tick(self) -> int:
        """The time of the next action: mostly soon, sometimes long after, sometimes exactly
        at a deadline (M5.0.1, M5.5.8, M6.3, M7.1)."""
        rng, t = self.rng, self.table
        r = rng.random()
        if r < 0.3:
            return t.now_ms
        if r < 0.85:
            return t.now_ms + rng.randint(1, 3_000)
        if r < 0.95:
            return t.now_ms + rng.randint(3_000, 45_000)
        deadlines = [t.inactivity_ms, *(p.hold.deadline_ms for p in t.players if p.hold)]
        deadlines += [c.deadline_ms for c in t.calate.values()
                      if c.status is CalataStatus.OPEN and c.deadline_ms is not None]
        deadlines += [c.consolidate_ms for c in t.calate.values()
                      if c.status is CalataStatus.CONFIRMED and c.consolidate_ms is not None]
        return max(t.now_ms, rng.choice(deadlines) + rng.choice((-1, 0, 0, 1)))
