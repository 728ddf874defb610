"""Micro-benchmark of the classic engine on a busy table (a script, not a test).

    .venv/bin/python tests/bench/classic_bench.py [--reps N]

`tests/bench/rules_bench.py` prints these figures too, after the Machiavelox engine's (it
calls `figures`; `rules_bench.py --only classic` prints these alone).

The table holds 30 valid melds (sets and runs of both decks), four of them with a joker. Every
repetition of a table operation starts from a fresh `copy.deepcopy` of the same prepared
session, made outside the timed region; only the engine call is timed, with
`time.perf_counter_ns`, and the garbage collector is paused while timing. Prints the median
(p50) and the 99th percentile in microseconds per operation, then whether a turn's judgement
(`End`) stays under 200 µs.

Operations: a turn's judgement after a typical turn (one attach), after a rearrangement with a
joker (a swap, the joker moved to another run, an attach: three melds touched), and in the
worst case (a turn that touched all 30 melds: `End` judges every one); the refusal of an end
with an invalid meld; restoring that worst-case turn (C6); one move; building a view (P5);
and meld classification with and without jokers. Views cache each meld's arrangement (a pure
function of its cards), so they are timed cold (cache cleared) and warm.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from machiavelox.classic import (
    Aces,
    Attach,
    ClassicCard,
    ClassicDeal,
    End,
    Joker,
    Move,
    Restore,
    Seat,
    Session,
    Swap,
    Variants,
    classify,
    natural,
    parse,
    view_for,
)
from machiavelox.classic import view as classic_view
from machiavelox.rules import Card, RulesError, Suit

BUDGET_US = 200.0  # issue 16, part 3: a turn's judgement with 30 melds and jokers
P1, P2 = Seat.P1, Seat.P2


def cards(text: str) -> tuple[ClassicCard, ...]:
    return tuple(parse(t) for t in text.split())


def run(suit: Suit, first: int, last: int, copy_no: int) -> list[ClassicCard]:
    return [natural(r, suit, copy_no) for r in range(first, last + 1)]


def busy_session() -> Session:
    """30 valid melds, 95 card places, 4 jokers:
    - 11 sets of copy 1: ranks 2..12 in spades, hearts, diamonds; the four kings;
    - 16 runs of copy 2: A-3, 4-6, 7-9, 10-Q in each suit;
    - 2 runs of copy 1 in clubs: A-5 and 6-10.
    The jokers stand in four runs of copy 2 (for 2S, 5H, 8D, JC); p1 holds those four cards,
    JC#1 (onto 6-10 of clubs) and QC#1; p2 holds the other spare cards."""
    table: list[list[ClassicCard]] = []
    for rank in range(2, 13):
        table.append([natural(rank, s, 1) for s in (Suit.S, Suit.H, Suit.D)])
    table.append([natural(13, s, 1) for s in Suit])
    for s in Suit:
        for first in (1, 4, 7, 10):
            table.append(run(s, first, first + 2, 2))
    table += [run(Suit.C, 1, 5, 1), run(Suit.C, 6, 10, 1)]
    held = []
    for n, text in enumerate(("2S#2", "5H#2", "8D#2", "JC#2"), start=1):
        c = parse(text)
        meld = next(m for m in table if c in m)
        meld[meld.index(c)] = Joker(n)
        held.append(c)
    aces = Aces.LOW
    assert len(table) == 30 and all(classify(m, aces) is not None for m in table)
    v = Variants(players=2, jokers=4, turn_time_ms=120_000)
    deal = ClassicDeal(hands=((*held, *cards("JC QC")), cards("AS AH AD KS#2 KH#2 KD#2")),
                       stock=cards("KC#2"), table=tuple(tuple(m) for m in table))
    return Session(v, deal)


def meld_of(s: Session, text: str) -> int:
    return s.hand.where[parse(text)]


@dataclass
class Result:
    name: str
    samples_ns: list[int]
    judged: bool  # a turn's judgement: checked against the budget

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_ns) / 1000

    @property
    def p99_us(self) -> float:
        ordered = sorted(self.samples_ns)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] / 1000


def bench_pure(name: str, fn: Callable[[], object], reps: int) -> Result:
    gc.collect()
    gc.disable()
    try:
        samples = []
        for _ in range(reps):
            start = time.perf_counter_ns()
            fn()
            samples.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return Result(name, samples, judged=False)


def bench_on_copy(name: str, base: Session, step: Callable[[Session], object], reps: int,
                  judged: bool = False) -> Result:
    """Time `step` on a fresh deep copy of `base` each repetition (copied outside the timing)."""
    samples: list[int] = []
    gc.disable()
    try:
        for rep in range(reps):
            if rep % 200 == 0:
                gc.collect()
            s = copy.deepcopy(base)
            start = time.perf_counter_ns()
            step(s)
            samples.append(time.perf_counter_ns() - start)
    finally:
        gc.enable()
    return Result(name, samples, judged)


def prepared(base: Session, steps: Callable[[Session], None]) -> Session:
    s = copy.deepcopy(base)
    steps(s)
    return s


REPS = 2000  # repetitions per table operation, by default (here and in rules_bench.py)


