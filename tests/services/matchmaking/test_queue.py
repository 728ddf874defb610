"""The competitive queue, the roster and friendly lobbies: pure logic, time passed in."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from machiavelox.matchmaking.queue import (
    PARTNER_SCAN,
    FriendlyLobbies,
    MatchQueue,
    Refused,
    Roster,
    Spot,
    Ticket,
    UnknownCode,
    find_groups,
    window,
)
from machiavelox.rules import MatchKind


@pytest.fixture
def queue() -> MatchQueue:
    return MatchQueue(Roster(), base_window=5.0, widen_per_s=1.0)


def ticket(player: str, ordinal: float, at_ms: int) -> Ticket:
    return Ticket(f"t-{player}", player, ordinal, at_ms)


def players(groups: list[tuple[Ticket, ...]]) -> list[list[str]]:
    return [[t.player for t in g] for g in groups]


def test_the_window_widens_with_waited_time(queue: MatchQueue) -> None:
    t = ticket("ann", 0.0, 10_000)
    assert queue.window(t, 10_000) == 5.0
    assert queue.window(t, 12_500) == pytest.approx(7.5)
    assert queue.window(t, 30_000) == pytest.approx(25.0)


def test_three_similar_players_match_at_once(queue: MatchQueue) -> None:
    for name, ordinal in (("ann", 0.0), ("bob", 1.5), ("cy", -2.0)):
        queue.add(ticket(name, ordinal, 0))
    assert players(queue.match(0)) == [["ann", "bob", "cy"]]
    assert len(queue) == 0
    spot = queue.roster.where("ann")
    assert spot is not None and spot.kind == "table"  # being seated: cannot queue again
    with pytest.raises(Refused) as err:
        queue.add(ticket("ann", 0.0, 1))
    assert err.value.reason == "ticket/seated"


def test_two_players_do_not_make_a_table(queue: MatchQueue) -> None:
    queue.add(ticket("ann", 0.0, 0))
    queue.add(ticket("bob", 0.0, 0))
    assert queue.match(600_000) == []
    assert len(queue) == 2


def test_a_far_apart_player_waits_until_the_windows_cover_them(queue: MatchQueue) -> None:
    queue.add(ticket("ann", 0.0, 0))
    queue.add(ticket("bob", 1.0, 0))
    queue.add(ticket("far", 12.0, 0))
    # 12 points apart: every window must reach 12, i.e. 7 s of waiting at 1 point per second.
    assert queue.match(0) == []
    assert queue.match(6_900) == []
    assert players(queue.match(7_000)) == [["ann", "bob", "far"]]


def test_each_member_must_have_the_others_inside_its_own_window(queue: MatchQueue) -> None:
    queue.add(ticket("old1", 0.0, 0))
    queue.add(ticket("old2", 0.0, 0))
    queue.add(ticket("new", 9.0, 20_000))  # new: window 5 at 20 s, old ones: 25
    assert queue.match(20_000) == []
    assert players(queue.match(24_000)) == [["old1", "old2", "new"]]


def test_the_longest_waiting_tickets_are_served_first(queue: MatchQueue) -> None:
    for name, at_ms in (("d", 200), ("a", 100), ("c", 300), ("b", 400)):
        queue.add(ticket(name, 0.0, at_ms))
    assert players(queue.match(1_000)) == [["a", "d", "c"]]
    assert len(queue) == 1 and queue.get("t-b") is not None


def test_an_oldest_ticket_that_fits_nobody_does_not_block_the_others(queue: MatchQueue) -> None:
    queue.add(ticket("loner", 100.0, 0))
    for name in ("a", "b", "c"):
        queue.add(ticket(name, 0.0, 1_000))
    assert players(queue.match(2_000)) == [["a", "b", "c"]]
    assert len(queue) == 1


def test_partners_are_found_even_if_the_first_candidate_fits_no_third(
        queue: MatchQueue) -> None:
    queue.add(ticket("anchor", 0.0, 0))
    queue.add(ticket("low", -5.0, 1))  # fits the anchor, but neither "high" nor "mid"
    queue.add(ticket("high", 5.0, 2))
    queue.add(ticket("mid", 1.0, 3))
    assert players(queue.match(3)) == [["anchor", "high", "mid"]]
    assert queue.get("t-low") is not None


def test_many_tickets_make_many_groups_of_similar_players(queue: MatchQueue) -> None:
    clock = itertools.count()
    for i in range(9):
        queue.add(ticket(f"p{i}", float(i // 3) * 20, next(clock)))
    groups = queue.match(10)
    assert sorted(players(groups)) == [["p0", "p1", "p2"], ["p3", "p4", "p5"],
                                       ["p6", "p7", "p8"]]


def test_a_player_cannot_hold_two_tickets(queue: MatchQueue) -> None:
    queue.add(ticket("ann", 0.0, 0))
    with pytest.raises(Refused) as err:
        queue.add(Ticket("another", "ann", 0.0, 5))
    assert err.value.reason == "ticket/duplicate"
    assert len(queue) == 1


def test_a_cancelled_ticket_frees_the_player(queue: MatchQueue) -> None:
    queue.add(ticket("ann", 0.0, 0))
    assert queue.remove("t-ann") is not None
    assert queue.remove("t-ann") is None
    queue.add(ticket("ann", 0.0, 1))
    assert len(queue) == 1


def test_seated_players_are_refused_until_their_table_is_released(queue: MatchQueue) -> None:
    queue.roster.seat(("ann", "bob", "cy"), "shard-0.abc")
    with pytest.raises(Refused) as err:
        queue.add(ticket("bob", 0.0, 0))
    assert err.value.reason == "ticket/seated" and "shard-0.abc" in err.value.message
    assert queue.roster.players_at("shard-0.abc") == ("ann", "bob", "cy")
    assert queue.roster.release("shard-0.abc") == ("ann", "bob", "cy")
    queue.add(ticket("bob", 0.0, 0))


def test_requeued_tickets_keep_their_age(queue: MatchQueue) -> None:
    for name in ("a", "b", "c"):
        queue.add(ticket(name, 0.0, 0))
    (group,) = queue.match(0)
    queue.add(ticket("late", 0.0, 5_000))
    for t in group:
        queue.roster.free(t.player)
    queue.requeue(group[:2])  # c's stream went away meanwhile
    assert players(queue.match(6_000)) == [["a", "b", "late"]]


def codes() -> FriendlyLobbies:
    names = iter(["CODE01", "CODE01", "CODE02"])
    return FriendlyLobbies(Roster(), lambda: next(names))


def test_friendly_lobbies_seat_the_first_three_joiners() -> None:
    lobbies = codes()
    first = lobbies.create("ann", MatchKind.LONG, 0)
    second = lobbies.create("eve", MatchKind.SINGLE, 0)
    assert (first.code, second.code) == ("CODE01", "CODE02")  # a taken code is drawn again
    for name in ("ann", "bob", "ann", "cy"):  # joining twice is idempotent
        lobbies.join("CODE01", name)
    assert first.players == ["ann", "bob", "cy"] and first.full
    with pytest.raises(Refused) as err:
        lobbies.join("CODE01", "dan")
    assert err.value.reason == "friendly/full"
    with pytest.raises(UnknownCode) as unknown:
        lobbies.join("NOPE00", "dan")
    assert "NOPE00" not in unknown.value.message  # codes are never echoed
    with pytest.raises(Refused) as err:
        lobbies.join("CODE02", "bob")  # already waiting at another table
    assert err.value.reason == "ticket/duplicate"
    assert lobbies.ready() == [first] and lobbies.ready() == []
    assert not lobbies.leave("CODE01", "bob")  # being placed: too late to leave
    lobbies.placed("CODE01", "shard-1.xyz")
    assert lobbies.roster.players_at("shard-1.xyz") == ("ann", "bob", "cy")
    assert lobbies.release("shard-1.xyz") is first
    assert lobbies.get("CODE01") is None


def test_a_joiner_who_leaves_frees_the_seat() -> None:
    lobbies = codes()
    lobby = lobbies.create("ann", MatchKind.SINGLE, 0)
    lobbies.join(lobby.code, "ann")
    lobbies.join(lobby.code, "bob")
    assert lobbies.leave(lobby.code, "bob")
    assert lobby.players == ["ann"] and lobbies.roster.where("bob") is None
    lobbies.join(lobby.code, "cy")
    lobbies.join(lobby.code, "dan")
    assert lobby.full


def test_a_player_has_one_open_lobby_until_it_is_placed() -> None:
    lobbies = FriendlyLobbies(Roster(), iter(f"CODE{i:02}" for i in range(10)).__next__)
    first = lobbies.create("ann", MatchKind.LONG, 0)
    for at_ms in (1, 2, 3):  # a retried call: the same lobby, its age unchanged
        assert lobbies.create("ann", MatchKind.LONG, at_ms) is first
    assert first.created_ms == 0 and len(lobbies) == 1
    with pytest.raises(Refused) as err:
        lobbies.create("ann", MatchKind.SINGLE, 4)
    assert err.value.reason == "lobby/open" and first.code not in err.value.message
    assert lobbies.create("bob", MatchKind.SINGLE, 5).code == "CODE01"  # others may create
    for name in ("bob", "cy", "dan"):
        lobbies.join(first.code, name)
    assert lobbies.ready() == [first]
    with pytest.raises(Refused):  # being placed is not placed yet
        lobbies.create("ann", MatchKind.SINGLE, 6)
    lobbies.placed(first.code, "shard-0.t1")
    assert lobbies.open_lobby("ann") is None
    assert lobbies.create("ann", MatchKind.SINGLE, 7).code == "CODE02"


def test_a_lobby_without_a_table_is_forgotten_at_its_ttl() -> None:
    roster = Roster()
    lobbies = FriendlyLobbies(roster, iter(f"CODE{i:02}" for i in range(10)).__next__,
                              ttl_ms=60_000)
    old = lobbies.create("ann", MatchKind.SINGLE, 0)
    lobbies.join(old.code, "ann")
    lobbies.join(old.code, "bob")
    placed = lobbies.create("dan", MatchKind.LONG, 10_000)
    for name in ("dan", "eve", "fay"):
        lobbies.join(placed.code, name)
    assert lobbies.ready() == [placed]
    lobbies.placed(placed.code, "shard-0.t1")
    young = lobbies.create("cy", MatchKind.SINGLE, 30_000)

    assert lobbies.expire(59_999) == []
    assert lobbies.expire(60_000) == [old]
    assert lobbies.get(old.code) is None and len(lobbies) == 2
    with pytest.raises(UnknownCode):
        lobbies.join(old.code, "gil")
    assert roster.where("ann") is None and roster.where("bob") is None  # free again
    assert lobbies.open_lobby("ann") is None
    assert lobbies.create("ann", MatchKind.LONG, 60_001).code == "CODE03"
    # the placed lobby lives on until its match ends; the young one until its own TTL
    assert lobbies.expire(89_999) == []
    assert lobbies.expire(90_000) == [young]
    assert lobbies.get(placed.code) is placed and roster.where("eve") == Spot("table",
                                                                             "shard-0.t1")


def test_a_full_lobby_waiting_for_a_shard_expires_but_not_while_being_placed() -> None:
    roster = Roster()
    lobbies = FriendlyLobbies(roster, iter(["CODE00"]).__next__, ttl_ms=1_000)
    lobby = lobbies.create("ann", MatchKind.SINGLE, 0)
    for name in ("ann", "bob", "cy"):
        lobbies.join(lobby.code, name)
    assert lobbies.ready() == [lobby]
    assert lobbies.expire(5_000) == []  # a table is being created for it right now
    lobbies.not_placed(lobby.code)  # no shard took it
    assert lobbies.expire(5_000) == [lobby]
    assert lobbies.ready() == [] and all(roster.where(p) is None for p in ("ann", "bob", "cy"))


# ---------------------------------------------------------------------------------- find_groups
def reference_groups(tickets: list[Ticket], now_ms: int) -> list[list[str]]:
    """The matcher as it was first written (scans every ticket for every anchor): the
    definition `find_groups` must keep."""
    order = sorted(tickets, key=lambda t: t.enqueued_ms)
    windows = {t.ticket_id: window(5.0, 1.0, t.enqueued_ms, now_ms) for t in order}

    def fits(group: list[Ticket], other: Ticket) -> bool:
        return all(abs(m.ordinal - other.ordinal) <= min(windows[m.ticket_id],
                                                         windows[other.ticket_id])
                   for m in group)

    used: set[str] = set()
    groups = []
    for anchor in order:
        if anchor.ticket_id in used:
            continue
        candidates = list(itertools.islice(
            (t for t in order if t.ticket_id not in used and t is not anchor
             and fits([anchor], t)), PARTNER_SCAN))
        found = next(((a, b) for a, b in itertools.combinations(candidates, 2)
                      if fits([anchor, a], b)), None)
        if found is None:
            continue
        group = (anchor, *found)
        used.update(t.ticket_id for t in group)
        groups.append([t.player for t in group])
    return groups


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-40, 40), st.integers(0, 30_000)), max_size=120),
       st.integers(0, 60_000))
def test_find_groups_picks_what_the_first_matcher_picked(
        spec: list[tuple[int, int]], now_ms: int) -> None:
    tickets = [Ticket(f"t{i}", f"p{i}", float(ordinal), at_ms)
               for i, (ordinal, at_ms) in enumerate(spec)]
    assert players(find_groups(tickets, now_ms, 5.0, 1.0)) == reference_groups(tickets, now_ms)
