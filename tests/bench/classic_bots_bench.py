"""Figures for the classic bots (docs/bots.md, "Classic Machiavelli"): the planner's decision
times on the positions of the in-process test games (tests/bots/test_classic_bots.py's
variants, seeds 0..GAMES-1), and how their hands ended. Not collected by pytest.

    .venv/bin/python tests/bench/classic_bots_bench.py [GAMES]
"""

from __future__ import annotations

import sys

from machiavelox.bots.classic_arena import play_session
from machiavelox.classic import Aces, Variants

CONFIGS = [(2, 0, 0, Aces.LOW), (2, 2, 36, Aces.LOW_HIGH), (4, 0, 36, Aces.LOW),
           (4, 2, 36, Aces.LOW), (4, 4, 0, Aces.CIRCULAR), (6, 0, 36, Aces.LOW),
           (6, 4, 36, Aces.LOW_HIGH)]


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))]


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    times: list[float] = []
    limited = refused = fallbacks = out = hands = 0
    largest = 0
    for players, jokers, opening, aces in CONFIGS:
        variants = Variants(players=players, decks=3 if players > 5 else 2, jokers=jokers,
                            opening=opening, aces=aces)
        for seed in range(games):
            o = play_session(variants, seed)
            times += [d.solve_ms for d in o.decisions]
            limited += sum(d.status == "time-limit" for d in o.decisions)
            fallbacks += sum(d.kind == "fallback" for d in o.decisions)
            largest = max([largest, *(d.size for d in o.decisions)])
            refused += len(o.refused)
            hands += len(o.hands)
            out += sum(h.ending == "out" for h in o.hands)
    times.sort()
    print(f"sessions {games * len(CONFIGS)}, hands {hands} ({out} won by melding out), "
          f"refusals {refused}, fallbacks {fallbacks}")
    print(f"decisions {len(times)}: p50 {pct(times, .5):.1f} ms, p90 {pct(times, .9):.1f}, "
          f"p99 {pct(times, .99):.1f}, max {times[-1]:.1f}; at the time limit {limited}; "
          f"largest position {largest} cards")


if __name__ == "__main__":
    main()
