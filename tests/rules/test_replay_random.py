"""Random simulation: many short games of three random players, seeded with `random.Random`.

Each game is a full shuffled deal (M1.2-M1.4, after a few opening draws) or a small explicit
position with consolidated melds on the table; at every step one of the players
(`play.RandomPlayers`) acts, at server times that advance irregularly (M2.1: no turns; timers fire
inside `apply`). At the end of each game:
- the engine's invariants hold (`invariants.check_all`: M1.1 cards in one place, M3/M5.4
  melds untouched by open calate regular, replay of (deal, log), live board = replay of the
  live ops, P5 views). Refused actions are not logged, so one that changed the table shows up
  as a replay mismatch;
- left alone for 81 s, every calata concludes and becomes definitive (M5.0.1, M5.5.8);
- a second run with the same seed produces the same events (determinism).
Failures are collected over all games and reported together with their seeds, to be replayed
with `play_game(seed)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from machiavelox.rules import (
    ALL_CARDS,
    SEATS,
    Card,
    Deal,
    Draw,
    NotImplementedRuleError,
    Phase,
    RulesError,
    Suit,
    Table,
    copies_of,
    shuffled_deal,
)

from .invariants import check_all, check_settles
from .play import RandomPlayers

GAMES = 200
STEPS = 150
SEED = 20_240_601


# --------------------------------------------------------------------------- positions
def random_position(rng: random.Random) -> Deal:
    """A small explicit position: regular consolidated melds (sets and runs from both decks),
    hands with cards that fit them or a ready meld, short talloni."""
    free = list(ALL_CARDS)
    rng.shuffle(free)
    left = set(free)

    def take(rank: int, suit: Suit) -> Card | None:
        options = [c for c in copies_of(rank, suit) if c in left]
        if not options:
            return None
        c = rng.choice(options)
        left.discard(c)
        return c

    def meld_faces() -> list[tuple[int, Suit]]:
        if rng.random() < 0.5:
            rank = rng.randint(1, 13)
            return [(rank, s) for s in rng.sample(list(Suit), rng.randint(3, 4))]
        suit, start = rng.choice(list(Suit)), rng.randint(1, 13)
        return [((start - 1 + i) % 13 + 1, suit) for i in range(rng.randint(3, 8))]

    def take_all(faces: list[tuple[int, Suit]]) -> list[Card] | None:
        if any(all(c not in left for c in copies_of(*f)) for f in faces):
            return None
        return [c for f in faces if (c := take(*f)) is not None]

    table = [m for _ in range(rng.randint(3, 10)) if (m := take_all(meld_faces()))]
    faces = sorted({(c.rank, c.suit) for m in table for c in m}
                   | {((c.rank % 13) + 1, c.suit) for m in table for c in m}
                   | {(c.rank, s) for m in table for c in m for s in Suit})
    hands: list[list[Card]] = [[], [], []]
    for hand in hands:
        for _ in range(rng.randint(3, 9)):
            face = rng.choice(faces) if rng.random() < 0.7 else (rng.randint(1, 13),
                                                                 rng.choice(list(Suit)))
            if (c := take(*face)) is not None:
                hand.append(c)
        if rng.random() < 0.5 and (ready := take_all(meld_faces()[:4])):
            hand += ready
    rest = sorted(left)
    rng.shuffle(rest)
    talloni = [tuple(rest[i * 8:i * 8 + rng.randint(0, 8)]) for i in range(3)]
    removed = tuple(rest[24:24 + rng.randint(0, 2)])
    return Deal(
        removed=removed,
        talloni=(talloni[0], talloni[1], talloni[2]),
        hands=(tuple(hands[0]), tuple(hands[1]), tuple(hands[2])),
        table=tuple(tuple(m) for m in table),
        drawn=frozenset(s for s in SEATS if rng.random() < 0.7),
        direct_meld=frozenset(s for s in SEATS if rng.random() < 0.3),
    )


# --------------------------------------------------------------------------- games
@dataclass
class Game:
    players: RandomPlayers
    finished: bool = False  # a part-2 rule was reached (NotImplementedRuleError)
    refused: int = 0

    @property
    def table(self) -> Table:
        return self.players.table

    def step(self) -> None:
        p = self.players.rng.choice(SEATS)
        action = self.players.choose(p)
        at = self.players.tick()
        try:
            if action is None:
                self.table.advance(at)
            else:
                self.table.apply(action, at)  # timers due by `at` fire first
        except NotImplementedRuleError:
            self.finished = True  # a part-2 rule (the ending by count, M10): stop here
        except RulesError:
            self.refused += 1  # refusals are normal; anything else propagates as a bug
            self.players.plans.pop(p, None)  # the table changed under the plan


def play_game(seed: int, steps: int = STEPS) -> Game:
    rng = random.Random(seed)
    deal = shuffled_deal(rng.getrandbits(32)) if rng.random() < 0.3 else random_position(rng)
    game = Game(RandomPlayers(rng, Table(deal)))
    if not deal.table:  # a full deal: a few opening draws each so there is something to play
        for p in SEATS:
            for _ in range(rng.randint(6, 14)):
                game.table.apply(Draw(p), 0)
    for _ in range(steps):
        if game.finished or game.table.phase is Phase.ENDED:
            break
        game.step()
    return game


def check_game(seed: int) -> tuple[Game, str | None]:
    """Play the game of `seed` and check it; returns the game and the first broken invariant."""
    game = play_game(seed)
    try:
        check_all(game.table, replay_log=not game.finished)
        if not game.finished:
            check_settles(game.table)
        again = play_game(seed)
        assert [str(e) for e in again.table.events] == [str(e) for e in game.table.events], (
            "two runs with the same seed produced different events")
    except AssertionError as err:
        return game, str(err).splitlines()[0]
    return game, None


@pytest.mark.timeout(900)  # ~20 s; an engine that livelocks its timers makes it far slower
def test_random_games_keep_the_invariants_and_replay_identically() -> None:
    """200 seeded games: invariants at the end of each (and M5.5.8: left alone, everything
    settles); the same seed gives the same events. Failures are collected over all games and
    reported together, with the seeds to replay them (`play_game(seed)`)."""
    master = random.Random(SEED)
    kinds: set[str] = set()
    failures: dict[str, list[int]] = {}  # invariant (message up to its colon) -> seeds
    first = ""
    for _ in range(GAMES):
        seed = master.getrandbits(64)
        game, failure = check_game(seed)
        if failure is not None:
            failures.setdefault(failure.split(":")[0], []).append(seed)
            first = first or f"{failure} (seed {seed})"
        kinds.update(e.kind for e in game.table.events)
    assert not failures, (
        f"broken invariants in {sum(map(len, failures.values()))} of {GAMES} games: "
        + "; ".join(f"{kind}: {len(seeds)} games, e.g. seed {seeds[0]}"
                    for kind, seeds in failures.items())
        + f". First: {first}")
    # The simulation must reach the interesting parts of the engine, or it proves little.
    for kind in ("direct", "attached", "moved", "placed", "confirmed", "failed", "chain",
                 "consolidated"):
        assert kind in kinds, f"no game produced a {kind!r} event"
