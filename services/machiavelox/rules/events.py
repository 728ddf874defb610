"""Events: what an accepted action or a timer produced. They become the cluster's wire events.

An event may carry cards only one player may see (a drawn card): `secret_to` names that player,
and `for_viewer()` gives everyone else a copy without the cards (P5).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from .cards import Card
from .seats import Seat


class EventKind(enum.StrEnum):
    """What an event says happened: its value is the word of the scenario format and of the
    wire's `Event.kind` string (the wire's `EventKind` enum carries the same, codec.py)."""

    DREW = "drew"
    DECLARED = "declared"
    UNDECLARED = "undeclared"
    DIRECT = "direct"
    ATTACHED = "attached"
    PLACED = "placed"
    TOOK = "took"
    MOVED = "moved"
    RELEASED = "released"
    HOLD_EXPIRED = "hold-expired"
    CALATA_OPENED = "calata-opened"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    VOID = "void"
    CANCELLED = "cancelled"
    CHAIN = "chain"
    CONSOLIDATED = "consolidated"
    RESERVED = "reserved"
    FORCED_DRAW = "forced-draw"
    STOP = "stop"
    RESUMED = "resumed"
    ELIMINATED = "eliminated"
    ABANDONED = "abandoned"
    CLOSED = "closed"
    SILENCE = "silence"
    TIEBREAK = "tiebreak"
    ENDED = "ended"
    SMAZZATA = "smazzata"
    PAUSE = "pause"
    READY = "ready"
    LEFT = "left"
    MATCH_ENDED = "match-ended"
    INTERRUPTED = "interrupted"  # (made by the shard: no shard served the table for a while)


@dataclass(slots=True, unsafe_hash=True)
class Event:
    """A value: never changed once made (`for_viewer` copies). Not a frozen dataclass only
    because a frozen one's construction costs microseconds on the path of every action."""

    kind: EventKind
    at_ms: int
    player: Seat | None = None
    by: Seat | None = None  # the cause, for `chain`
    cards: tuple[Card, ...] = ()
    meld: int | None = None
    to_meld: int | None = None
    melds: tuple[int, ...] = ()  # melds created (direct, new, splits)
    detail: str = ""
    secret_to: Seat | None = None

    def words(self) -> list[str]:
        """The scenario-format rendering: kind, then its arguments (``chain p2 by p1``)."""
        out: list[str] = [self.kind]
        if self.player is not None:
            out.append(str(self.player))
        if self.by is not None:
            out += ["by", str(self.by)]
        return out

    def for_viewer(self, viewer: Seat | None) -> Event:
        """The event as `viewer` may see it (None: a spectator)."""
        if self.secret_to is None or viewer == self.secret_to:
            return self
        return replace(self, cards=(), secret_to=None)

    def __str__(self) -> str:
        parts = [f"{self.at_ms / 1000:g}s", *self.words()]
        if self.cards:
            parts.append(" ".join(c.face for c in self.cards))
        if self.detail:
            parts.append(f"({self.detail})")
        return " ".join(parts)
