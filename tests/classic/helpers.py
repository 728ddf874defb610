"""Shared by the classic engine's tests: a whole-state fingerprint, the invariants, a greedy
player that finds legal turns, and rich explicit positions (melds with jokers on the table).

`fingerprint` compares every attribute of the session and of each hand generically (sets as
frozensets, lists as tuples, dicts in their order), so new engine state is covered without
changing the tests.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from machiavelox.classic import (
    Aces,
    Attach,
    ClassicAction,
    ClassicCard,
    ClassicDeal,
    Draw,
    End,
    Joker,
    Meld,
    Scoring,
    Seat,
    Session,
    SessionKind,
    Variants,
    classify,
    copies,
    deck,
    is_valid,
    natural,
    opening_value,
    readings,
    view_for,
)
from machiavelox.classic.hand import Hand
from machiavelox.rules import Card, Suit


def _canon(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return frozenset(_canon(v) for v in value)
    if isinstance(value, (list, tuple)):
        return tuple(_canon(v) for v in value)
    if isinstance(value, dict):
        return tuple((_canon(k), _canon(v)) for k, v in value.items())
    if isinstance(value, Hand):
        return tuple((k, _canon(v)) for k, v in sorted(vars(value).items()))
    return value


def fingerprint(session: Session) -> Any:
    """Everything the session holds, hands included, comparable with ==."""
    return tuple((k, _canon(v)) for k, v in sorted(vars(session).items()))


def first_difference(a: Any, b: Any, path: str = "") -> str:
    """Where two fingerprints first differ, for assertion messages."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                label = x[0] if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) \
                    else i
                return first_difference(x, y, f"{path}/{label}")
    return f"{path}: {str(a)[:400]} != {str(b)[:400]}"


def table_of(hand: Hand) -> Any:
    """The table exactly (meld ids, order, cards in order)."""
    return tuple((mid, tuple(cards)) for mid, cards in hand.melds.items())


def check_conservation(session: Session) -> None:
    """C1: every card of the table's deck is in exactly one place (a hand, a meld, the stock,
    out of play), and `where` agrees with the melds."""
    hand = session.hand
    v = session.variants
    places: Counter[ClassicCard] = Counter()
    for held in hand.hands.values():
        places.update(held)
    for meld in hand.melds.values():
        places.update(meld)
    places.update(hand.stock)
    places.update(hand.out_of_play)
    full = deck(v.decks, v.jokers)
    assert set(places) == set(full), "a card is lost or foreign (C1)"
    twice = [c for c, n in places.items() if n != 1]
    assert not twice, f"cards in two places: {twice}"
    where = {c: mid for mid, cards in hand.melds.items() for c in cards}
    assert where == hand.where, "where disagrees with the melds"
    assert all(hand.melds.values()), "an empty meld stayed on the table"


def check_turn_start_valid(session: Session) -> None:
    """C5: while the player on turn has changed nothing, every meld on the table is valid
    (it was at the end of the last turn)."""
    hand = session.hand
    if hand.over or hand.changed() or hand._snap is not None:
        return
    bad = [cards for cards in hand.melds.values() if not is_valid(cards, hand.aces)]
    assert not bad, f"invalid melds at a turn's start: {bad}"


def check_views(session: Session) -> None:
    """P5: a view shows its viewer's own hand, only counts of the others, the stock's size."""
    hand = session.hand
    for seat in session.seats:
        view = view_for(session, seat)
        own = hand.hands.get(seat, set())
        assert set(view.hand) == own and len(view.hand) == len(own)
        for sv in view.seats:
            assert sv.hand_count == len(hand.hands.get(sv.seat, ()))
        shown = set(view.hand)
        for m in view.table:
            shown.update(m.cards)
        others: set[ClassicCard] = set()
        for s, cs in hand.hands.items():
            if s != seat:
                others |= cs
        assert not shown & others, "a view shows an opponent's card"
        assert not shown & set(hand.stock), "a view shows a stock card"
        assert view.stock_count == len(hand.stock)
        for ev in hand.events:
            seen = ev.for_viewer(seat)
            if ev.secret_to is not None and ev.secret_to != seat:
                assert seen.cards == (), "an event shows another player's drawn card"
    spectator = view_for(session, None)
    assert spectator.hand == ()


# ---------------------------------------------------------------------- finding legal turns
def _naturals(cards: set[ClassicCard]) -> list[Card]:
    return [c for c in cards if isinstance(c, Card)]


def candidate_melds(cards: set[ClassicCard], aces: Aces) -> Iterator[tuple[ClassicCard, ...]]:
    """Valid melds of 3 or 4 cards that can be made from these hand cards (sets, runs, and
    both with one joker), a few of each kind, deterministic order."""
    nat = sorted(_naturals(cards), key=lambda c: (c.suit, c.rank, c.copy))
    jokers = sorted((c for c in cards if isinstance(c, Joker)), key=lambda j: j.number)
    by_rank: dict[int, dict[Suit, Card]] = {}
    by_suit: dict[Suit, dict[int, Card]] = {}
    for c in nat:
        by_rank.setdefault(c.rank, {}).setdefault(c.suit, c)
        by_suit.setdefault(c.suit, {}).setdefault(c.rank, c)
    for suits in by_rank.values():
        if len(suits) >= 3:
            yield tuple(list(suits.values())[:4])
        elif len(suits) == 2 and jokers:
            yield (*suits.values(), jokers[0])
    for ranks in by_suit.values():
        for size in (3, 2):
            for combo in itertools.combinations(sorted(ranks), size):
                meld: tuple[ClassicCard, ...] = tuple(ranks[r] for r in combo)
                if size == 2:
                    if not jokers:
                        continue
                    meld = (*meld, jokers[0])
                if classify(meld, aces) is not None:
                    yield meld


