"""The ranked classic queue (issue 16) in both agorà stores, memory and Redis (the machine's
Redis, a fresh key prefix deleted after; the fixture of test_stores.py): a queue of its own,
matched in fours by the matcher's `find_groups(size=4)`, each group a competitive placement
with the ranked classic rules; the Machiavelox queue never sees a classic ticket. Without the
classic queue the classic tickets land in the Machiavelox queue and every test fails.
"""

from __future__ import annotations

import pytest

from machiavelox.matchmaking.queue import Ticket, find_groups
from machiavelox.matchmaking.ranked import RANKED_CLASSIC, RANKED_SEATS, ranked_rules
from machiavelox.matchmaking.store import AgoraStore, Group, Seated

from .test_stores import T0, queue, store

__all__ = ["store"]  # (the fixture, on both stores)

pytestmark = pytest.mark.timeout(60)


async def classic_queue(store: AgoraStore, *players: str) -> list[Ticket]:
    tickets = [Ticket(f"c-{p}", p, 0.0, T0 + i, classic=True) for i, p in enumerate(players)]
    for ticket in tickets:
        await store.add_ticket(ticket, f"wc-{ticket.player}")
    return tickets


def groups_of(waiting: list[Ticket]) -> list[Group]:
    return [Group(f"pl-{i}", found, tuple(t.player for t in found), RANKED_CLASSIC)
            for i, found in enumerate(find_groups(waiting, T0, 5.0, 1.0, size=RANKED_SEATS))]


def test_the_ranked_rules_are_four_seats_of_classic() -> None:
    assert RANKED_CLASSIC.seats == 4 and RANKED_CLASSIC.classic
    assert ranked_rules("single") != RANKED_CLASSIC


async def test_four_classic_tickets_form_one_classic_table(store: AgoraStore) -> None:
    tickets = await classic_queue(store, "ann", "bob", "cy", "dee")
    waiting = await store.waiting(classic=True)
    assert waiting == tickets
    groups = groups_of(waiting)
    assert len(groups) == 1 and len(groups[0].tickets) == 4
    [placement] = await store.form(groups, "me", T0)
    assert placement.competitive and placement.rules == RANKED_CLASSIC
    assert placement.players == ("ann", "bob", "cy", "dee")
    assert await store.waiting(classic=True) == []
    seated = Seated("s0.t1", "s0", placement.players)
    watches = await store.placed(placement, seated, "me")
    assert watches is not None and sorted(watches) == ["wc-ann", "wc-bob", "wc-cy", "wc-dee"]
    state, _ = await store.attach("c-ann", "ann", "wc-ann-2", T0 + 10)
    assert state.status == "assigned" and state.seated == seated and state.ticket.classic


async def test_three_classic_tickets_do_not(store: AgoraStore) -> None:
    await classic_queue(store, "ann", "bob", "cy")
    assert groups_of(await store.waiting(classic=True)) == []
    assert len(await store.waiting(classic=True)) == 3


async def test_the_machiavelox_queue_is_not_affected(store: AgoraStore) -> None:
    machiavelox = await queue(store, "xa", "xb")
    classic = await classic_queue(store, "ann", "bob", "cy")
    assert await store.waiting() == machiavelox  # no classic ticket there
    assert await store.waiting(classic=True) == classic
    # a classic ticket of a group is not formed as a Machiavelox one
    mixed = Group("pl-mixed", (*machiavelox, classic[0]), ("xa", "xb", "ann"))
    assert await store.form([mixed], "me", T0) == []
    assert await store.waiting() == machiavelox


async def test_a_classic_placement_undone_requeues_in_the_classic_queue(
        store: AgoraStore) -> None:
    tickets = await classic_queue(store, "ann", "bob", "cy", "dee")
    [placement] = await store.form(groups_of(tickets), "me", T0)
    unplaced = await store.unplaced(placement, "me", T0 + 1)
    assert unplaced is not None and sorted(unplaced.requeued) == sorted(
        t.ticket_id for t in tickets)
    assert await store.waiting(classic=True) == tickets
    assert await store.waiting() == []
    assert await store.detach("c-ann", "wc-ann") is not None  # its stream ends: it leaves
    assert [t.player for t in await store.waiting(classic=True)] == ["bob", "cy", "dee"]