def figures(reps: int = REPS) -> None:
    """Time every table operation and view `reps` times (a classification ten times more) and
    print the figures and the verdict on the 200 µs target."""
    base = busy_session()
    t = 1_000

    def end(s: Session) -> None:
        events = s.apply(End(P1), t)
        assert any(e.kind == "played" for e in events), events

    # a typical turn: JC#1 onto 6-10 of clubs (one meld touched)
    def attach_jc(s: Session) -> None:
        s.apply(Attach(P1, parse("JC"), meld_of(s, "6C")), t)

    typical = prepared(base, attach_jc)

    # a rearrangement with a joker: swap 5H#2 for the joker in 4-6 of hearts (C2), put that
    # joker at the end of A-5 of clubs, and JC#1 onto 6-10 of clubs: three melds touched
    def rearrange(s: Session) -> None:
        hearts = meld_of(s, "4H#2")
        s.apply(Swap(P1, _nat("5H#2"), Joker(2), hearts), t)
        s.apply(Attach(P1, Joker(2), meld_of(s, "AC")), t)
        s.apply(Attach(P1, parse("JC"), meld_of(s, "6C")), t)

    rearranged = prepared(base, rearrange)
    assert len(rearranged.hand.touched) == 3

    # the worst case: every one of the 30 melds touched (a card out and back, 15 pairs)
    def touch_all(s: Session) -> None:
        ids = list(s.hand.melds)
        for a, b in zip(ids[0::2], ids[1::2], strict=True):
            c = s.hand.melds[a][-1]
            s.apply(Move(P1, c, a, b), t)
            s.apply(Move(P1, c, b, a), t)
        s.apply(Attach(P1, parse("JC"), meld_of(s, "6C")), t)

    everything = prepared(base, touch_all)
    assert len(everything.hand.touched) == 30

    # the same, with one meld left invalid: End is refused (and changes nothing)
    def touch_all_wrong(s: Session) -> None:
        touch_all(s)
        s.apply(Attach(P1, parse("QC"), meld_of(s, "2S")), t)

    wrong = prepared(base, touch_all_wrong)

    def refused_end(s: Session) -> None:
        try:
            s.apply(End(P1), t)
        except RulesError as e:
            assert e.code == "end/invalid-meld"
        else:
            raise AssertionError("the end should be refused")

    def restore(s: Session) -> None:
        events = s.apply(Restore(P1), t)
        assert any(e.kind == "restored" for e in events)

    def one_move(s: Session) -> None:
        s.apply(Move(P1, parse("KS"), meld_of(s, "KS"), meld_of(s, "10S#2")), t)

    results = [
        bench_on_copy("end: judgement after one attach", typical, end, reps, judged=True),
        bench_on_copy("end: judgement after a joker rearrangement (3 melds)", rearranged, end,
                      reps, judged=True),
        bench_on_copy("end: judgement of all 30 melds (worst case)", everything, end, reps,
                      judged=True),
        bench_on_copy("end refused: an invalid meld among 30", wrong, refused_end, reps,
                      judged=True),
        bench_on_copy("restore after 31 gestures (C6)", everything, restore, reps),
        bench_on_copy("one move", base, one_move, reps),
    ]
    def cold_view() -> None:
        classic_view._shown.cache_clear()  # every meld arranged afresh
        view_for(base, P2)

    results += [
        bench_pure("view_for, 30 melds, nothing cached", cold_view, reps),
        bench_pure("view_for, 30 melds (4 jokers)", lambda: view_for(base, P2), reps),
        bench_pure("view_for, 30 melds, turn changed", lambda: view_for(everything, P2), reps),
    ]
    three, joker3 = cards("5H 6H 7H"), cards("5H JK 7H")
    joker5 = cards("JK 6H 7H JK 9H")
    results += [
        bench_pure("classify, 3-card run", lambda: classify(three, Aces.LOW), reps * 10),
        bench_pure("classify, 3-card run with a joker", lambda: classify(joker3, Aces.LOW),
                   reps * 10),
        bench_pure("classify, 5-card run, 2 jokers, circular",
                   lambda: classify(joker5, Aces.CIRCULAR), reps * 10),
    ]

    width = max(len(r.name) for r in results)
    print(f"Classic engine micro-benchmark: {len(base.hand.melds)} melds on the table (4 with a "
          f"joker), {reps} repetitions per table operation (fresh deep copy each)")
    print(f"{'operation':<{width}}  {'p50 us':>8}  {'p99 us':>8}")
    for r in results:
        print(f"{r.name:<{width}}  {r.median_us:8.1f}  {r.p99_us:8.1f}")
    worst = max(r.p99_us for r in results if r.judged)
    verdict = "under" if worst < BUDGET_US else "OVER"
    print(f"a turn's judgement: p99 {worst:.1f} us, {verdict} the {BUDGET_US:.0f} us target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=REPS, help="repetitions per operation")
    figures(parser.parse_args().reps)


def _nat(text: str) -> Card:
    c = parse(text)
    assert isinstance(c, Card)
    return c


if __name__ == "__main__":
    main()
