"""Figures for the classic bots (docs/bots.md, "Classic Machiavelli" and "Classic levels").
Not collected by pytest.

- the planner's decision times on the positions of the in-process test games
  (tests/bots/test_classic_bots.py's variants, seeds 0..GAMES-1, every seat at `--level`,
  hard by default), and how their hands ended;
- `--ladder HANDS`: each pair of levels in two-player single hands (seeds 0..HANDS-1, the
  first level in P1 on even seeds and in P2 on odd ones, 2 jokers with `--jokers 2`): the win
  rate of each side, ties (C10: the stock ran out with equal points), how the hands ended, and
  each level's decision times.

    .venv/bin/python tests/bench/classic_bots_bench.py [GAMES] [--level LEVEL]
    .venv/bin/python tests/bench/classic_bots_bench.py --ladder 40 [--jokers 2]
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections import Counter

from machiavelox.bots.classic_arena import play_session
from machiavelox.bots.classic_levels import CLASSIC_LEVELS, ClassicLevel
from machiavelox.bots.classic_mind import ClassicBot, Decision
from machiavelox.classic import Aces, Variants

CONFIGS = [(2, 0, 0, Aces.LOW), (2, 2, 36, Aces.LOW_HIGH), (4, 0, 36, Aces.LOW),
           (4, 2, 36, Aces.LOW), (4, 4, 0, Aces.CIRCULAR), (6, 0, 36, Aces.LOW),
           (6, 4, 36, Aces.LOW_HIGH)]


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q))]


def times(decisions: list[Decision]) -> str:
    ms = sorted(d.solve_ms for d in decisions)
    limited = sum(d.status == "time-limit" for d in decisions)
    return (f"decisions {len(ms)}: p50 {pct(ms, .5):.1f} ms, p90 {pct(ms, .9):.1f}, "
            f"p99 {pct(ms, .99):.1f}, max {ms[-1]:.1f}; at the time limit {limited}")


def figures(games: int, level: ClassicLevel) -> None:
    decisions: list[Decision] = []
    refused = out = hands = 0
    for players, jokers, opening, aces in CONFIGS:
        variants = Variants(players=players, decks=3 if players > 5 else 2, jokers=jokers,
                            opening=opening, aces=aces)
        for seed in range(games):
            o = play_session(variants, seed, levels=[level] * players)
            decisions += o.decisions
            refused += len(o.refused)
            hands += len(o.hands)
            out += sum(h.ending == "out" for h in o.hands)
    fallbacks = sum(d.kind == "fallback" or d.unplayable > 0 for d in decisions)
    largest = max(d.size for d in decisions)
    print(f"level {level.name}: sessions {games * len(CONFIGS)}, hands {hands} ({out} won by "
          f"melding out), refusals {refused}, fallbacks {fallbacks}")
    print(f"{times(decisions)}; largest position {largest} cards")


def ladder(hands: int, jokers: int) -> None:
    variants = Variants(players=2, jokers=jokers)
    for a, b in itertools.combinations(CLASSIC_LEVELS.values(), 2):
        wins: Counter[str] = Counter()
        endings: Counter[str] = Counter()
        decisions: dict[str, list[Decision]] = {a.name: [], b.name: []}
        refused = 0
        started = time.perf_counter()
        for seed in range(hands):
            levels = [a, b] if seed % 2 == 0 else [b, a]
            bots = [ClassicBot(s, variants, lv) for s, lv in zip(variants.seats, levels,
                                                                  strict=True)]
            o = play_session(variants, seed, bots=bots)
            refused += len(o.refused)
            result = o.hands[-1]
            endings[result.ending] += 1
            if len(result.winners) == 1:
                wins[levels[variants.seats.index(result.winners[0])].name] += 1
            else:
                wins["tie"] += 1
            for bot in bots:
                decisions[bot.level.name] += bot.decisions
        took = time.perf_counter() - started
        print(f"{a.name} vs {b.name}: {hands} hands, {a.name} {wins[a.name]} "
              f"({100 * wins[a.name] / hands:.0f}%), {b.name} {wins[b.name]} "
              f"({100 * wins[b.name] / hands:.0f}%), ties {wins['tie']}; endings "
              f"{dict(endings)}; refusals {refused}; {took:.1f} s")
        for name, ds in decisions.items():
            print(f"  {name}: {times(ds)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("games", nargs="?", type=int, default=2)
    parser.add_argument("--level", choices=list(CLASSIC_LEVELS), default="hard")
    parser.add_argument("--ladder", type=int, metavar="HANDS")
    parser.add_argument("--jokers", type=int, default=0, choices=(0, 2, 4))
    args = parser.parse_args()
    if args.ladder:
        ladder(args.ladder, args.jokers)
    else:
        figures(args.games, CLASSIC_LEVELS[args.level])


if __name__ == "__main__":
    main()
