"""Classic events: what an accepted action, a turn's clock or a hand's end produced.

The same shape as Machiavelox's `rules.Event` (kind, time, player, cards, melds, a secret for
one viewer, `words()` for scenarios, `for_viewer()` for P5), with `count` for the number some
events carry (`penalty p1 3`). It is its own class only because `rules.Event.player` is typed
with the three-seat `rules.Seat`; once seats are shared (see the classic section of
docs/rules-engine.md) the two can be one.

Kinds: turn P, melded P, attached P, moved P, swapped P, played P (a valid end of turn), opened
P, drew P, timeout P, restored P, penalty P N, stock-out P, hand-won P, hand-ended, eliminated
P, ended [P] (the session is over, with its winner when there is one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .cards import ClassicCard
from .seats import Seat


@dataclass(slots=True, unsafe_hash=True)
class ClassicEvent:
    """A value: never changed once made (`for_viewer` copies)."""

    kind: str
    at_ms: int
    player: Seat | None = None
    cards: tuple[ClassicCard, ...] = ()
    meld: int | None = None
    to_meld: int | None = None
    count: int | None = None
    detail: str = ""
    secret_to: Seat | None = None  # the cards are shown to this player only

    def words(self) -> list[str]:
        """The scenario-format rendering: ``penalty p1 3``, ``hand-won p2``, ``ended``."""
        out = [self.kind]
        if self.player is not None:
            out.append(str(self.player))
        if self.count is not None:
            out.append(str(self.count))
        return out

    def for_viewer(self, viewer: Seat | None) -> ClassicEvent:
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
