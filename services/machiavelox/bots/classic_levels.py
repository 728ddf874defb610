"""Classic Machiavelli bot strengths as data (docs/bots.md, "Classic levels"). Pure values.

The names are the Machiavelox levels' (`levels.py`); what a strength means differs, since a
classic turn is no race (C7 gives minutes): no reaction delays, no Stop!, only how much of
the table the planner may work with, whether it swaps jokers, and how long it searches.

- `depth`: table melds one turn may rearrange, i.e. take a card from or move a table card
  into (C3, C5). None: any (the whole table); 0: none: the turn lays new melds from the hand
  and attaches hand cards to table melds, each of which keeps its cards and its jokers where
  they stand. With a bound, the planner picks at most `depth` melds to rework and may only
  attach hand cards to the others (`classic_solver.py`, "Bounded levels");
- `swaps`: whether a hand card may take a joker's place (C2);
- `solver_s`: the planner's time limit per decision, the model's construction included.

`basic` (the practice tables' and the terminal client's default, today's non-solver bots in
Machiavelox) has no classic bot of its own: at a practice table it is `easy`, the classic bot
that, like them, never rearranges the table (`practice_level`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .levels import BASIC
from .levels import EASY as _EASY
from .levels import HARD as _HARD
from .levels import MEDIUM as _MEDIUM


@dataclass(frozen=True, slots=True)
class ClassicLevel:
    name: str
    depth: int | None  # table melds one turn may rearrange (None: any)
    swaps: bool  # joker swaps (C2)
    solver_s: float  # the planner's time limit per decision


EASY = ClassicLevel(_EASY.name, depth=0, swaps=False, solver_s=0.05)
MEDIUM = ClassicLevel(_MEDIUM.name, depth=2, swaps=True, solver_s=0.1)
HARD = ClassicLevel(_HARD.name, depth=None, swaps=True, solver_s=0.25)  # today's bot

CLASSIC_LEVELS: dict[str, ClassicLevel] = {lv.name: lv for lv in (EASY, MEDIUM, HARD)}


def practice_level(name: str) -> ClassicLevel:
    """The classic strength of a practice level (`levels.LEVEL_NAMES`): `basic` is `easy`."""
    return EASY if name == BASIC else CLASSIC_LEVELS[name]


def named(name: str) -> ClassicLevel:
    """A classic bot's level by name; `basic` (the network bots' default: a bot nobody gave a
    level) is `hard`, the one strength classic bots had before the levels."""
    return HARD if name == BASIC else CLASSIC_LEVELS[name]
