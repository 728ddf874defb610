"""A classic player's actions: one frozen value per verb (SCENARIO-FORMAT.md, "Classic").

Melds are named by their table id (an int the engine assigns); `None` as a destination means
a new meld. Cards are exact physical cards. Only the player whose turn it is may act (C5),
except `EndSession`, which belongs to the pause between the hands of an open session, and
`Liveness`, what the cluster hears of any player (absence.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox.rules import Card

from .cards import ClassicCard, Joker
from .seats import Seat


@dataclass(frozen=True, slots=True)
class Meld:
    """C5: three or more hand cards put down as one new meld."""
    player: Seat
    cards: tuple[ClassicCard, ...]


@dataclass(frozen=True, slots=True)
class Attach:
    """C5: one hand card added to any meld on the table."""
    player: Seat
    card: ClassicCard
    meld: int


@dataclass(frozen=True, slots=True)
class Move:
    """C3, C5: rearranging: one table card to another meld, or to a new one (`dst` None)."""
    player: Seat
    card: ClassicCard
    src: int
    dst: int | None


@dataclass(frozen=True, slots=True)
class Swap:
    """C2: a hand card takes the place of the joker that stands for it; the joker goes to the
    player's hand."""
    player: Seat
    card: Card
    joker: Joker
    meld: int


@dataclass(frozen=True, slots=True)
class End:
    """C5: end the turn; refused unless the table is in order and a hand card was played."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Draw:
    """C5: draw one card from the stock, which ends the turn (only with the table untouched)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Restore:
    """C6: give up the turn: the table as it was, the cards played back, the penalty drawn."""
    player: Seat


@dataclass(frozen=True, slots=True)
class EndSession:
    """C11: between two hands of an open session, end it (the lowest total wins)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Liveness:
    """What the cluster hears of a player (absence.py): alive, silent, or unknown (our own
    fault: never counted). Any seat, at any time."""
    player: Seat
    alive: bool
    unknown: bool = False


ClassicAction = Meld | Attach | Move | Swap | End | Draw | Restore | EndSession | Liveness
TURN_ACTIONS = (Meld, Attach, Move, Swap, End, Draw, Restore)