class GreedyPlayer:
    """Plays a legal turn when it sees one: the opening if it can make it, else new melds
    from the hand and cards that extend a meld; otherwise draws."""

    def turn(self, session: Session) -> list[ClassicAction]:
        hand = session.hand
        p = hand.turn
        own = set(hand.hands[p])
        aces = hand.aces
        melds: list[tuple[ClassicCard, ...]] = []
        for meld in candidate_melds(own, aces):
            if set(meld) <= own:
                melds.append(meld)
                own -= set(meld)
        opening = session.variants.opening
        if p not in hand.opened and opening > 0:
            worth = sum(opening_value(m, aces) for m in melds)
            if not melds or worth < opening:
                return [Draw(p)]
            return [*(Meld(p, m) for m in melds), End(p)]
        actions: list[ClassicAction] = [Meld(p, m) for m in melds]
        for mid, cards in hand.melds.items():
            grown = list(cards)
            for c in sorted(own, key=lambda c: c.index):
                if is_valid([*grown, c], aces):
                    actions.append(Attach(p, c, mid))
                    own.discard(c)
                    grown.append(c)
        return [*actions, End(p)] if actions else [Draw(p)]


# ---------------------------------------------------------------------- explicit positions
def rich_deal(rng: random.Random, variants: Variants, playing: tuple[Seat, ...] | None = None,
              n_melds: int = 6, hand_size: int = 7, stock_size: int = 20) -> ClassicDeal:
    """Valid melds on the table (runs and sets, some with a joker), short hands of the
    jokers left, cards that fit the table (what a joker stands for, a run's next card, a set's
    missing suit) and random cards, a short stock; the rest of the deck out of play."""
    seats = variants.seats if playing is None else playing
    free = list(deck(variants.decks, variants.jokers))
    rng.shuffle(free)
    jokers = [c for c in free if isinstance(c, Joker)]
    pool = {c for c in free if isinstance(c, Card)}
    table: list[tuple[ClassicCard, ...]] = []
    for _ in range(n_melds * 4):
        if len(table) >= n_melds:
            break
        rank, suit = rng.randint(1, 13), Suit(rng.randrange(4))
        if rng.random() < 0.5:
            faces = [(rank, s) for s in Suit][:rng.choice((3, 4))]
        else:
            length = rng.randint(3, 6)
            start = rng.randint(1, 14 - length)
            faces = [(r, suit) for r in range(start, start + length)]
        picked: list[ClassicCard] = []
        for r, s in faces:
            options = [natural(r, s, k) for k in range(1, variants.decks + 1)]
            have = [c for c in options if c in pool]
            if not have:
                break
            picked.append(have[0])
        else:
            if jokers and len(picked) >= 3 and rng.random() < 0.5:
                picked[rng.randrange(len(picked))] = jokers.pop()
            if is_valid(picked, variants.aces):
                pool.difference_update(c for c in picked if isinstance(c, Card))
                table.append(tuple(picked))
    wanted: list[ClassicCard] = []  # what the jokers stand for, the runs' ends, sets' suits
    for meld in table:
        near = {f for r in readings(meld, variants.aces) for f in r.faces}
        near |= {(r, s) for rank, s in near for r in (rank - 1, rank + 1) if 1 <= r <= 13}
        for rank, s in sorted(near):
            have = [c for c in copies(rank, s, variants.decks) if c in pool]
            if have and rng.random() < 0.4:
                wanted.append(have[0])
                pool.discard(have[0])
    rest: list[ClassicCard] = sorted(pool, key=lambda c: c.index)
    rng.shuffle(rest)
    rng.shuffle(wanted)
    rest = [*jokers, *wanted, *rest]
    hands: dict[Seat, tuple[ClassicCard, ...]] = {}
    for seat in seats:
        hands[seat] = tuple(rest[:hand_size])
        rest = rest[hand_size:]
    stock = tuple(rest[:stock_size])
    return ClassicDeal(hands=tuple(hands.get(s, ()) for s in variants.seats), stock=stock,
                       table=tuple(table), first=seats[0])


def random_variants(rng: random.Random) -> Variants:
    """Any valid variant set (the sessions' numbers small, so sessions end)."""
    players = rng.randint(2, 6)
    decks = 3 if players == 6 else (rng.choice((2, 3)) if players == 5 else 2)
    kind = rng.choice(list(SessionKind))
    n = {SessionKind.THRESHOLD: 60, SessionKind.HANDS: 2, SessionKind.ELIMINATION: 60}.get(kind)
    return Variants(players=players, decks=decks, jokers=rng.choice((0, 2, 4)),
                    aces=rng.choice(list(Aces)), opening=rng.choice((0, 0, 36)),
                    turn_time_ms=rng.choice((0, 60_000)), penalty=rng.choice((0, 1, 3)),
                    scoring=rng.choice(list(Scoring)), session=kind, session_n=n)
