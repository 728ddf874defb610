"""The bots' view kept from the events (bots/viewkeeper.py), in-process on the engine.

Seeded smazzate between leveled bots and today's bots (`arena.play`, which shows the table
after every step): each seat keeps a `ViewKeeper` fed with the events as that seat receives
them (`Event.for_viewer`, on the wire form), reset from its snapshot (`view_for` through
`view_to_pb` / `view_from_pb`) only when the keeper says it cannot apply an event. After every
step the kept view must equal the snapshot the seat would get then (what liveness changes
without events apart: dormancy and absence, P4, M11, and the table clock between events),
and the keeper must need a snapshot for only a few of the steps.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from machiavelox import codec, rules
from machiavelox.bots.arena import BaselineBot, LeveledBot, Player, play
from machiavelox.bots.levels import LEVELS
from machiavelox.bots.viewkeeper import ViewKeeper
from tests.bots.test_network_bots import wire_statuses

BASE = frozenset({"drew", "attached", "confirmed", "calata-opened"})
# (the games are not reproducible to the card on a loaded machine: the solver's time limit)
GAMES = [(0, ("hard", "medium", "easy"), BASE), (2, ("hard", "basic", "basic"), BASE),
         (10, ("easy", "easy", "medium"), BASE)]


def snapshot(table: rules.Table, seat: rules.Seat) -> rules.PlayerView:
    view = rules.view_for(table, seat)
    return codec.view_from_pb(codec.view_to_pb(view, "t-1", view.phase, wire_statuses(view)))


def without_liveness(view: rules.PlayerView) -> rules.PlayerView:
    s1, s2, s3 = (replace(s, dormant=False, silent_since_ms=None, abandon_at_ms=None)
                  for s in view.seats)
    return replace(view, seats=(s1, s2, s3), now_ms=0)


def bots(seed: int, levels: tuple[str, str, str]) -> list[Player]:
    return [BaselineBot(rules.Seat(i)) if name == "basic"
            else LeveledBot(rules.Seat(i), LEVELS[name], seed=seed + i)
            for i, name in enumerate(levels)]


@pytest.mark.parametrize(("seed", "levels", "applied"), GAMES)
def test_the_kept_view_is_the_next_snapshot(seed: int, levels: tuple[str, str, str],
                                            applied: frozenset[str]) -> None:
    keepers = [ViewKeeper() for _ in rules.SEATS]
    seen = {"events": 0, "steps": 0, "snapshots": 0, "checked": 0}
    kinds: set[str] = set()

    def watch(table: rules.Table) -> None:
        new = table.events[seen["events"]:]
        if not new and seen["steps"]:
            return
        seen["steps"] += 1
        for seat, keeper in zip(rules.SEATS, keepers, strict=True):
            for n, ev in enumerate(new, start=seen["events"] + 1):
                keeper.apply(codec.event_to_pb(ev.for_viewer(seat), seq=n))
            truth = snapshot(table, seat)
            if keeper.current:
                kept = keeper.view()
                assert without_liveness(kept) == without_liveness(truth), (seed, seat, new)
                assert kept.now_ms == new[-1].at_ms
                seen["checked"] += 1
                kinds.update(ev.kind for ev in new)
            else:
                keeper.reset(truth, seen["events"] + len(new))
                seen["snapshots"] += 1
        seen["events"] += len(new)

    outcome = play(seed, bots(seed, levels), watch=watch)
    assert outcome.ending != "cut"
    assert seen["checked"] > 100
    assert applied <= kinds, "the kinds of event the kept views followed"
    # snapshots: the first, and the steps the events do not spell out (a chain, Stop!,
    # consolidations it cannot attribute, the end): a small part of the steps
    assert seen["snapshots"] * 5 < seen["checked"], seen


def test_the_keeper_wants_a_snapshot_for_a_gap_and_a_chain() -> None:
    table = rules.Table(rules.shuffled_deal(0))
    keeper = ViewKeeper()
    keeper.reset(snapshot(table, rules.Seat.P1), 0)
    [drew] = table.apply(rules.Draw(rules.Seat.P1), 10)
    assert keeper.apply(codec.event_to_pb(drew, seq=1))
    assert keeper.view().hand == snapshot(table, rules.Seat.P1).hand
    [again] = table.apply(rules.Draw(rules.Seat.P2), 20)
    assert not keeper.apply(codec.event_to_pb(again.for_viewer(rules.Seat.P1), seq=3)), \
        "a gap in the sequence numbers"
    assert not keeper.current
    keeper.reset(snapshot(table, rules.Seat.P1), 2)
    chain = rules.Event(rules.EventKind.CHAIN, 30, rules.Seat.P2, by=rules.Seat.P3)
    assert not keeper.apply(codec.event_to_pb(chain, seq=3)), "M5.5: a chain is a snapshot's"
