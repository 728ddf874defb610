"""Absence our servers cannot see (issue 13, item 1; docs/rules-decisions.md): a `Liveness`
with `unknown=True` stops the player's absence count (M11.2), and a silence known after it
counts from when it is known, never from before; silences known at one instant mature at one
instant and are judged together (M11.3).

Would fail if unknown were read as silent (the count would run), if a silence reported after an
unknown stretch were backdated to the last sign of life before it, or if a freeze's end (M11.5)
or a long match's pause (M13.5) counted an unknown player as absent.
"""

from __future__ import annotations

from machiavelox import rules
from machiavelox.rules import Liveness, Seat

P1, P2, P3 = Seat.P1, Seat.P2, Seat.P3
ABANDON_MS = 90_000


def table() -> rules.Table:
    return rules.Table(rules.shuffled_deal(7))


def test_unknown_stops_the_count_and_a_later_silence_is_not_backdated() -> None:
    t = table()
    t.apply(Liveness(P1, False, 0), 0)  # M11.2: P1's count runs from 0
    assert t.players[P1].absence_since_ms == 0
    t.apply(Liveness(P1, False, unknown=True), 30_000)  # presence cannot tell any more
    assert t.players[P1].absence_since_ms is None
    t.advance(100_000)  # past 90 s from the last sign: nobody is abandoned for our outage
    assert t.status_word(P1) != "abandoned"
    # presence can tell again: P1 has been silent since 0, it says; counted from now
    t.apply(Liveness(P1, False, 0), 100_000)
    assert t.players[P1].absence_since_ms == 100_000


def test_unknown_while_alive_never_counts() -> None:
    t = table()
    t.apply(Liveness(P2, False, unknown=True), 1_000)
    t.advance(110_000)
    assert t.players[P2].absence_since_ms is None
    assert t.status_word(P2) != "abandoned"
    t.apply(Liveness(P2, True), 110_000)
    assert not t.players[P2].unknown and not t.players[P2].silent


def test_silences_known_at_one_instant_are_judged_together() -> None:
    """M11.3: all three silent, known at the same instant after an outage: they mature at one
    instant, so everyone is gone (no winner, -15 each), not a winner by a millisecond."""
    t = table()
    for seat, last_sign in ((P1, 0), (P2, 1_000), (P3, 2_000)):
        t.apply(Liveness(seat, False, last_sign), 5_000)
    for seat in (P1, P2, P3):
        t.apply(Liveness(seat, False, unknown=True), 6_000)
    for seat, last_sign in ((P1, 0), (P2, 1_000), (P3, 2_000)):
        t.apply(Liveness(seat, False, last_sign), 20_000)  # presence back: silent all along
    t.advance(20_000 + ABANDON_MS)
    assert t.result is not None
    assert t.result.ending == "everyone-gone"
    assert t.result.winner is None


def test_a_freeze_ending_does_not_restart_an_unknown_players_count() -> None:
    """M11.5: at a freeze's end the frozen silent players count from zero; an unknown one does
    not count at all."""
    t = table()
    t.apply(Liveness(P2, False, 0), 0)
    t.apply(Liveness(P2, False, unknown=True), 1_000)
    t.apply(rules.Stop(P1), 2_000)
    assert t.phase.value == "frozen"
    t.advance(2_000 + 181_000)  # the Stop! runs out (3 min) and the freeze ends
    assert t.phase.value != "frozen"
    assert t.players[P2].absence_since_ms is None


def test_an_unknown_player_is_not_out_when_a_long_match_pause_ends() -> None:
    """M13.5 counts known silence only."""
    m = rules.Match(rules.MatchKind.LONG, rules.shuffled_deal(3), start_ms=0)
    m.apply(Liveness(P3, False, unknown=True), 1_000)
    m.apply(rules.Abandon(P1), 2_000)
    m.apply(rules.Abandon(P2), 3_000)  # the smazzata ends: the pause begins
    assert m.phase == "pause"
    m.deal_next(rules.shuffled_deal(4), m.now_ms)
    m.advance(m.now_ms + 200_000)
    assert m.phase != "ended" or m.result is None or P3 not in m.out
    assert P3 not in m.out
