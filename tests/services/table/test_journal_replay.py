"""Property test: for random games, a table replayed from its journal is the live table.

The random players of the rules' property tests (tests/rules/sim/agents.py) play a single or
a long match on a `TableHost` with a journal, with time passing, timer advances, presence changes
(M11), Stop! (M9), give-ups and abandons (M11.6), the long match's pause (M13.4, M13.5) and
restarts (`resume`). At the end, and at a random point mid-game, `TableHost.restore` from the
journal's bytes must give exactly the live table's events (every field, every sequence
number), the same arrival count, the same view for every seat, the same next deadline and the
same smazzate; then both play on identically. Would fail if any input that changes a table
were not journaled, were journaled with the wrong time or arrival, or replayed differently.
"""

from __future__ import annotations

import os
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from machiavelox import codec, rules
from machiavelox.platform.errors import ServiceError
from machiavelox.table.host import INTERRUPTED, TableHost
from tests.rules.sim.agents import Agents

DERANDOMIZE = os.environ.get("CI") == "true" and not os.environ.get("MACHIAVELOX_HYPOTHESIS_RANDOM")
SETTINGS = settings(max_examples=40, deadline=None, derandomize=DERANDOMIZE, database=None)
PLAYERS = ["ann", "bob", "cy"]
ORIGIN_MS = 1_700_000_000_000


def _same(live: TableHost, replayed: TableHost) -> None:
    assert replayed.events == live.events
    assert replayed.seq == live.seq
    every = range(1, live.seq + 1)  # which arrival made each event (Event.arrival_index)
    assert [replayed.arrival_of(i) for i in every] == [live.arrival_of(i) for i in every]
    # refusals carry no arrival index (docs/architecture.md): after a restart the count goes
    # on from the last journaled input
    assert (live.log[-1][0] if live.log else 0) <= replayed.arrivals <= live.arrivals
    assert replayed.log == live.log
    assert replayed.origin_ms == live.origin_ms
    assert replayed.next_wall_deadline() == live.next_wall_deadline()
    assert replayed.match.phase == live.match.phase
    assert replayed.statuses() == live.statuses()
    assert [s.result for s in replayed.match.smazzate] == [s.result for s in live.match.smazzate]
    assert replayed.deals == live.deals
    for seat in rules.SEATS:
        assert replayed.view(seat) == live.view(seat)


def _step(host: TableHost, rng: random.Random, players: Agents, wall: int) -> int:
    """One random input to the table at about `wall`; the wall clock after it."""
    wall += rng.choice([0, 5, 50, 400, 2_000, 9_000, 41_000])
    roll = rng.random()
    player = rng.choice(PLAYERS)
    seat = host.seats[player]
    if roll < 0.1:
        host.advance(wall)
    elif roll < 0.14:
        host.apply(player, rules.Liveness(seat, rng.random() < 0.5,
                                          rng.choice([None, host.match.now_ms])), wall)
    elif roll < 0.16:
        host.apply(player, rules.Stop(seat), wall)
    elif roll < 0.17:
        ending: list[rules.Action] = [rules.GiveUp(seat), rules.Abandon(seat)]
        host.apply(player, rng.choice(ending), wall)
    elif roll < 0.2 and host.match.phase == "pause":
        pause: list[rules.Action] = [rules.Ready(seat), rules.Ready(seat), rules.Leave(seat)]
        host.apply(player, rng.choice(pause), wall)
    elif roll < 0.21:
        host.resume(wall + rng.choice([1_000, 60_000]))
    else:
        players.table = host.match.table
        action = players.choose(seat)
        try:  # as the shard gets it: from the wire (no app can send junk it cannot decode)
            wire = None if action is None else codec.action_to_pb(action)
            decoded = None if wire is None else codec.action_from_pb(seat, wire)
        except (ValueError, ServiceError):
            decoded = None
        if decoded is not None:
            host.apply(player, decoded, wall, wire)
    return wall


@SETTINGS
@given(seed=st.integers(0, 2**32), long_match=st.booleans(), steps=st.integers(20, 220))
def test_a_replayed_journal_gives_the_live_table(seed: int, long_match: bool,
                                                 steps: int) -> None:
    rng = random.Random(seed)
    kind = rules.MatchKind.LONG if long_match else rules.MatchKind.SINGLE
    host = TableHost("t-1", PLAYERS, kind, competitive=not long_match,
                     created_wall_ms=ORIGIN_MS, deal=rules.shuffled_deal(seed))
    players = Agents(random.Random(seed + 1), host.match.table)
    wall = ORIGIN_MS
    middle = rng.randrange(steps)
    for i in range(steps):
        if host.finished:
            break
        wall = _step(host, rng, players, wall)
        if i == middle:
            _same(host, TableHost.restore("t-1", bytes(host.journal.data)))
    replayed = TableHost.restore("t-1", bytes(host.journal.data))
    _same(host, replayed)
    if not host.finished and not long_match:  # both play on alike (a long match's next
        # deal would be drawn anew by each)
        wall += 50_000
        assert replayed.advance(wall) == host.advance(wall)
        _same(host, replayed)


def test_resume_pauses_the_clock_and_tells_every_seat() -> None:
    """The outage counts for no rule: after `resume`, the table time is where the journal
    left it, the next deadline is as far away as it was, and one event says how long."""
    host = TableHost("t-2", PLAYERS, rules.MatchKind.SINGLE, True, ORIGIN_MS,
                     rules.shuffled_deal(7))
    host.apply("ann", rules.Draw(rules.Seat.P1), ORIGIN_MS + 3_000)
    before = host.next_wall_deadline()
    assert before is not None
    left_ms = before - (ORIGIN_MS + 3_000)
    events = host.resume(ORIGIN_MS + 3_000 + 600_000)  # ten minutes later
    assert [ev.kind for _, ev in events] == [INTERRUPTED]
    assert events[0][1].detail == "600000"
    assert host.next_wall_deadline() == ORIGIN_MS + 603_000 + left_ms
    assert host.advance(ORIGIN_MS + 603_000 + left_ms - 1) == []
    _same(host, TableHost.restore("t-2", bytes(host.journal.data)))


def test_a_result_is_reportable_only_once_its_end_is_stored() -> None:
    """A smazzata's end is reported only once the journal write holding it is stored: a write
    in flight may hold it, and one that fails undoes it (the result would be a phantom).
    Two players abandon (M11.3): the smazzata ends."""
    host = TableHost("t-3", PLAYERS, rules.MatchKind.SINGLE, True, ORIGIN_MS,
                     rules.shuffled_deal(11))
    host.journal.durable = len(host.journal.data)  # a write stored everything so far
    host.apply("ann", rules.Abandon(rules.Seat.P1), ORIGIN_MS + 1_000)
    host.apply("bob", rules.Abandon(rules.Seat.P2), ORIGIN_MS + 2_000)
    assert host.finished
    assert host.smazzate_to_report() == [], "its end is not stored yet"
    host.journal.durable = len(host.journal.data)
    [(number, result)] = host.smazzate_to_report()
    assert number == 1 and result == host.match.smazzate[0].result
    replayed = TableHost.restore("t-3", bytes(host.journal.data))
    assert replayed.smazzate_to_report() == [(1, result)], "a replayed end is stored"
