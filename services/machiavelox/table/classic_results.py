"""A classic table's results for scoring (issue 16): one report when a hand ends, with the
session's end when it ends with that hand, and one more when an open session is ended between
hands (C11). `ClassicResults` notes them as the table changes, each with the end of the journal
that holds it: a report leaves the shard only once that much of the journal is stored
(`reporting.py`), so a result a failed write undid is never reported, and a restarted shard,
replaying its journal through the same steps, notes the same reports with the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox.classic import HandResult, Seat, Session, SessionResult

from .records import Recorder


@dataclass(frozen=True)
class ClassicOutcome:
    """What report `number` says: every ended hand so far and the session after them."""

    number: int
    hands: tuple[HandResult, ...]
    totals: tuple[int, ...]
    standings: tuple[Seat, ...]  # best first (C11, `Session.standings`)
    eliminated: tuple[Seat, ...]
    session: SessionResult | None  # once the session has ended
    journal_end: int  # the journal holds it once this many bytes of it are stored


class ClassicResults:
    """The reports of one table that scoring has not stored yet, in order."""

    def __init__(self) -> None:
        self.pending: list[ClassicOutcome] = []
        self.last = 0  # the number of the latest report noted
        self._state = (0, False)  # (hands ended, session ended) at the latest note

    def note(self, session: Session, journal: Recorder) -> None:
        """After a step of the table (its journal record added): a report if a hand or the
        session ended since the last note."""
        hands = tuple(h.result for h in session.hands if h.result is not None)
        state = (len(hands), session.result is not None)
        if state == self._state:
            return
        # a hand's end is report <hand number>; a session ended without a hand, one more
        number = len(hands) if len(hands) > self._state[0] else self.last + 1
        self._state = state
        self.last = number
        self.pending.append(ClassicOutcome(
            number, hands, tuple(session.totals), session.standings(),
            tuple(session.eliminated), session.result,
            len(journal.data) if journal.recording else 0))

    def due(self, after: int, journal: Recorder) -> list[tuple[int, ClassicOutcome]]:
        """The reports numbered above `after` whose journal records are stored."""
        return [(o.number, o) for o in self.pending
                if o.number > after and (not journal.recording or o.journal_end <= journal.durable)]

    def stored(self, number: int) -> None:
        """Scoring has stored the reports up to `number`: they are forgotten."""
        self.pending = [o for o in self.pending if o.number > number]
