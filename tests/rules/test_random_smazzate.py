"""Three random agents playing concurrently, with random timing, for thousands of smazzate.

A plain seeded simulation (`random.Random`, no Hypothesis). Every smazzata is played to its end:
the agents draw, declare, put down direct melds, attach hand cards where they fit and sometimes
where they do not, rearrange (declare, move table cards to another meld or to a new one, place),
conclude, cancel (ANNULLA), say Stop! and then try to close, give up or let the 3 minutes run,
go silent and come back (or not), abandon. Between steps the clock advances 0-50 s, sometimes
exactly to a pending deadline. After a step cap the agents fall silent at the table (they keep
sending signs of life) and time is driven forward: inactivity (M7) must end every smazzata.

After EVERY step (the part-1 invariants of `invariants.py`, and more):
- M1.1: every card in exactly one place (tallone, hand, pozzetto, common pozzetto, table, removed);
- M3/M5.4/M5.5.4: every meld that no open calata touches is regular;
- errors.py: a refused action raises a `RulesError` (anything else propagates: a bug) and
  changes nothing: a summary of the whole state (`fingerprint`) is compared around every
  action, and the full `invariants.snapshot` around one action in eight and around every
  action of the smazzate replayed step by step;
- board.py: the live board is the replay of the live ops on the consolidated base;
- M5.5.8: a calata once CONSOLIDATED stays consolidated: no chain and no ANNULLA ever reaches it
  (it never becomes FELL, none of its ops is removed, all of its cards stay on the table), and
  consolidations never wait on each other in a circle (that would make them fire every ms).
At the end of every smazzata:
- it has ended (Phase.ENDED) within 4 hours of game time;
- the scores follow M12 exactly, recomputed here from the final state (M12.1-M12.5 and the
  decisions of RULES-NOTES / docs/rules-decisions.md), with the shape of each ending checked;
- `Table.replay(deal, log)` gives the same events and the same observable state (for one
  smazzata in a hundred, after every step too).
The smazzate are independent and seeded one by one, so the main test shares them between two
processes (the machine's two cores). Then a smaller run of long matches
(`Match(MatchKind.LONG, ...)`, `deal_next`, `Ready`, `Leave`): totals are the sums of the
smazzata scores, the match ends as M13.3 (or M13.5) says, the match replays from its deals and
its calls, and each of its smazzate replays from its own deal and log.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from machiavelox.rules import (
    ALL_CARDS,
    SEATS,
    Abandon,
    Action,
    Attach,
    Cancel,
    Card,
    Conclude,
    Deal,
    Declare,
    Direct,
    Draw,
    GiveUp,
    Leave,
    Liveness,
    Match,
    MatchKind,
    Move,
    Phase,
    Place,
    PlayerStatus,
    Put,
    Ready,
    Release,
    RulesError,
    Seat,
    Stop,
    Suit,
    Table,
    Take,
    Undeclare,
    copies_of,
    is_regular,
    shuffled_deal,
)
from machiavelox.rules.melds import split_on_removal
from machiavelox.rules.state import CalataStatus
from machiavelox.rules.timers import all_timers

from .invariants import (
    assert_refusal_changed_nothing,
    check_cards_in_one_place,
    check_live_board_is_replay,
    check_untouched_melds_regular,
    snapshot,
)

SEED = 20_250_311
SMAZZATE = 2000  # smazzate played by the main test
FULL_DEAL_EVERY = 40  # one smazzata in this many is a full shuffled deal (34-card talloni)
REPLAY_EVERY_STEP_EVERY = 100  # one smazzata in this many replays its log after every step
LONG_MATCHES = 30
WORKERS = 2  # processes sharing the smazzate of the main test (this machine has 2 cores)
ACTIVE_STEPS = 400  # then the agents stop playing and time is driven forward
MAX_GAME_MS = 4 * 3600 * 1000  # a smazzata must end within 4 hours of game time

Step = Callable[[Table], Action | None]


# --------------------------------------------------------------------------- deals
def small_deal(rng: random.Random) -> Deal:
    """A small explicit position: consolidated regular melds on the table, hands and short
    talloni with cards that fit them or form melds among themselves, so that smazzate end
    quickly and every kind of calata happens."""
    left = set(ALL_CARDS)

    def take(rank: int, suit: Suit) -> Card | None:
        options = [c for c in copies_of(rank, suit) if c in left]
        if not options:
            return None
        c = rng.choice(options)
        left.discard(c)
        return c

    def meld_faces(max_run: int = 7) -> list[tuple[int, Suit]]:
        if rng.random() < 0.45:
            rank = rng.randint(1, 13)
            return [(rank, s) for s in rng.sample(list(Suit), rng.randint(3, 4))]
        suit, start = rng.choice(list(Suit)), rng.randint(1, 13)
        return [((start - 1 + i) % 13 + 1, suit) for i in range(rng.randint(3, max_run))]

    def take_all(faces: list[tuple[int, Suit]]) -> list[Card] | None:
        if any(all(c not in left for c in copies_of(*f)) for f in faces):
            return None
        return [c for f in faces if (c := take(*f)) is not None]

    table = [m for _ in range(rng.randint(2, 9)) if (m := take_all(meld_faces()))]
    near = sorted({(c.rank, c.suit) for m in table for c in m}
                  | {(c.rank % 13 + 1, c.suit) for m in table for c in m}
                  | {((c.rank - 2) % 13 + 1, c.suit) for m in table for c in m}
                  | {(c.rank, s) for m in table for c in m for s in Suit})

    def some_cards(lo: int, hi: int) -> list[Card]:
        out: list[Card] = []
        for _ in range(rng.randint(lo, hi)):
            face = rng.choice(near) if near and rng.random() < 0.6 else (
                rng.randint(1, 13), rng.choice(list(Suit)))
            if (c := take(*face)) is not None:
                out.append(c)
        if rng.random() < 0.6 and (ready := take_all(meld_faces(4))):
            out += ready
        rng.shuffle(out)
        return out

    hands = [some_cards(0, 3) if rng.random() < 0.6 else [] for _ in SEATS]
    talloni = [some_cards(1, 6) for _ in SEATS]
    rest = sorted(left)
    removed = tuple(rng.sample(rest, rng.randint(0, 2)))
    return Deal(
        removed=removed,
        talloni=(tuple(talloni[0]), tuple(talloni[1]), tuple(talloni[2])),
        hands=(tuple(hands[0]), tuple(hands[1]), tuple(hands[2])),
        table=tuple(tuple(m) for m in table),
        drawn=frozenset(s for s in SEATS if rng.random() < 0.5),
        direct_meld=frozenset(s for s in SEATS if rng.random() < 0.3),
    )


def some_deal(rng: random.Random, full: bool) -> Deal:
    return shuffled_deal(rng.getrandbits(32)) if full else small_deal(rng)


# --------------------------------------------------------------------------- card finders
def alike(cards: Sequence[Card], card: Card) -> bool:
    """Could `card` join `cards` in a meld at all: the same rank as all, or the same suit?"""
    return (all(c.rank == card.rank for c in cards)
            or all(c.suit == card.suit for c in cards))


def fits(table: Table, cards: Collection[Card]) -> list[tuple[Card, int]]:
    """(card, meld) pairs where the card leaves the meld regular (M3)."""
    return [(c, mid) for mid, m in table.board.melds.items() for c in cards
            if c not in m and alike(m, c) and is_regular([*m, c])]


def misfits(table: Table, cards: Collection[Card]) -> list[tuple[Card, int]]:
    return [(c, mid) for mid, m in table.board.melds.items() for c in cards
            if c not in m and not (alike(m, c) and is_regular([*m, c]))]


def melds_among(cards: Collection[Card], limit: int = 6) -> list[tuple[Card, ...]]:
    """Regular melds of 3 or 4 cards among `cards` (sets of distinct suits, runs of 3)."""
    by_rank: dict[int, dict[Suit, Card]] = {}
    by_suit: dict[Suit, dict[int, Card]] = {}
    for c in sorted(cards):
        by_rank.setdefault(c.rank, {}).setdefault(c.suit, c)
        by_suit.setdefault(c.suit, {}).setdefault(c.rank, c)
    out: list[tuple[Card, ...]] = []
    for suits in by_rank.values():
        if len(suits) >= 3:
            picked = tuple(suits.values())
            out.append(picked[:3])
            if len(picked) == 4:
                out.append(picked)
    for ranks in by_suit.values():
        for r, c in ranks.items():
            r2, r3 = r % 13 + 1, (r + 1) % 13 + 1
            if r2 in ranks and r3 in ranks:
                out.append((c, ranks[r2], ranks[r3]))
    return out[:limit]


def leaves_order(cards: Sequence[Card], card: Card) -> bool:
    """Taking `card` out leaves its meld regular (both sides of an interior removal)."""
    halves = split_on_removal(cards, card)
    if halves is not None:
        return all(is_regular(h) for h in halves)
    rest = [c for c in cards if c is not card]
    return is_regular(rest)


def free_table_cards(table: Table, seat: Seat) -> list[Card]:
    held = {p.hold.card for p in table.players if p.hold is not None and p.seat != seat}
    return [c for c in table.board.where if c not in held
            and table.reserved.get(c, seat) == seat]


# Plan steps name melds by a card in them (an anchor), since meld ids change with splits.
def move_to(p: Seat, y: Card, anchor: Card | None) -> Step:
    def step(t: Table) -> Action | None:
        src = t.board.where.get(y)
        if src is None:
            return None
        dst = None if anchor is None else t.board.where.get(anchor)
        if anchor is not None and dst is None:
            return None
        return Move(p, y, src, dst)
    return step


def place_at(p: Seat, x: Card, anchor: Card) -> Step:
    def step(t: Table) -> Action | None:
        mid = t.board.where.get(anchor)
        return None if mid is None else Place(p, x, mid)
    return step


def pick(rng: random.Random, options: Sequence[Action]) -> Action:
    return options[rng.randrange(len(options))]


def fixed(action: Action) -> Step:
    return lambda t: action


def rearrangements(table: Table, p: Seat, rng: random.Random, limit: int = 4) -> list[list[Step]]:
    """Declare-move-place plans (M5.3) for hand cards that no meld takes as they are:
    make room (y leaves S for D, then x fits D), swap (x takes y's place in S, y goes to D),
    and new meld (y1 and y2 leave their melds and make a new one with x)."""
    ps = table.players[p]
    melds = table.board.melds
    hand = [x for x in ps.hand
            if not any(alike(m, x) and is_regular([*m, x]) for m in melds.values())]
    if not hand:
        return []
    rng.shuffle(hand)
    hand = hand[:2]
    ys = free_table_cards(table, p)
    rng.shuffle(ys)
    ys = ys[:10]
    out: list[list[Step]] = []
    leavers = [y for y in ys if leaves_order(melds[table.board.where[y]], y)]
    for x in hand:
        for y in ys:
            src = table.board.where[y]
            rest = [c for c in melds[src] if c is not y]
            leaves = y in leavers
            swap = bool(rest) and alike(rest, x) and is_regular([*rest, x])
            if not leaves and not swap:
                continue
            anchor_s = rest[0] if rest else None
            for dst, d in melds.items():
                if dst == src or not d or not alike(d, y):
                    continue
                with_y = [*d, y]
                if leaves and alike(with_y, x) and is_regular([*with_y, x]):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y, d[0]),
                                place_at(p, x, d[0])])
                elif swap and anchor_s is not None and is_regular(with_y):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y, d[0]),
                                place_at(p, x, anchor_s)])
                if len(out) >= limit:
                    return out
        for i, y1 in enumerate(leavers):
            for y2 in leavers[i + 1:]:
                if table.board.where[y1] == table.board.where[y2]:
                    continue
                if is_regular([x, y1, y2]):
                    out.append([fixed(Declare(p, (x,))), move_to(p, y1, None),
                                move_to(p, y2, y1), place_at(p, x, y1)])
                    if len(out) >= limit:
                        return out
    return out


# --------------------------------------------------------------------------- the agents
@dataclass
class Agents:
    """Three random players at one table (or at the tables of a match)."""

    rng: random.Random
    table: Table
    plans: dict[Seat, list[Step]] = field(default_factory=dict)
    silent_until: dict[Seat, int | None] = field(default_factory=dict)  # None: for good

    def junk(self, p: Seat) -> Action:
        """Anything, by anyone: mostly refused."""
        rng, t = self.rng, self.table
        c = rng.choice(ALL_CARDS)
        some = tuple(rng.sample(ALL_CARDS, rng.randint(0, 3)))
        mid = rng.choice([*t.board.melds, 0, 10_000])
        dst = rng.choice([None, mid, *t.board.melds])
        return pick(rng, [Draw(p), Declare(p, some), Undeclare(p, some), Direct(p, some),
                           Attach(p, c, mid), Place(p, c, mid), Take(p, c, mid), Put(p, dst),
                           Move(p, c, mid, dst), Release(p), Conclude(p), Cancel(p), Stop(p),
                           GiveUp(p), Ready(p), Leave(p)])

    def wild_move(self, p: Seat) -> Action | None:
        """A table card moved anywhere: a rearrangement that may well leave a wound (and now
        and then a card another player holds or has reserved: M6.4, M6.5)."""
        t, rng = self.table, self.rng
        ys = free_table_cards(t, p) if rng.random() < 0.8 else list(t.board.where)
        if not ys:
            return None
        y = rng.choice(ys)
        dst = rng.choice([None, *t.board.melds])
        return Move(p, y, t.board.where[y], None if dst == t.board.where[y] else dst)

    def choose(self, p: Seat) -> Action | None:
        rng, t = self.rng, self.table
        ps = t.players[p]
        if rng.random() < 0.04 or not ps.in_play:
            return self.junk(p)
        plan = self.plans.get(p)
        while plan:
            action = plan.pop(0)(t)
            if action is not None:
                return action
        r = rng.random()
        # rare decisions: Stop!, silence, abandonment
        if r < 0.004:
            self.silent_until[p] = (None if rng.random() < 0.3
                                    else t.now_ms + rng.randint(5_000, 120_000))
            return Liveness(p, False)
        if r < 0.0055:
            return Abandon(p)
        if r < 0.015 and not ps.said_stop and t.phase is Phase.PLAYING:
            return Stop(p)
        if t.phase is Phase.FROZEN and t.stopper == p and r < 0.03:
            return GiveUp(p)
        r = rng.random()
        if ps.hold is not None:
            spots = [mid for _, mid in fits(t, [ps.hold.card])]
            if spots and r < 0.7:
                return Put(p, rng.choice(spots))
            anywhere = rng.choice([None, *t.board.melds])
            return pick(rng, [Put(p, None), Release(p), Put(p, anywhere)])
        pool = sorted(t.pozzetto_of(ps))
        if pool:
            direct = melds_among(pool)
            placing = fits(t, pool)
            moving = [(c, mid) for c, mid in fits(t, free_table_cards(t, p))
                      if t.board.where[c] != mid]
            if direct and r < 0.35:
                return Direct(p, rng.choice(direct))
            if placing and r < 0.6:
                c, mid = rng.choice(placing)
                return Place(p, c, mid)
            if moving and r < 0.72:
                c, mid = rng.choice(moving)
                if rng.random() < 0.7:
                    return Move(p, c, t.board.where[c], mid)
                self.plans[p] = [fixed(Put(p, mid))]
                return Take(p, c, t.board.where[c])
            if r < 0.78:
                return self.wild_move(p)
            if r < 0.84:
                bad = misfits(t, pool)
                if bad:
                    c, mid = rng.choice(bad)
                    return Place(p, c, mid)
            if r < 0.9 and ps.hand and t.pozzetto_of(ps) is ps.pozzetto:
                return Declare(p, (rng.choice(sorted(ps.hand)),))
            return pick(rng, [Conclude(p), Cancel(p), Undeclare(p, (rng.choice(pool),))])
        hand = sorted(ps.hand)
        if (not hand or r < 0.25) and ps.tallone:
            return Draw(p)
        if not hand:
            return pick(rng, [Conclude(p), Cancel(p)]) if ps.calata is not None else None
        ready = melds_among(hand)
        if ready and r < 0.5:
            meld = rng.choice(ready)
            self.plans[p] = [fixed(Direct(p, meld))]
            return Declare(p, meld)
        attach = fits(t, hand)
        if attach and r < 0.68:
            c, mid = rng.choice(attach)
            return Attach(p, c, mid)
        if r < 0.8 and (plans := rearrangements(t, p, rng)):
            plan = list(rng.choice(plans))
            first = plan.pop(0)(t)
            self.plans[p] = plan if rng.random() < 0.85 else plan[:1]  # or stop halfway
            return first
        if r < 0.85:
            bad = misfits(t, hand)
            if bad:
                c, mid = rng.choice(bad)
                return Attach(p, c, mid)
        if ps.calata is not None and r < 0.93:
            return pick(rng, [Conclude(p), Conclude(p), Cancel(p)])
        if r < 0.97:
            return Declare(p, tuple(rng.sample(hand, rng.randint(1, min(3, len(hand))))))
        return Draw(p) if ps.tallone else None

    def actor(self) -> Seat:
        t, rng = self.table, self.rng
        if t.phase is Phase.FROZEN and t.stopper is not None and rng.random() < 0.85:
            return t.stopper
        if t.phase is Phase.TIEBREAK and rng.random() < 0.85:
            return rng.choice(t.tiebreak_players)
        playing = [p.seat for p in t.players if p.in_play]
        return rng.choice(playing if playing and rng.random() < 0.95 else SEATS)

    def tick(self) -> int:
        """When the next step happens: 0-50 s later, sometimes exactly at a deadline (or one
        millisecond either side of it)."""
        rng, t = self.rng, self.table
        r = rng.random()
        if r < 0.25:
            return t.now_ms
        if r < 0.7:
            return t.now_ms + rng.randint(1, 3_000)
        if r < 0.88:
            return t.now_ms + rng.randint(3_000, 50_000)
        deadlines = [tm.at_ms for tm in all_timers(t)]
        if not deadlines:
            return t.now_ms + rng.randint(0, 50_000)
        return max(t.now_ms, rng.choice(deadlines) + rng.choice((-1, 0, 0, 0, 1)))

    def comeback(self, now_ms: int) -> Action | None:
        """A silent agent whose time has come sends a sign of life again."""
        for p, until in sorted(self.silent_until.items()):
            if until is not None and until <= now_ms:
                del self.silent_until[p]
                return Liveness(p, True)
        return None


# --------------------------------------------------------------------------- the checks
@dataclass
class Driver:
    """How steps reach the engine: a lone table, or the current table of a match."""

    apply: Callable[[Action, int], object]
    advance: Callable[[int], object]


@dataclass
class Watch:
    """What must hold across a whole smazzata (M5.5.8: consolidated is definitive)."""

    op_cards: dict[int, tuple[Card, ...]] = field(default_factory=dict)  # every op seen live
    consolidated: dict[int, tuple[tuple[int, ...], tuple[Card, ...]]] = field(
        default_factory=dict)  # calata id -> (its op seqs, their cards) when it consolidated


def check_consolidated(table: Table, watch: Watch) -> None:
    """M5.5.8: a consolidated calata is never reached by a chain nor by an ANNULLA: it stays
    CONSOLIDATED, keeps all its ops, and its cards stay on the table (later ops may move them
    from meld to meld, never off the table: M3.6)."""
    for seq in table.live:
        if seq not in watch.op_cards:
            watch.op_cards[seq] = table.ops[seq].cards
    for cid, cal in table.calate.items():
        if cal.status is CalataStatus.CONSOLIDATED and cid not in watch.consolidated:
            missing = [s for s in cal.ops if s not in watch.op_cards]
            assert not missing, f"ops {missing} of calata {cid} were never seen live"
            cards = tuple(c for s in cal.ops for c in watch.op_cards[s])
            watch.consolidated[cid] = (tuple(cal.ops), cards)
    for cid, (ops, cards) in watch.consolidated.items():
        cal = table.calate[cid]
        assert cal.status is CalataStatus.CONSOLIDATED, (
            f"M5.5.8: consolidated calata {cid} of {cal.player} became {cal.status.value}")
        assert tuple(cal.ops) == ops, f"M5.5.8: consolidated calata {cid} lost ops"
        off = [str(c) for c in cards if c not in table.board.where]
        assert not off, f"M5.5.8: cards {off} of consolidated calata {cid} left the table"


def waiting_circle(table: Table, horizon: int) -> list[int] | None:
    """A circle of confirmed calate, all due to consolidate by `horizon`, each waiting for the
    next one's consolidation (an op of one needs or moved a card of an op of the next)."""
    due = {cid: cal for cid, cal in table.calate.items()
           if cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms is not None
           and cal.consolidate_ms <= horizon}
    if len(due) < 2:
        return None
    waits: dict[int, list[int]] = {}
    for cid, cal in due.items():
        for seq in cal.ops:
            op = table.ops[seq]
            for dep in (*op.needs, *(p for p in op.prev if p is not None)):
                dop = table.ops.get(dep)
                if dop is not None and dop.calata != cid and dop.calata in due:
                    waits.setdefault(cid, []).append(dop.calata)
    done: set[int] = set()
    for start in sorted(waits):
        path = [start]
        todo = [iter(waits.get(start, []))]
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                done.add(path.pop())
                todo.pop()
            elif nxt in path:
                return [*path[path.index(nxt):], nxt]
            elif nxt not in done:
                path.append(nxt)
                todo.append(iter(waits.get(nxt, [])))
    return None


def check_no_consolidation_livelock(table: Table) -> None:
    """M5.5.8: a confirmed calata becomes definitive once nothing it depends on can still fall;
    consolidations must not wait on each other in a circle. Confirmed calate whose time has come
    (their consolidation postponed to the next millisecond) and that wait for each other would
    never consolidate, and their timers would fire every millisecond for ever."""
    circle = waiting_circle(table, table.now_ms)  # due by now, yet still waiting
    assert circle is None, (
        f"M5.5.8: confirmed calate {circle} wait for each other's consolidation at "
        f"{table.now_ms} ms: they never consolidate and their timers fire every ms")


def advance_to(table: Table, driver: Driver, watch: Watch, at: int) -> None:
    """Let time pass to `at`. When confirmed calate that wait for each other come due on the
    way, stop just after they do and check them first (the check above), so that an engine
    that spins on them fails at once instead of firing a timer per millisecond to `at`."""
    circle = waiting_circle(table, at)
    if circle is not None:
        due = max(c.consolidate_ms or 0 for c in map(table.calate.__getitem__, circle))
        if table.now_ms <= due < at:
            driver.advance(due + 1)
            check_step(table, watch)
    driver.advance(at)


def check_step(table: Table, watch: Watch) -> None:
    check_cards_in_one_place(table)
    check_untouched_melds_regular(table)
    check_live_board_is_replay(table)
    check_consolidated(table, watch)
    check_no_consolidation_livelock(table)


def fingerprint(t: Table) -> tuple[object, ...]:
    """A cheap summary of the table's state, taken before every action: a refused action must
    leave it unchanged. (The full `invariants.snapshot` is compared on a sample of actions; it
    costs too much to take at every step of thousands of smazzate.)"""
    return (
        t.now_ms, t.phase, len(t.log), len(t.events), t.inactivity_ms, t.inactivity_left_ms,
        t.stopper, t.stop_deadline_ms, t.frozen, t.tiebreak_players, t.tiebreak_ms,
        frozenset(t.common), tuple(t.reserved.items()), t.result, tuple(t.live),
        len(t.parents),
        tuple((tuple(p.tallone), frozenset(p.hand), frozenset(p.pozzetto), p.status, p.drawn,
               frozenset(p.direct_meld_calate), p.calata,
               None if p.hold is None else (p.hold.card, p.hold.deadline_ms), p.silent,
               p.last_sign_ms, p.absence_since_ms, p.said_stop, p.pending_draws)
              for p in t.players),
        tuple((mid, tuple(cs)) for mid, cs in t.board.melds.items()),
        tuple((c.id, c.status, tuple(c.ops), c.deadline_ms, c.consolidate_ms, c.fail_ops,
               c.is_stop, c.suspended_left_ms, c.consolidate_left_ms, tuple(c.needs.items()),
               c.touched_now) for c in t.calate.values()),
        tuple((k, tuple(v.visits.items()), frozenset(v.movers)) for k, v in t.episodes.items()),
    )


def check_replays(table: Table) -> None:
    """The (deal, log) replay gives the same events and the same observable state."""
    again = Table.replay(table.deal, table.log, now_ms=table.now_ms, start_ms=table.start_ms)
    assert [str(e) for e in again.events] == [str(e) for e in table.events], (
        "replay: the events differ")
    assert snapshot(again) == snapshot(table), "replay: the state differs"


def expected_scores(table: Table) -> tuple[int, int, int]:
    """M12, recomputed from the final state, independently of scoring.py."""
    res = table.result
    assert res is not None
    gone = {p.seat for p in table.players
            if p.status in (PlayerStatus.ELIMINATED, PlayerStatus.ABANDONED)}
    scores = {s: (-15 if s in gone else 0) for s in SEATS}  # M12.4

    def held(s: Seat) -> int:  # hand + pozzetto (M4.3) + own cards left in the common one
        p = table.players[s]
        return len(p.hand) + len(p.pozzetto) + sum(
            1 for c in table.common if table.common_owner[c] == s)

    if res.ending == "draw":  # M12.5 decision
        others = sum(held(s) for s in SEATS if s not in table.tiebreak_players)
        for s in res.draw:
            scores[s] = max(-15, 50 - len(table.players[s].tallone) + others
                            - len(table.common))
    elif res.winner is not None:  # M12.1-M12.3
        w = res.winner
        pts = 50 - len(table.players[w].tallone) + sum(held(s) for s in SEATS if s != w)
        if res.ending == "closing" and not table.players[w].tallone:
            pts += 10  # M12.2
        scores[w] = pts
    return (scores[Seat.P1], scores[Seat.P2], scores[Seat.P3])


def check_ending(table: Table) -> None:
    """Phase.ENDED with a result whose shape matches its ending, scored by M12."""
    assert table.phase is Phase.ENDED and table.result is not None
    res = table.result
    in_play = [p.seat for p in table.players if p.in_play]
    if res.ending == "closing":  # M8
        assert res.winner is not None
        w = table.players[res.winner]
        assert w.in_play and not w.hand and not w.pozzetto, "M8.1: the closer has cards"
        assert w.drawn and w.has_direct_meld, "M8.2: a closing without its conditions"
    elif res.ending == "survivor":  # M9.8, M11.3
        assert in_play == [res.winner], f"M9.8: survivor {res.winner}, in play {in_play}"
    elif res.ending == "everyone-gone":  # M11.3
        assert res.winner is None and not in_play
    elif res.ending == "silence":  # M10.1: fewest cards wins
        assert res.winner in in_play
        assert not any(table.players[s].tallone for s in in_play), "M10: a tallone left"
        counts = {s: len(table.players[s].hand) + len(table.players[s].pozzetto)
                  for s in in_play}
        assert all(counts[res.winner] < n for s, n in counts.items() if s != res.winner), (
            f"M10.1: {res.winner} wins with counts {counts}")
    elif res.ending == "tiebreak":  # M10.2
        assert res.winner in table.tiebreak_players and res.winner in in_play
    elif res.ending == "draw":  # M10.3
        assert res.winner is None and res.draw
        assert set(res.draw) == {s for s in table.tiebreak_players if s in in_play}
    else:
        raise AssertionError(f"unknown ending {res.ending!r}")
    assert res.scores == expected_scores(table), (
        f"M12: {res.summary()}, expected {expected_scores(table)}")


# --------------------------------------------------------------------------- one smazzata
@dataclass
class Stats:
    endings: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    steps: int = 0


def table_driver(t: Table) -> Driver:
    return Driver(t.apply, t.advance)


def act(agents: Agents, stats: Stats, driver: Driver, action: Action, at: int,
        careful: bool) -> None:
    """Apply one action at `at` (time has already been advanced to `at`). A refusal must be a
    RulesError (anything else propagates) and must change nothing (errors.py)."""
    t = agents.table
    before = fingerprint(t)
    full = snapshot(t) if careful else None
    try:
        driver.apply(action, at)
    except RulesError as e:
        stats.refusals[e.code] += 1
        agents.plans.pop(action.player, None)  # the table changed under the plan
        assert fingerprint(t) == before, f"refused {action} ({e.code}) changed the table"
        if full is not None:
            assert_refusal_changed_nothing(full, t, action)


def play_step(agents: Agents, watch: Watch, stats: Stats, driver: Driver, careful: bool,
              replay_each: bool) -> None:
    """One step: time passes (0-50 s, or to a deadline), then one agent acts, or a silent one
    comes back, or nothing happens; then every invariant is checked."""
    t = agents.table
    at = agents.tick()
    advance_to(t, driver, watch, at)
    stats.steps += 1
    if t.phase is not Phase.ENDED:
        action = agents.comeback(at)
        if action is None:
            p = agents.actor()
            action = None if p in agents.silent_until else agents.choose(p)
        if action is not None:
            act(agents, stats, driver, action, at, careful)
    check_step(t, watch)
    if replay_each:
        check_replays(t)


def drive_to_end(agents: Agents, watch: Watch, stats: Stats, driver: Driver,
                 replay_each: bool) -> None:
    """The agents stop playing (back at the table, idle): time alone must end the smazzata
    (M7 inactivity and forced draws, M10 final silence and tiebreak, M9.6, M11)."""
    t = agents.table
    for p in sorted(agents.silent_until):
        if t.players[p].in_play:
            act(agents, stats, driver, Liveness(p, True), t.now_ms, careful=False)
    agents.silent_until.clear()
    limit = t.start_ms + MAX_GAME_MS
    rounds = 0
    while t.phase is not Phase.ENDED and t.now_ms < limit:
        rounds += 1
        assert rounds < 5_000, "time does not end the smazzata: its timers keep firing"
        due = [tm.at_ms for tm in all_timers(t)]
        driver.advance(min(limit, max(t.now_ms + 1, min(due, default=limit))))
        stats.steps += 1
        check_step(t, watch)
        if replay_each:
            check_replays(t)
    assert t.phase is Phase.ENDED, (
        f"the smazzata has not ended after {MAX_GAME_MS // 3_600_000} hours of game time")


def play_smazzata(seed: int, stats: Stats, full: bool, replay_each: bool) -> Table:
    """One smazzata from its seed, to its end, checking everything on the way."""
    rng = random.Random(seed)
    t = Table(some_deal(rng, full))
    agents = Agents(rng, t)
    watch = Watch()
    driver = table_driver(t)
    for i in range(3 * ACTIVE_STEPS if full else ACTIVE_STEPS):
        if t.phase is Phase.ENDED or t.now_ms >= MAX_GAME_MS // 2:
            break
        play_step(agents, watch, stats, driver, careful=replay_each or i % 8 == 0,
                  replay_each=replay_each)
    drive_to_end(agents, watch, stats, driver, replay_each)
    check_ending(t)
    check_replays(t)
    stats.endings[t.result.ending if t.result else "?"] += 1
    stats.events.update(e.kind for e in t.events)
    return t


def run_all(what: str, seeds: list[int], play: Callable[[int, int], object]) -> None:
    """Play every seed; a failure does not stop the others (all are reported at the end)."""
    failures: list[str] = []
    for i, seed in enumerate(seeds):
        try:
            play(i, seed)
        except AssertionError as e:
            failures.append(f"{what} {i} (seed {seed}): {e}")
    assert not failures, f"{len(failures)} of {len(seeds)} failed:\n" + "\n".join(failures[:8])


def play_batch(games: list[tuple[int, int]]) -> tuple[Stats, list[str]]:
    """Play (index, seed) smazzate; returns the statistics and the failures."""
    stats = Stats()
    failures: list[str] = []
    for i, seed in games:
        try:
            play_smazzata(seed, stats, full=i % FULL_DEAL_EVERY == 0,
                          replay_each=i % REPLAY_EVERY_STEP_EVERY == 1)
        except AssertionError as e:
            failures.append(f"smazzata {i} (seed {seed}): {e}")
    return stats, failures


def test_thousands_of_random_smazzate() -> None:
    """SMAZZATE seeded smazzate, every one to its end, every invariant after every step.

    The smazzate are independent, so they are shared among the machine's cores (at most
    WORKERS processes): each game depends on its seed alone."""
    master = random.Random(SEED)
    games = [(i, master.getrandbits(64)) for i in range(SMAZZATE)]
    workers = max(1, min(WORKERS, os.cpu_count() or 1))
    if workers == 1:
        results = [play_batch(games)]
    else:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
            results = list(pool.map(play_batch, [games[k::workers] for k in range(workers)]))
    stats = Stats()
    failures: list[str] = []
    for part, failed in results:
        stats.endings.update(part.endings)
        stats.events.update(part.events)
        stats.refusals.update(part.refusals)
        stats.steps += part.steps
        failures += failed
    failures.sort(key=lambda f: int(f.split()[1]))
    assert not failures, (f"{len(failures)} of {SMAZZATE} smazzate failed:\n"
                          + "\n".join(failures[:8]))
    # The simulation must reach every part of the engine, or it proves little.
    for kind in ("closing", "survivor", "silence", "tiebreak", "draw"):
        assert stats.endings[kind], f"no smazzata ended by {kind}: {dict(stats.endings)}"
    for kind in ("direct", "attached", "moved", "placed", "confirmed", "failed", "cancelled",
                 "chain", "consolidated", "stop", "resumed", "eliminated", "abandoned",
                 "forced-draw", "tiebreak", "hold-expired", "reserved", "closed"):
        assert stats.events[kind], f"no smazzata produced a {kind!r} event"
    assert stats.refusals, "no action was ever refused"


def test_same_seed_same_smazzata() -> None:
    """Determinism of the whole simulation: the same seed plays the same smazzata."""
    master = random.Random(SEED + 1)
    for i in range(20):
        seed = master.getrandbits(64)
        a = play_smazzata(seed, Stats(), full=i % 5 == 0, replay_each=False)
        b = play_smazzata(seed, Stats(), full=i % 5 == 0, replay_each=False)
        assert [str(e) for e in a.events] == [str(e) for e in b.events]
        assert a.log == b.log


# --------------------------------------------------------------------------- long matches
Call = tuple[str, object, int]  # ("apply", action, t) | ("deal", deal, t) | ("advance", None, t)


def replay_match(first: Deal, calls: list[Call]) -> Match:
    m = Match(MatchKind.LONG, first)
    for kind, what, at in calls:
        if kind == "apply":
            assert isinstance(what, Action)
            with contextlib.suppress(RulesError):
                m.apply(what, at)
        elif kind == "deal":
            assert isinstance(what, Deal)
            m.deal_next(what, at)
        else:
            m.advance(at)
    return m


def check_match_totals(match: Match) -> None:
    """M13.2: the totals are the sums of the smazzata scores."""
    ended = [t.result for t in match.smazzate if t.result is not None]
    for s in SEATS:
        assert match.totals[s] == sum(r.scores[s] for r in ended), (
            f"M13.2: {s}'s total {match.totals[s]} is not the sum of its smazzata scores")


def check_match_end(match: Match) -> None:
    """M13.3 (target 150, patta lunga) or M13.5 (someone left: the leader among those left)."""
    res = match.result
    assert res is not None
    check_match_totals(match)
    assert res.totals == tuple(match.totals)
    top = max(res.totals)
    if res.reason == "target":
        assert top >= 150, f"M13.3: the match ended below the target: {res.totals}"
        leaders = tuple(s for s in SEATS if res.totals[s] == top)
        if len(leaders) == 1:
            assert res.winner == leaders[0] and not res.draw, f"M13.3: {res}"
        else:
            assert res.winner is None and res.draw == leaders, f"M13.3 patta lunga: {res}"
        return
    assert res.reason == "left" and match.out, f"M13.5: {res}"
    staying = [s for s in SEATS if s not in match.out]
    if not staying:
        assert res.winner is None and not res.draw, f"M13.5: nobody left, {res}"
        return
    best = max(res.totals[s] for s in staying)
    leaders = tuple(s for s in staying if res.totals[s] == best)
    want = (leaders[0], ()) if len(leaders) == 1 else (None, leaders)
    assert (res.winner, res.draw) == want, f"M13.5: {res}, staying {staying}"


def play_long_match(seed: int, stats: Stats) -> Match:
    rng = random.Random(seed)
    first = small_deal(rng)
    match = Match(MatchKind.LONG, first)
    calls: list[Call] = []

    def m_apply(action: Action, at: int) -> object:
        calls.append(("apply", action, at))
        return match.apply(action, at)

    def m_advance(at: int) -> object:
        calls.append(("advance", None, at))
        return match.advance(at)

    driver = Driver(m_apply, m_advance)
    agents = Agents(rng, match.table)
    watch = Watch()
    steps = 0
    dealt = 1  # deals given so far
    while match.result is None:
        assert match.now_ms < 100 * 3600 * 1000, "the long match never ends"
        if match.phase == Phase.PAUSE.value:
            # between smazzate (M13.4): the totals so far; the target is not reached (M13.3)
            check_match_totals(match)
            assert max(match.totals) < 150, f"M13.3: the match goes on at {match.totals}"
            at = match.now_ms + rng.randint(0, 20_000)
            if dealt < len(match.smazzate) + 1 and rng.random() < 0.6:
                dealt += 1
                deal = small_deal(rng)
                calls.append(("deal", deal, at))
                match.deal_next(deal, at)
                continue
            action = agents.comeback(at)
            if action is None:
                who = rng.choice(SEATS)
                action = (Leave(who) if rng.random() < 0.01 else
                          None if who in agents.silent_until else Ready(who))
            if action is None:
                m_advance(at)
            else:
                with contextlib.suppress(RulesError):
                    m_apply(action, at)
            continue
        if match.table is not agents.table:  # the next smazzata has started
            agents.table, agents.plans, watch, steps = match.table, {}, Watch(), 0
        t = agents.table
        steps += 1
        if steps <= ACTIVE_STEPS and t.now_ms - t.start_ms < MAX_GAME_MS // 2:
            play_step(agents, watch, stats, driver, careful=steps % 8 == 0, replay_each=False)
        else:
            drive_to_end(agents, watch, stats, driver, replay_each=False)
        if t.phase is Phase.ENDED:
            check_ending(t)
            stats.endings[t.result.ending if t.result else "?"] += 1
    check_match_end(match)
    if match.table.result is not None:
        check_ending(match.table)
    stats.endings["match-" + (match.result.reason if match.result else "?")] += 1
    stats.events["smazzate"] += len(match.smazzate)
    # the match replays from its deals and its calls (match.py: deals come from outside)
    again = replay_match(first, calls)
    assert again.result == match.result and again.totals == match.totals
    assert [str(e) for e in again.events] == [str(e) for e in match.events]
    assert len(again.smazzate) == len(match.smazzate)
    for a, b in zip(again.smazzate, match.smazzate, strict=True):
        assert snapshot(a) == snapshot(b), "a smazzata of the match replays differently"
    return match


def test_long_matches_to_150() -> None:
    master = random.Random(SEED + 2)
    seeds = [master.getrandbits(64) for _ in range(LONG_MATCHES)]
    stats = Stats()
    run_all("long match", seeds, lambda i, seed: play_long_match(seed, stats))
    assert stats.endings["match-target"], f"no match reached the target: {stats.endings}"
    assert stats.events["smazzate"] >= 3 * LONG_MATCHES


def test_each_smazzata_of_a_match_replays_from_its_own_log() -> None:
    """docs/rules-engine.md: a table is rebuilt by `Table.replay(deal, log)`, events included.
    That holds for every smazzata of a long match too, the second and later ones included
    (whose table the match creates: presence carried over from the previous smazzata, M11.9,
    is part of that table's history)."""
    master = random.Random(SEED + 2)
    seeds = [master.getrandbits(64) for _ in range(LONG_MATCHES // 3)]

    def play(i: int, seed: int) -> None:
        match = play_long_match(seed, Stats())
        for n, t in enumerate(match.smazzate, 1):
            try:
                check_replays(t)
            except AssertionError as e:
                silent = [str(p.seat) for p in t.players if p.silent]
                raise AssertionError(f"smazzata {n} (silent at its end: {silent}): {e}") from e

    run_all("long match", seeds, play)
