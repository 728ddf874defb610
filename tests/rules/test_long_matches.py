"""Seeded long matches (`Match(MatchKind.LONG, ...)`, `deal_next`, `Ready`, `Leave`), played by
the complete agents of the smazzate simulation (`sim.matches.play_long_match`): every smazzata
is checked at every step as in test_random_smazzate.py; totals are the sums of the smazzata
scores (M13.2), the match ends as M13.3 (or M13.5) says, the match replays from its deals and
its calls, and each of its smazzate replays from its own deal and log.
"""

from __future__ import annotations

import random

from .sim.invariants import check_replay
from .sim.matches import play_long_match
from .sim.simulation import Stats, run_all

SEED = 20_250_311 + 2
LONG_MATCHES = 30


def test_long_matches_to_150() -> None:
    master = random.Random(SEED)
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
    master = random.Random(SEED)
    seeds = [master.getrandbits(64) for _ in range(LONG_MATCHES // 3)]

    def play(i: int, seed: int) -> None:
        match = play_long_match(seed, Stats())
        for n, t in enumerate(match.smazzate, 1):
            try:
                check_replay(t)
            except AssertionError as e:
                silent = [str(p.seat) for p in t.players if p.silent]
                raise AssertionError(f"smazzata {n} (silent at its end: {silent}): {e}") from e

    run_all("long match", seeds, play)
