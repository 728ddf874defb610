"""Player actions: small frozen values, one per verb of the game (and of the scenario format).

Melds are named by their table id (an int the engine assigns); `None` as a destination means a
new meld. Cards are exact physical cards.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cards import Card
from .seats import Seat


@dataclass(frozen=True, slots=True)
class Draw:
    """M4.2: draw the top card of one's own tallone."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Declare:
    """M5.3 DECLARE: hand cards uncovered into the pozzetto (opens or extends a calata)."""
    player: Seat
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class Undeclare:
    """Pozzetto cards taken back into the hand."""
    player: Seat
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class Direct:
    """M5.1: pozzetto cards put down at once as one new regular meld."""
    player: Seat
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class Attach:
    """M5.2: a hand card added to an existing meld."""
    player: Seat
    card: Card
    meld: int


@dataclass(frozen=True, slots=True)
class Place:
    """M5.3 PLACE: a pozzetto card put into an existing meld."""
    player: Seat
    card: Card
    meld: int


@dataclass(frozen=True, slots=True)
class Take:
    """M6.1: hold a table card (needs a declaration, M6.2)."""
    player: Seat
    card: Card
    meld: int


@dataclass(frozen=True, slots=True)
class Put:
    """Put the held card into a meld, or into a new meld when `meld` is None."""
    player: Seat
    meld: int | None


@dataclass(frozen=True, slots=True)
class Move:
    """Take and put at once: a table card from one meld to another (None: a new meld)."""
    player: Seat
    card: Card
    src: int
    dst: int | None


@dataclass(frozen=True, slots=True)
class Release:
    """Let go of the held card where it is."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Conclude:
    """Conclude the open calata now (M5.4)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Cancel:
    """ANNULLA (M5.5.6): give up the open calata, all of its work."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Stop:
    """Stop! (M9)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class GiveUp:
    """The stopper gives up the freeze (M9.6)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Abandon:
    """ABBANDONA (M11.6)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Liveness:
    """Presence input (M11): `alive=True` is a sign of life and continuous presence from now;
    `alive=False` means no more signs of life (the absence clock runs) since `since_ms`, the
    last sign of life in table time (default: now; never before the start, M11.5).
    `unknown=True` (service decision, issue 13): nobody can tell now (presence or the player's
    gateway unreachable): the absence clock stops, and a silence known after it counts from
    when it is known, never from before (`alive` and `since_ms` are then ignored)."""
    player: Seat
    alive: bool
    since_ms: int | None = None
    unknown: bool = False


@dataclass(frozen=True, slots=True)
class Ready:
    """Ready for the next smazzata during the pause of a long match (M13.4)."""
    player: Seat


@dataclass(frozen=True, slots=True)
class Leave:
    """Leave the long match during the pause (M13.5)."""
    player: Seat


Action = (Draw | Declare | Undeclare | Direct | Attach | Place | Take | Put | Move | Release
          | Conclude | Cancel | Stop | GiveUp | Abandon | Liveness | Ready | Leave)
