"""Absence in classic Machiavelli (the seeds are silent: docs/rules-decisions.md, "Classic:
absence").

A classic table waits for one player at a time, so a player who stops showing signs of life
(an action, or the app's heartbeat as the cluster hears it) would hold the others up for ever
on an untimed table. The decision:

- A1. The turn of a silent player ends by itself once they have been silent for
  `ABSENT_TURN_MS` (20 s) of that turn (from the later of the turn's start and their last sign
  of life), and at once if they were already silent for `ABSENT_MS` (90 s, as Machiavelox's
  M11.2) when it began: as a draw if the table is as the turn found it (the pass of C5),
  as a give-up (C6: restored, the penalty drawn) if they had changed it. A timed turn's clock
  (C7) still applies if it runs out first.
- A2. Only while someone is waiting: when every player of the hand is silent, no turn ends by
  absence (the hand waits for them instead of burning its stock); the 20 s count from when
  someone is heard again.
- A3. "Unknown" is not silent: a player the cluster cannot hear because of our own fault is
  never counted absent (issue 13); nobody is removed from the hand or the session for
  absence; back, a player plays their next turn as usual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .seats import Seat

ABSENT_TURN_MS = 20_000  # A1: the longest the others wait for a silent player's turn
ABSENT_MS = 90_000  # A1: silent this long, a player's turns end at once (M11.2's 90 s)


@dataclass
class Presence:
    """Who is silent, since when (ms of table time; a sign of life restarts the count), and
    who is unknown. Shared by a session and its hands."""

    silent_since: dict[Seat, int] = field(default_factory=dict)
    unknown: set[Seat] = field(default_factory=set)
    back_ms: int = 0  # the last time a silent player was heard again (A2: waiting restarts)

    def heard(self, seat: Seat, at_ms: int, alive: bool, unknown: bool = False) -> None:
        """A liveness input: alive, silent (from now, unless already), or unknown (A3)."""
        if unknown or alive:
            if self.silent_since.pop(seat, None) is not None:
                self.back_ms = at_ms
            if unknown:
                self.unknown.add(seat)
            else:
                self.unknown.discard(seat)
            return
        self.unknown.discard(seat)
        self.silent_since.setdefault(seat, at_ms)

    def sign_of_life(self, seat: Seat, at_ms: int) -> None:
        """An action: a silent player's count restarts (they stay silent until heard alive)."""
        if seat in self.silent_since:
            self.silent_since[seat] = at_ms

    def turn_ends_at(self, seat: Seat, turn_started_ms: int,
                     playing: tuple[Seat, ...]) -> int | None:
        """When the turn of `seat` (begun at `turn_started_ms`) ends by absence (A1, A2)."""
        since = self.silent_since.get(seat)
        if since is None or all(s in self.silent_since for s in playing):
            return None
        start = max(turn_started_ms, self.back_ms)  # (A2: nobody waited before)
        if start - since >= ABSENT_MS:
            return start
        return max(since, start) + ABSENT_TURN_MS
