"""One table on a shard: the match, its sequencer, its numbered event log.

Actions are applied one at a time in arrival order (the shard's event loop is the only
writer); each gets an arrival index, the fairness rule made observable (M2.3, M6.4). Every event
gets the table's next sequence number; the log keeps them all, so a session resuming from any
sequence number gets exactly what it missed, redacted for its seat (P5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from machiavelox import rules
from machiavelox.rules.view import view_for


@dataclass
class Applied:
    """The outcome of one action: accepted (first_seq, arrival) or refused (error)."""

    arrival: int
    first_seq: int = 0
    error: rules.RulesError | None = None
    events: list[tuple[int, rules.Event]] = field(default_factory=list)


class TableHost:
    def __init__(self, table_id: str, players: list[str], kind: rules.MatchKind,
                 competitive: bool, created_wall_ms: int, deal: rules.Deal | None = None,
                 time_scale: float = 1.0) -> None:
        if len(players) != 3 or len(set(players)) != 3:
            raise ValueError("a table seats three different players (M1.5)")
        self.table_id = table_id
        self.players = list(players)
        self.seats = {p: rules.Seat(i) for i, p in enumerate(players)}
        self.kind = kind
        self.competitive = competitive
        self.origin_ms = created_wall_ms  # table time 0
        self.time_scale = time_scale  # > 1 only for demos: the rules' clock runs faster
        first = deal if deal is not None else rules.shuffled_deal()
        self.deals: list[rules.Deal] = [first]
        self.match = rules.Match(kind, first, start_ms=0)
        self.log: list[tuple[int, int, str, rules.Action]] = []  # (arrival, at_ms, player, action)
        self.events: list[rules.Event] = []  # seq = index + 1
        self.arrivals = 0
        self.reported = 0  # smazzate already reported to scoring

    # ------------------------------------------------------------------ time
    def table_ms(self, wall_ms: int) -> int:
        """The table's time now (never backwards)."""
        return max(self.to_table_ms(wall_ms), self.match.now_ms)

    def to_table_ms(self, wall_ms: int) -> int:
        return int((wall_ms - self.origin_ms) * self.time_scale)

    def next_wall_deadline(self) -> int | None:
        at = self.match.next_deadline()
        return None if at is None else self.origin_ms + int(-(-at // self.time_scale))

    # ------------------------------------------------------------------ sequencer
    def apply(self, player_id: str, action: rules.Action, wall_ms: int) -> Applied:
        """Apply one action of a seated player (callers check the seat) at arrival."""
        self.arrivals += 1
        now = self.table_ms(wall_ms)
        timer_events = self.match.advance(now)
        done = Applied(self.arrivals, events=self._record(timer_events))
        try:
            produced = self.match.apply(action, now)
        except rules.RulesError as err:
            done.error = err
            return done
        self.log.append((self.arrivals, now, player_id, action))
        recorded = self._record(produced)
        done.events += recorded
        done.first_seq = recorded[0][0] if recorded else len(self.events)
        return done

    def advance(self, wall_ms: int) -> list[tuple[int, rules.Event]]:
        return self._record(self.match.advance(self.table_ms(wall_ms)))

    def _record(self, events: list[rules.Event]) -> list[tuple[int, rules.Event]]:
        out = []
        for ev in events:
            self.events.append(ev)
            out.append((len(self.events), ev))
        self._deal_if_paused()
        return out

    def _deal_if_paused(self) -> None:
        """A long match in its pause gets its next deal at once; it starts when the pause ends."""
        m = self.match
        if m.needs_deal:
            deal = rules.shuffled_deal()
            self.deals.append(deal)
            m.deal_next(deal, m.now_ms)

    # ------------------------------------------------------------------ reading
    @property
    def seq(self) -> int:
        return len(self.events)

    def events_after(self, seq: int, seat: rules.Seat, limit: int | None = None
                     ) -> list[tuple[int, rules.Event]]:
        """The events after `seq` (at most `limit` of them), redacted for `seat` (P5)."""
        end = None if limit is None else seq + limit
        return [(i + 1, ev.for_viewer(seat)) for i, ev in enumerate(self.events[seq:end], seq)]

    def view(self, seat: rules.Seat) -> rules.PlayerView:
        return view_for(self.match.table, seat)

    def statuses(self) -> list[str]:
        return [self.match.status_word(s) for s in rules.SEATS]

    @property
    def finished(self) -> bool:
        return self.match.result is not None

    def smazzate_to_report(self) -> list[tuple[int, rules.SmazzataResult]]:
        """Ended smazzate not yet reported to scoring: (number from 1, result)."""
        out = []
        for number, table in enumerate(self.match.smazzate, 1):
            if number > self.reported and table.result is not None:
                out.append((number, table.result))
        return out
