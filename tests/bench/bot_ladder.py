"""The bots' strength ladder (issue 15, part 2): a leveled bot against two of today's bots.

In-process with the engine, simulated time, seeded deals (`machiavelox.bots.arena`): for each
level, N smazzate with the leveled bot in seat p1 and today's bots (`bots/strategy.py`, at
`player.py`'s pace) in p2 and p3. Prints win rates (targets: hard >= 80%, medium >= 60%), how
the smazzate ended, refusals (races lost, and predictable ones: bugs), and the solver's time
per decision (p50 / p99, target p99 < 50 ms) with the largest position it solved.

    .venv/bin/python tests/bench/bot_ladder.py            # 500 smazzate per level
    .venv/bin/python tests/bench/bot_ladder.py --quick    # 50
    .venv/bin/python tests/bench/bot_ladder.py --levels hard --games 200
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from machiavelox import rules
from machiavelox.bots.arena import BaselineBot, LeveledBot, Outcome, Player, play
from machiavelox.bots.levels import LEVELS
from machiavelox.bots.mind import SolveStat

TARGETS = {"hard": 0.80, "medium": 0.60, "easy": 0.0}


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_level(name: str, games: int, seed0: int) -> None:
    level = LEVELS[name]
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    for seed in range(seed0, seed0 + games):
        players: list[Player] = [LeveledBot(rules.Seat.P1, level, seed=seed),
                                 BaselineBot(rules.Seat.P2), BaselineBot(rules.Seat.P3)]
        outcomes.append(play(seed, players))
    wall = time.perf_counter() - started
    wins = sum(o.winner is rules.Seat.P1 for o in outcomes)
    endings = Counter((o.ending, "p1" if o.winner is rules.Seat.P1 else
                       str(o.winner) if o.winner is not None else "-") for o in outcomes)
    eliminated = sum(o.scores[0] == -15 for o in outcomes if o.scores)
    solves: list[SolveStat] = [s for o in outcomes for s in o.solves]
    ms = [s.ms for s in solves]
    largest = max(solves, key=lambda s: s.size, default=None)
    limited = sum(s.status == "time-limit" for s in solves)
    races = [sum(o.races[s] for o in outcomes) for s in range(3)]
    predictable = [p for o in outcomes for p in o.predictable[0]]
    others = [p for o in outcomes for s in (1, 2) for p in o.predictable[s]]
    rate = wins / games
    print(f"== {name} vs two of today's bots: {games} smazzate (seeds {seed0}.."
          f"{seed0 + games - 1}), {wall:.0f} s wall")
    print(f"  wins {wins}/{games} = {rate:.1%} (target {TARGETS[name]:.0%}: "
          f"{'met' if rate >= TARGETS[name] else 'NOT met'})")
    print("  endings: " + ", ".join(f"{e} won by {w}: {n}" for (e, w), n in
                                    sorted(endings.items())))
    print(f"  {name} eliminated (-15): {eliminated}; mean smazzata "
          f"{sum(o.sim_ms for o in outcomes) / games / 1000:.0f} s of table time")
    print(f"  refusals: races lost p1/p2/p3 {races}; predictable by the view: {name} "
          f"{len(predictable)} {Counter(predictable).most_common(3)}, today's bots "
          f"{len(others)} {Counter(others).most_common(3)}")
    print(f"  solver: {len(ms)} decisions, p50 {pct(ms, 0.50):.1f} ms, p90 {pct(ms, 0.90):.1f}"
          f" ms, p99 {pct(ms, 0.99):.1f} ms (target < 50 ms), max {max(ms, default=0):.1f} ms;"
          f" at the time limit {limited}")
    if largest is not None:
        print(f"  largest position solved: {largest.size} cards (pool + touchable table), "
              f"{largest.ms:.1f} ms, {largest.status}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="50 smazzate per level")
    parser.add_argument("--levels", default="hard,medium")
    parser.add_argument("--seed", type=int, default=0, help="first deal's seed")
    args = parser.parse_args()
    games = 50 if args.quick else args.games
    for name in args.levels.split(","):
        run_level(name.strip(), games, args.seed)


if __name__ == "__main__":
    main()
