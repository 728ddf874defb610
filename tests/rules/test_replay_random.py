"""Random simulation: many short games of three random players, seeded with `random.Random`.

Each game is a full shuffled deal (M1.2-M1.4, after a few opening draws) or a small explicit
position with consolidated melds on the table (`sim.positions.LOADED`); at every step one of
the hurried agents (`sim.agents.HURRIED`) acts, at server times that advance irregularly (M2.1:
no turns; timers fire inside `apply`). Every refusal must change nothing (the state summary
`sim.watch.fingerprint` around it). At the end of each game:
- the engine's invariants hold (`invariants.check_all`: M1.1 cards in one place, M3/M5.4
  melds untouched by open calate regular, replay of (deal, log), live board = replay of the
  live ops, P5 views, the timers' cache);
- left alone for 81 s, every calata concludes and becomes definitive (M5.0.1, M5.5.8);
- a second run with the same seed produces the same events (determinism).
Failures are collected over all games and reported together with their seeds, to be replayed
with `play_game(seed)`.
"""

from __future__ import annotations

import random

import pytest

from machiavelox.rules import Phase, Table

from .sim.agents import HURRIED, Agents
from .sim.invariants import check_all, check_settles
from .sim.positions import LOADED, seeded_deal
from .sim.simulation import Simulation
from .sim.watch import table_driver

GAMES = 200
STEPS = 150
SEED = 20_240_601


def play_game(seed: int, steps: int = STEPS) -> Table:
    rng = random.Random(seed)
    full = rng.random() < 0.3
    t = Table(seeded_deal(rng, LOADED, full))
    sim = Simulation(Agents(rng, t, HURRIED), table_driver(t))
    if full:  # a few opening draws each so there is something to play
        sim.opening_draws(6, 14)
    for _ in range(steps):
        if t.phase is Phase.ENDED:
            break
        sim.step()
    return t


def check_game(seed: int) -> tuple[set[str], str | None]:
    """Play the game of `seed` and check it; returns the kinds of its events and the first
    broken invariant."""
    kinds: set[str] = set()
    try:
        t = play_game(seed)
        kinds.update(e.kind for e in t.events)
        check_all(t)
        check_settles(t)
        again = play_game(seed)
        assert [str(e) for e in again.events] == [str(e) for e in t.events], (
            "two runs with the same seed produced different events")
    except AssertionError as err:
        return kinds, str(err).splitlines()[0]
    return kinds, None


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
        seen, failure = check_game(seed)
        if failure is not None:
            failures.setdefault(failure.split(":")[0], []).append(seed)
            first = first or f"{failure} (seed {seed})"
        kinds |= seen
    assert not failures, (
        f"broken invariants in {sum(map(len, failures.values()))} of {GAMES} games: "
        + "; ".join(f"{kind}: {len(seeds)} games, e.g. seed {seeds[0]}"
                    for kind, seeds in failures.items())
        + f". First: {first}")
    # The simulation must reach the interesting parts of the engine, or it proves little.
    for kind in ("direct", "attached", "moved", "placed", "confirmed", "failed", "chain",
                 "consolidated"):
        assert kind in kinds, f"no game produced a {kind!r} event"
