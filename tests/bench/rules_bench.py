"""Micro-benchmark of the rules engines on a busy table (a script, not a test).

    .venv/bin/python tests/bench/rules_bench.py [--reps N] [--only machiavelox|classic]

First the Machiavelox engine's figures (below), then classic Machiavelli's: a turn's judgement
with 30 melds on the table, 4 with a joker (target under 200 µs), restore, a move, view
building and classification, measured by `classic_bench.py` (its `figures`, also runnable on
its own; how it measures: its docstring). `--only` prints one of the two.

The table holds 30 consolidated regular melds (sets and runs, from both decks). Every
repetition of a table operation starts from a fresh `copy.deepcopy` of the same prepared table,
made outside the timed region; only the engine call is timed, with `time.perf_counter_ns`, and
the garbage collector is paused while timing. Prints the median and the 99th percentile in
microseconds per operation, then whether every single action stays under 100 µs.

Two operations use tables of their own: a direct meld of 14 cards round the circle (M3.3,
split 7 + 7 at once), and an attach whose judgement needs another player's trial card put on
the meld after 8 stray trial cards (M5.4.4: the least trial work, found exactly).
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import classic_bench  # (this script's folder: the classic engine's figures)

from machiavelox.rules import (
    Attach,
    Card,
    Conclude,
    Deal,
    Declare,
    Direct,
    Move,
    Place,
    Seat,
    Suit,
    Table,
    card,
    classify,
    copies_of,
    view_for,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: tests.rules.sim
from tests.rules.sim.positions import cards, deal, run

BUDGET_US = 100.0
P1, P2, P3 = Seat.P1, Seat.P2, Seat.P3


def busy_deal() -> Deal:
    """30 regular melds on the table, 91 cards of both decks:
    - 12 sets of copy 1: ranks 2..12 in spades, hearts, diamonds; the four kings;
    - 16 runs of copy 2: A-3, 4-6, 7-9, 10-Q in each suit;
    - 2 runs of copy 1 in clubs: A-5 and 6-10.
    Hands: p1 AS (fits nowhere as it is: the rearrangement), p2 JC (onto 6-10 of clubs),
    p3 QC (onto the set of 2s: irregular, concluded to fail); one spare king each."""
    table: list[tuple[Card, ...]] = []
    for rank in range(2, 13):
        table.append(tuple(copies_of(rank, s)[0] for s in (Suit.S, Suit.H, Suit.D)))
    table.append(tuple(copies_of(13, s)[0] for s in Suit))
    for s in Suit:
        for first in (1, 4, 7, 10):
            table.append(run(s, first, first + 2, 2))
    table += [run(Suit.C, 1, 5, 1), run(Suit.C, 6, 10, 1)]
    assert len(table) == 30 and all(classify(m) is not None for m in table)
    return Deal(
        removed=cards("AH AD"),
        talloni=(cards("KC#2"), (), ()),
        hands=(cards("AS KS#2"), cards("JC KH#2"), cards("QC KD#2")),
        table=tuple(table),
        drawn=frozenset((P1, P2, P3)),
        direct_meld=frozenset((P1, P2, P3)),
    )


STRAYS = "2H 4H 6H 8H 2S 4S 6S 8S"


def strays_table() -> Table:
    """4-5-6♣ with 8 stray cards of p2 on trial on it, then p3's 7♣ on trial; p1 holds 8♣."""
    t = Table(deal(table=("4C 5C 6C", "7H 7S 7D"), hands=("8C 2D", STRAYS + " KD", "7C QD"),
                   direct=(P1, P2, P3)))
    run_id = t.board.where[card("4C")]
    t.apply(Declare(P2, cards(STRAYS + " KD")), 500)
    for c in cards(STRAYS):
        t.apply(Place(P2, c, run_id), 500)
    t.apply(Declare(P3, cards("7C QD")), 600)
    t.apply(Place(P3, card("7C"), run_id), 600)
    return t


def meld_of(t: Table, text: str) -> int:
    return t.board.where[card(text)]


@dataclass
class Result:
    name: str
    samples_ns: list[int]
    is_action: bool  # a table action (judged against the budget), not a pure query

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000

    @property
    def p99_us(self) -> float:
        ordered = sorted(self.samples_ns)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000

    @property
    def max_us(self) -> float:
        return max(self.samples_ns) / 1000


def timed(fn: Callable[[], object]) -> int:
    start = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - start


def bench_pure(name: str, fn: Callable[[], object], reps: int) -> Result:
    gc.collect()
    gc.disable()
    try:
        samples = [timed(fn) for _ in range(reps)]
    finally:
        gc.enable()
    return Result(name, samples, is_action=False)


def bench_steps(base: Table, steps: list[tuple[str, Callable[[Table], object]]],
                reps: int) -> list[Result]:
    """Time each step of a sequence, every repetition on a fresh deep copy of `base`."""
    samples: list[list[int]] = [[] for _ in steps]
    gc.disable()
    try:
        for rep in range(reps):
            if rep % 200 == 0:
                gc.collect()  # outside the timed region, and not before every repetition
            t = copy.deepcopy(base)  # outside the timed region
            for i, (_, step) in enumerate(steps):
                start = time.perf_counter_ns()
                step(t)
                samples[i].append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return [Result(name, s, is_action=True) for (name, _), s in zip(steps, samples, strict=True)]


