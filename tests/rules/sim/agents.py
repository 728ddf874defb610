"""Random players of actions: three agents at one table (or at the tables of a match) sharing
one random source. `choose` is what one of them would try now; `tick` is when the next step
happens; `actor` who acts; `comeback` a silent agent coming back.

Each agent plays purposefully most of the time (draw, declare, put down direct melds, attach
and place where cards fit, lean on other players' cards on trial, rearrange over several
steps, conclude, cancel) and blunders now and then (cards where they do not fit, table cards
moved anywhere, junk). A `Style` says how often each thing is tried:
- `HURRIED`: the players of the property tests and the replay games: no Stop!, no silence,
  no abandonment (the machines add those as rules of their own where they want them);
- `COMPLETE`: the players of the smazzate simulations: also Stop! and giving up (M9),
  silence and coming back (M11), abandonment, and more blunders.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
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
    Declare,
    Direct,
    Draw,
    GiveUp,
    Leave,
    Liveness,
    Move,
    Phase,
    Place,
    Put,
    Ready,
    Release,
    Seat,
    Stop,
    Table,
    Take,
    Undeclare,
)

from .engine import deadlines
from .finders import (
    Step,
    fits,
    fixed,
    free_table_cards,
    leans,
    melds_among,
    misfits,
    rearrangements,
)

Menu = tuple[tuple[str, float], ...]  # (option, tried when the roll is below this), in order


def every_action(p: Seat, c: Card, some: tuple[Card, ...], mid: int, dst: int | None,
                 endgame: bool) -> list[Action]:
    """One action of every kind by `p` with these arguments (for junk: mostly refused);
    `endgame`: Stop!, GiveUp, Ready and Leave too."""
    out: list[Action] = [
        Draw(p), Declare(p, some), Undeclare(p, some), Direct(p, some), Attach(p, c, mid),
        Place(p, c, mid), Take(p, c, mid), Put(p, dst), Move(p, c, mid, dst), Release(p),
        Conclude(p), Cancel(p)]
    if endgame:
        out += [Stop(p), GiveUp(p), Ready(p), Leave(p)]
    return out


@dataclass(frozen=True)
class Style:
    """How often an agent tries each thing."""

    junk: float  # anything at all, by anyone
    endgame: bool  # Stop!, GiveUp, silence (M11), abandonment
    put: float  # a held card put where it fits (M6.2), else put anywhere or released
    pozzetto: Menu  # with cards in the pozzetto (a calata under way)
    draw: float  # with cards in hand: draw (M4.2); always with an empty hand
    hand: Menu  # with cards in hand
    stop_halfway: float  # a rearrangement plan stops after its first move
    cancel: float  # ending a calata from the hand: ANNULLA (M5.5.6), else conclude (M5.4)
    pace: tuple[float, float, float]  # the next step: at once, within 3 s, within 50 s


HURRIED = Style(
    junk=0.06, endgame=False, put=0.8,
    pozzetto=(("direct", 0.5), ("lean", 0.6), ("place", 0.75), ("move", 0.85),
              ("declare", 0.9)),
    draw=0.2,
    hand=(("lean", 0.4), ("direct", 0.55), ("rearrange", 0.7), ("attach", 0.9),
          ("end", 1.0), ("declare", 1.0)),
    stop_halfway=0.2, cancel=0.5, pace=(0.3, 0.85, 0.95))
COMPLETE = Style(
    junk=0.04, endgame=True, put=0.7,
    pozzetto=(("direct", 0.35), ("lean", 0.42), ("place", 0.6), ("move", 0.72),
              ("wild", 0.78), ("misfit", 0.84), ("declare", 0.9)),
    draw=0.25,
    hand=(("direct", 0.5), ("attach", 0.68), ("rearrange", 0.8), ("misfit", 0.85),
          ("end", 0.93), ("declare", 0.97)),
    stop_halfway=0.15, cancel=1 / 3, pace=(0.25, 0.7, 0.88))


@dataclass
class Agents:
    """Three random players at one table. Plans (declare, move, place; declare, direct) are
    carried out over several calls, while the others play. Replace `table` when a match moves
    on to its next smazzata (and clear `plans`)."""

    rng: random.Random
    table: Table
    style: Style = HURRIED
    plans: dict[Seat, list[Step]] = field(default_factory=dict)
    silent_until: dict[Seat, int | None] = field(default_factory=dict)  # None: for good

    def pick(self, options: Sequence[Action]) -> Action:
        return options[self.rng.randrange(len(options))]

    def junk(self, p: Seat) -> Action:
        """Anything, by anyone: mostly refused."""
        rng, t = self.rng, self.table
        c = rng.choice(ALL_CARDS)
        some = tuple(rng.sample(ALL_CARDS, rng.randint(0, 3)))
        mid = rng.choice([*t.board.melds, 0, -1, 10_000])
        dst = rng.choice([None, mid, *t.board.melds])
        return self.pick(every_action(p, c, some, mid, dst, self.style.endgame))

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
        """What the agent at `p` tries now (None: nothing)."""
        rng, t, style = self.rng, self.table, self.style
        ps = t.players[p]
        if rng.random() < style.junk or not ps.in_play:
            return self.junk(p)
        plan = self.plans.get(p)
        while plan:
            action = plan.pop(0)(t)
            if action is not None:
                return action
        if style.endgame and (rare := self.rare(p)) is not None:
            return rare
        r = rng.random()
        if ps.hold is not None:
            spots = [mid for _, mid in fits(t, [ps.hold.card], partial=True)]
            if spots and r < style.put:
                return Put(p, rng.choice(spots))
            anywhere = rng.choice([None, *t.board.melds])
            return self.pick([Put(p, None), Release(p), Put(p, anywhere)])
        pool = sorted(t.pozzetto_of(ps))
        if pool:
            action = self.from_menu(style.pozzetto, r, self.pozzetto_options(p, pool))
            return action or self.pick([Conclude(p), Cancel(p), Undeclare(p, (rng.choice(pool),))])
        hand = sorted(ps.hand)
        if (not hand or r < style.draw) and ps.tallone:
            return Draw(p)
        if not hand:
            return self.pick([Conclude(p), Cancel(p)]) if ps.calata is not None else None
        action = self.from_menu(style.hand, r, self.hand_options(p, hand))
        return action or (Draw(p) if ps.tallone else None)

    def from_menu(self, menu: Menu, r: float,
                  options: dict[str, Callable[[], Action | None]]) -> Action | None:
        """The first option whose bound the roll `r` is under and that has something to do."""
        for name, upto in menu:
            if r < upto and (action := options[name]()) is not None:
                return action
        return None

    def rare(self, p: Seat) -> Action | None:
        """Rare decisions: silence (M11), abandonment, Stop! and giving up (M9)."""
        rng, t = self.rng, self.table
        r = rng.random()
        if r < 0.004:
            self.silent_until[p] = (None if rng.random() < 0.3
                                    else t.now_ms + rng.randint(5_000, 120_000))
            return Liveness(p, False)
        if r < 0.0055:
            return Abandon(p)
        if r < 0.015 and not t.players[p].said_stop and t.phase is Phase.PLAYING:
            return Stop(p)
        if t.phase is Phase.FROZEN and t.stopper == p and r < 0.03:
            return GiveUp(p)
        return None

    def choice_of(self, pairs: list[tuple[Card, int]],
                  make: Callable[[Card, int], Action]) -> Action | None:
        if not pairs:
            return None
        c, mid = self.rng.choice(pairs)
        return make(c, mid)

    def pozzetto_options(self, p: Seat,
                         pool: list[Card]) -> dict[str, Callable[[], Action | None]]:
        """Work inside an open calata (M5.3)."""
        rng, t = self.rng, self.table
        ps = t.players[p]

        def direct() -> Action | None:
            ready = melds_among(pool)
            return Direct(p, rng.choice(ready)) if ready else None

        def move() -> Action | None:
            moving = [(c, mid) for c, mid in fits(t, free_table_cards(t, p), partial=True)
                      if t.board.where[c] != mid]
            if not moving:
                return None
            c, mid = rng.choice(moving)
            if rng.random() < 0.7:
                return Move(p, c, t.board.where[c], mid)
            self.plans[p] = [fixed(Put(p, mid))]  # M6.1: take it, then put it
            return Take(p, c, t.board.where[c])

        def declare() -> Action | None:
            own = t.pozzetto_of(ps) is ps.pozzetto  # not the tiebreak's common one (M10.2)
            return Declare(p, (rng.choice(sorted(ps.hand)),)) if ps.hand and own else None

        return {
            "direct": direct,
            "lean": lambda: self.choice_of(leans(t, p, pool), lambda c, m: Place(p, c, m)),
            "place": lambda: self.choice_of(fits(t, pool, partial=True),
                                            lambda c, m: Place(p, c, m)),
            "move": move,
            "wild": lambda: self.wild_move(p),
            "misfit": lambda: self.choice_of(misfits(t, pool), lambda c, m: Place(p, c, m)),
            "declare": declare,
        }

    def hand_options(self, p: Seat,
                     hand: list[Card]) -> dict[str, Callable[[], Action | None]]:
        """Play from the hand: attaches (M5.2), or a declaration that opens a calata (M5.3)."""
        rng, t = self.rng, self.table
        ps = t.players[p]

        def direct() -> Action | None:
            ready = melds_among(hand)
            if not ready:
                return None
            meld = rng.choice(ready)
            self.plans[p] = [fixed(Direct(p, meld))]  # M5.1
            return Declare(p, meld)

        def rearrange() -> Action | None:
            plans = rearrangements(t, p, rng)
            if not plans:
                return None
            plan = list(rng.choice(plans))
            first = plan.pop(0)(t)
            self.plans[p] = plan[:1] if rng.random() < self.style.stop_halfway else plan
            return first

        def end() -> Action | None:
            if ps.calata is None:
                return None
            return Cancel(p) if rng.random() < self.style.cancel else Conclude(p)

        return {
            "lean": lambda: self.choice_of(leans(t, p, hand), lambda c, m: Attach(p, c, m)),
            "direct": direct,
            "attach": lambda: self.choice_of(fits(t, hand), lambda c, m: Attach(p, c, m)),
            "rearrange": rearrange,
            "misfit": lambda: self.choice_of(misfits(t, hand), lambda c, m: Attach(p, c, m)),
            "end": end,
            "declare": lambda: Declare(p, tuple(rng.sample(hand,
                                                           rng.randint(1, min(3, len(hand)))))),
        }

    def actor(self) -> Seat:
        """Who acts next: mostly the stopper during a freeze (M9), the players of a tiebreak
        (M10.2), else anyone in play (now and then anyone at all)."""
        t, rng = self.table, self.rng
        if t.phase is Phase.FROZEN and t.stopper is not None and rng.random() < 0.85:
            return t.stopper
        if t.phase is Phase.TIEBREAK and rng.random() < 0.85:
            return rng.choice(t.tiebreak_players)
        playing = [p.seat for p in t.players if p.in_play]
        return rng.choice(playing if playing and rng.random() < 0.95 else SEATS)

    def tick(self) -> int:
        """When the next step happens: at once, within 3 s or within 50 s, sometimes exactly at
        a deadline, or one millisecond either side of it (M5.0.1, M5.5.8, M6.3, M7, M9)."""
        rng, t = self.rng, self.table
        now, (soon, later, much_later) = t.now_ms, self.style.pace
        r = rng.random()
        if r < soon:
            return now
        if r < later:
            return now + rng.randint(1, 3_000)
        if r < much_later:
            return now + rng.randint(3_000, 50_000)
        due = deadlines(t)
        if not due:
            return now + rng.randint(0, 50_000)
        return max(now, rng.choice(due) + rng.choice((-1, 0, 0, 0, 1)))

    def comeback(self, now_ms: int) -> Action | None:
        """A silent agent whose time has come sends a sign of life again."""
        for p, until in sorted(self.silent_until.items()):
            if until is not None and until <= now_ms:
                del self.silent_until[p]
                return Liveness(p, True)
        return None
