"""Three random agents playing concurrently, with random timing, for thousands of smazzate.

A plain seeded simulation (`random.Random`, no Hypothesis; the harness is `sim/`). Every
smazzata is played to its end by the complete agents (`sim.agents.COMPLETE`): they draw,
declare, put down direct melds, attach hand cards where they fit and sometimes where they do
not, lean on other players' cards on trial, rearrange (declare, move table cards to another
meld or to a new one, place), conclude, cancel (ANNULLA), say Stop! and then try to close, give
up or let the 3 minutes run, go silent and come back (or not), abandon. Between steps the clock
advances 0-50 s, sometimes exactly to a pending deadline. After a step cap the agents fall
silent at the table (they keep sending signs of life) and time is driven forward: inactivity
(M7) must end every smazzata.

After EVERY step (`sim.watch.check_step`, `sim.simulation.Simulation.act`):
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
- the scores follow M12 exactly, recomputed from the final state (`sim.endings`: M12.1-M12.5
  and the decisions of RULES-NOTES / docs/rules-decisions.md), with the shape of each ending;
- `Table.replay(deal, log)` gives the same events and the same observable state (for one
  smazzata in a hundred, after every step too).
The smazzate are independent and seeded one by one, so the main test shares them between two
processes (the machine's two cores). Long matches: test_long_matches.py.
"""

from __future__ import annotations

import multiprocessing
import os
import random
from concurrent.futures import ProcessPoolExecutor

from .sim.simulation import Stats, play_smazzata

SEED = 20_250_311
SMAZZATE = 2000  # smazzate played by the main test
FULL_DEAL_EVERY = 40  # one smazzata in this many is a full shuffled deal (34-card talloni)
REPLAY_EVERY_STEP_EVERY = 100  # one smazzata in this many replays its log after every step
WORKERS = 2  # processes sharing the smazzate of the main test (this machine has 2 cores)


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
        stats.add(part)
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