def figures(reps: int) -> None:
    """The Machiavelox engine's figures, `reps` repetitions per table operation."""
    base = Table(busy_deal())
    results: list[Result] = []

    # M3: meld validation (pure).
    three, four, ten = cards("5H#2 6H#2 4H#2"), cards("7S 7H 7D 7C"), run(Suit.D, 2, 11, 1)
    assert classify(three) and classify(four) and classify(ten)
    circle = cards("AH 2H 3H 4H 5H 6H 7H 8H 9H 10H JH QH KH AH#2")
    results += [bench_pure("classify, 3-card run", lambda: classify(three), reps * 10),
                bench_pure("classify, 4-card set", lambda: classify(four), reps * 10),
                bench_pure("classify, 10-card run", lambda: classify(ten), reps * 10),
                bench_pure("classify, 14-card run round the circle",
                           lambda: classify(circle), reps * 10)]

    # M5.2: a hand card onto a run end; the calata concludes by itself (confirmed).
    clubs = meld_of(base, "6C")

    def attach(t: Table) -> None:
        ev = t.apply(Attach(P2, card("JC"), clubs), 1_000)
        assert ev[-1].kind == "confirmed", ev

    results += bench_steps(base, [("attach (auto-concludes)", attach)], reps)

    # M5.3: declare AS, move KS from the four kings to 10-J-Q of spades, place AS there.
    kings, spades = meld_of(base, "KS"), meld_of(base, "10S#2")

    ace = cards("AS")

    def declare(t: Table) -> None:
        t.apply(Declare(P1, ace), 1_000)

    def move(t: Table) -> None:
        t.apply(Move(P1, card("KS"), kings, spades), 1_500)

    def place(t: Table) -> None:
        ev = t.apply(Place(P1, card("AS"), spades), 2_000)
        assert ev[-1].kind == "confirmed", ev

    results += bench_steps(base, [("rearrangement: declare", declare),
                                  ("rearrangement: move", move),
                                  ("rearrangement: place (auto-concludes)", place)], reps)

    # M5.4.5: QC on the set of 2s leaves it irregular; concluding undoes the attach.
    failing = copy.deepcopy(base)
    failing.apply(Attach(P3, card("QC"), meld_of(base, "2S")), 1_000)
    assert failing.open_calata(P3) is not None

    def conclude(t: Table) -> None:
        ev = t.apply(Conclude(P3), 2_000)
        assert ev[-1].kind == "failed", ev

    results += bench_steps(failing, [("conclude with failure (undo)", conclude)], reps)

    # M3.3: 14 hearts put down at once: regular round the circle, split 7 + 7 at once.
    circle_table = Table(deal(hands=(" ".join(str(c) for c in circle) + " 2C", "", ""),
                              direct=(P1, P2, P3)))
    circle_table.apply(Declare(P1, circle), 500)

    def direct_circle(t: Table) -> None:
        ev = t.apply(Direct(P1, circle), 1_000)
        assert ev[-1].kind == "confirmed" and len(t.board.melds) == 2, ev

    results += bench_steps(circle_table, [("direct meld of 14 round the circle (splits)",
                                           direct_circle)], reps)

    # M5.4.4: p1's 8♣ needs p3's 7♣, put on trial after 8 strays of p2 on the same meld.
    strays = strays_table()

    def lean(t: Table) -> None:
        ev = t.apply(Attach(P1, card("8C"), t.board.where[card("4C")]), 1_000)
        assert ev[-1].kind == "confirmed", ev

    results += bench_steps(strays, [("attach needing a trial card behind 8 strays", lean)],
                           reps)

    # P5: building one player's view (pure); on the quiet table and during a calata.
    busy = copy.deepcopy(base)
    declare(busy)
    move(busy)
    results += [bench_pure("view_for, 30 melds", lambda: view_for(base, P1), reps),
                bench_pure("view_for, 30 melds, calata open", lambda: view_for(busy, P2), reps)]

    overhead = bench_pure("(timer overhead)", lambda: None, reps * 10)
    width = max(len(r.name) for r in results)
    print(f"Rules engine micro-benchmark: {len(base.board.melds)} melds on the table, "
          f"{reps} repetitions per table operation (fresh deep copy each)")
    print(f"{'operation':<{width}}  {'median µs':>10}  {'p99 µs':>10}  {'max µs':>10}  {'n':>6}")
    print("-" * (width + 44))
    for r in results:
        print(f"{r.name:<{width}}  {r.median_us:>10.2f}  {r.p99_us:>10.2f}  {r.max_us:>10.2f}"
              f"  {len(r.samples_ns):>6}")
    print(f"(perf_counter_ns overhead per sample: median {overhead.median_us:.2f} µs, included)")
    actions = [r for r in results if r.is_action]
    worst = max(actions, key=lambda r: r.p99_us)
    slowest = max(actions, key=lambda r: r.max_us)
    verdict = "YES" if worst.p99_us < BUDGET_US else "NO"
    print(f"Every single action under {BUDGET_US:g} µs (p99 of each action): {verdict} "
          f"(worst p99 {worst.p99_us:.1f} µs: {worst.name}; slowest single sample "
          f"{slowest.max_us:.1f} µs: {slowest.name})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=classic_bench.REPS,
                        help="repetitions per table operation")
    parser.add_argument("--only", choices=("machiavelox", "classic"),
                        help="one engine's figures (default: both, Machiavelox first)")
    args = parser.parse_args()
    if args.only != "classic":
        figures(args.reps)
    if args.only is None:
        print()
    if args.only != "machiavelox":
        classic_bench.figures(args.reps)


if __name__ == "__main__":
    main()
