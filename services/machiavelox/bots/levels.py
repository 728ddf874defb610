"""Bot strengths as data: how deep the solver may rearrange, how fast the bot reacts, how it
uses Stop!, holds and the 40 s. Pure values; time is an argument of the bot, never a sleep.

- `depth`: table melds one play may take apart (None: any; 0: only direct melds and attaches,
  no table card moved);
- `think_ms` / `act_ms`: a human-like reaction delay before the first action of a decision
  and between the actions of a plan; `jitter` spreads both (a seeded RNG: replayable);
- `idle_ms`: how long the bot waits before looking again when it has nothing to do;
- Stop! (M9): `stop_min_steps` is the shortest closing plan worth a Stop! (None: never). The
  bot says Stop! only with a plan that closes validly (M8.2) and a table with no wound to mend
  (M9.4), so the freeze always ends in its closing (a failed one costs -15, M9.6);
- `solver_s`: the solver's time limit per decision (at the limit the best play found so far
  is played; `stop_solver_s` during the bot's own freeze, which lasts 3 minutes, M9.3);
- `hold`: keep the cards until one calata can close (cards laid early are places where the
  opponents attach theirs), shedding once the tallone is empty (final silence, M10.1);
- the 40 s (M5.0.1): a plan must end `calata_margin_ms` before its calata's deadline at the
  bot's pace; a longer one is replaced by a shallower search;
- holds (M6.1): bots move table cards with the atomic Move and never hold one, so no hold of
  theirs ever blocks a card for 10 s; they never try to move a card another player holds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Level:
    name: str
    depth: int | None
    think_ms: int
    act_ms: int
    jitter: float  # each delay is drawn in [d * (1 - jitter), d * (1 + jitter)]
    idle_ms: int
    solver_s: float  # the solver's time limit per decision
    stop_min_steps: int | None
    hold: bool  # keep the cards until a closing play exists (shed once the tallone is empty)
    calata_margin_ms: int = 5_000
    stop_solver_s: float = 2.0  # during its own Stop! the bot has 3 minutes (M9.3)
    stop_ms: int = 500  # Stop! is a reflex (one big button): the delay before it is said

    def delay_ms(self, first: bool, rng: random.Random, base: int | None = None) -> int:
        """The reaction delay before an action: the first of a decision, or the next one
        (or `base`, jittered)."""
        if base is None:
            base = self.think_ms if first else self.act_ms
        return max(1, round(base * rng.uniform(1 - self.jitter, 1 + self.jitter)))


EASY = Level("easy", depth=0, think_ms=2_500, act_ms=1_500, jitter=0.3, idle_ms=1_500,
             solver_s=0.035, stop_min_steps=None, hold=False)
MEDIUM = Level("medium", depth=2, think_ms=1_800, act_ms=1_000, jitter=0.3, idle_ms=1_000,
               solver_s=0.035, stop_min_steps=2, hold=True, stop_ms=600)
HARD = Level("hard", depth=None, think_ms=1_200, act_ms=700, jitter=0.25, idle_ms=700,
             solver_s=0.035, stop_min_steps=2, hold=True, stop_ms=400)

LEVELS: dict[str, Level] = {lv.name: lv for lv in (EASY, MEDIUM, HARD)}
BASIC = "basic"  # today's bots (`strategy.py`), the network bots' default: not a solver level
LEVEL_NAMES = (BASIC, *LEVELS)
