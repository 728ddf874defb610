"""Move finders for random players (property tests, random simulations): which actions look
sensible on a table. Pure queries of the table; they never change it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations

from machiavelox.rules import Action, Card, Declare, Move, Place, Seat, Table, is_regular
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
    return [(c, mid) for c in sorted(cards) for mid, m in sorted(table.board.melds.items())
            if c not in m and promising([*m, c])]


def regular_subsets(cards: Collection[Card], sizes: Sequence[int] = (3, 4),
                    limit: int = 30) -> list[tuple[Card, ...]]:
    """Regular melds (M3) among `cards`, at most `limit` of them."""
    out: list[tuple[Card, ...]] = []
    ordered = sorted(cards)
    for k in sizes:
        for combo in combinations(ordered, k):
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


def rearrangements(table: Table, seat: Seat, limit: int = 20) -> list[list[Action]]:
    """Declare-move-place plans (M5.3) for a hand card that no meld takes as it is:
    - make room: a table card y leaves its meld S (S stays in order) for a meld D, after which
      the hand card x fits D (``4C 5C 6C`` + 7C from a full set of sevens, then 8C);
    - swap: x takes the place of y in S, and y goes to a meld D where it fits.
    The meld ids are those of now; a plan may go stale as others play (then it is refused)."""
    ps = table.players[seat]
    melds = table.board.melds
    held = {p.hold.card for p in table.players if p.hold is not None}
    direct = {c for c, _ in fits(table, ps.hand)}
    out: list[list[Action]] = []
    for x in sorted(ps.hand):
        if x in direct:
            continue
        for y, src in sorted(table.board.where.items()):
            if y in held:
                continue
            s_cards = melds[src]
            leaves = _leaves_order(s_cards, y)
            swap = is_regular([*(c for c in s_cards if c is not y), x])
            if not leaves and not swap:
                continue
            for dst, d_cards in sorted(melds.items()):
                if dst == src:
                    continue
                if leaves and is_regular([*d_cards, y, x]):
                    out.append([Declare(seat, (x,)), Move(seat, y, src, dst), Place(seat, x, dst)])
                elif swap and is_regular([*d_cards, y]):
                    out.append([Declare(seat, (x,)), Move(seat, y, src, dst), Place(seat, x, src)])
                if len(out) >= limit:
                    return out
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
