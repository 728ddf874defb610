"""The two stores of the agorà keep the same contract (`store.AgoraStore`): each test runs on
the memory store and on the Redis store (the machine's Redis, a fresh key prefix deleted
after), step by step: tickets and their streams, groups formed once, placements and their
leases, seats, friendly lobbies, detached streams swept. What only a shared store does (another
replica told of an outcome) is at the end."""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import AsyncIterator, Callable

import pytest

from machiavelox.matchmaking.memory_store import MemoryStore
from machiavelox.matchmaking.queue import Refused, Spot, Ticket, UnknownCode
from machiavelox.matchmaking.redis_store import RedisStore
from machiavelox.matchmaking.store import (
    AgoraStore,
    Group,
    NotYours,
    Placement,
    Seated,
    UnknownTicket,
)
from machiavelox.rules import MatchKind

REDIS = "redis://127.0.0.1:6379/0"
TTL_MS = 60_000
ATTACH_MS = 5_000
LEASE_MS = 3_000
T0 = 1_000_000

pytestmark = pytest.mark.timeout(60)


async def redis_store(prefix: str) -> RedisStore:
    store = RedisStore(REDIS, prefix, TTL_MS, attach_ms=ATTACH_MS, lease_ms=LEASE_MS)
    await store.start()
    return store


@pytest.fixture(params=["memory", "redis"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[AgoraStore]:
    if request.param == "memory":
        yield MemoryStore(TTL_MS, attach_ms=ATTACH_MS, lease_ms=LEASE_MS)
        return
    shared = await redis_store(f"test-agora-{secrets.token_hex(4)}:")
    try:
        yield shared
    finally:
        await shared.delete_all()
        await shared.close()


def codes() -> Callable[[], str]:
    """Invite codes CODE000000, CODE000001, ..."""
    return map("CODE{:06}".format, itertools.count()).__next__


async def queue(store: AgoraStore, *players: str, at: int = T0) -> list[Ticket]:
    tickets = [Ticket(f"t-{p}", p, 0.0, at + i) for i, p in enumerate(players)]
    for ticket in tickets:
        await store.add_ticket(ticket, f"w-{ticket.player}")
    return tickets


async def formed(store: AgoraStore, tickets: list[Ticket], pid: str = "pl1",
                 owner: str = "me", now: int = T0) -> Placement:
    (placement,) = await store.form([Group(pid, tuple(tickets),
                                           tuple(t.player for t in tickets))], owner, now)
    return placement


async def test_tickets_wait_once_and_in_order(store: AgoraStore) -> None:
    await queue(store, "ann", "bob", "cy")
    assert [t.player for t in await store.waiting()] == ["ann", "bob", "cy"]
    with pytest.raises(Refused) as err:
        await store.add_ticket(Ticket("t-again", "ann", 0.0, T0), "w-again")
    assert err.value.reason == "ticket/duplicate"
    assert await store.where("bob") == Spot("queue", "t-bob")
    assert await store.detach("t-bob", "w-other") is None  # not its stream: nothing
    left = await store.detach("t-bob", "w-bob")
    assert left is not None and left.player == "bob" and await store.where("bob") is None
    assert [t.player for t in await store.waiting()] == ["ann", "cy"]


async def test_a_group_is_formed_once_and_placed(store: AgoraStore) -> None:
    tickets = await queue(store, "ann", "bob", "cy", "dan")
    placement = await formed(store, tickets[:3])
    assert placement.players == ("ann", "bob", "cy") and placement.tickets == (
        "t-ann", "t-bob", "t-cy")
    again = await store.form([Group("pl2", tuple(tickets[1:]), ("bob", "cy", "dan"))], "other",
                             T0)
    assert again == []  # bob and cy are no longer waiting: the group is void
    assert [t.player for t in await store.waiting()] == ["dan"]
    with pytest.raises(Refused) as err:
        await store.add_ticket(Ticket("t-x", "ann", 0.0, T0), "w-x")
    assert (err.value.reason, err.value.message) == ("ticket/seated",
                                                     "ann is seated at a table being created")
    assert not await store.progress(placement, "other", T0)  # not its owner's
    creating = Placement(placement.placement_id, placement.players, placement.kind, True,
                         placement.tickets, state="creating", shard_id="s0",
                         table_id="s0.pl1")
    assert await store.progress(creating, "me", T0)
    assert [p.table_id for p in (await store.snapshot()).placements] == ["s0.pl1"]
    seated = Seated("s0.pl1", "s0", placement.players)
    watches = await store.placed(creating, seated, "me")
    assert sorted(watches or ()) == ["w-ann", "w-bob", "w-cy"]
    assert await store.placed(creating, seated, "me") is None  # once
    assert await store.where("cy") == Spot("table", "s0.pl1")
    assert await store.seated_tables() == ["s0.pl1"]
    state, replaced = await store.attach("t-bob", "bob", "w-bob2", T0)
    assert (state.status, state.seated, replaced) == ("assigned", seated, "w-bob")
    assert await store.release("s0.pl1") == ("ann", "bob", "cy")
    assert await store.release("s0.pl1") == ()
    assert await store.where("ann") is None and await store.seated_tables() == []
    with pytest.raises(UnknownTicket):
        await store.attach("t-bob", "bob", "w-bob3", T0)  # (its table is over)


async def test_a_placement_given_up_requeues_the_attached_tickets_only(
        store: AgoraStore) -> None:
    tickets = await queue(store, "ann", "bob", "cy")
    placement = await formed(store, tickets)
    await store.detach("t-bob", "w-bob")  # bob's stream ended meanwhile
    unplaced = await store.unplaced(placement, "me", T0 + 1)
    assert unplaced is not None
    assert (unplaced.requeued, unplaced.freed) == (("t-ann", "t-cy"), ("bob",))
    assert [(t.player, t.enqueued_ms) for t in await store.waiting()] == [("ann", T0),
                                                                         ("cy", T0 + 2)]
    assert await store.where("bob") is None and await store.where("ann") == Spot("queue",
                                                                                 "t-ann")


async def test_a_placement_whose_lease_ran_out_is_taken_over(store: AgoraStore) -> None:
    placement = await formed(store, await queue(store, "ann", "bob", "cy"), owner="dead")
    assert await store.stale("alive", T0 + LEASE_MS) == []  # (until its lease's end)
    await store.keepalive([], [placement.placement_id], "dead", T0 + LEASE_MS)  # renewed
    assert await store.stale("alive", T0 + 2 * LEASE_MS) == []
    (taken,) = await store.stale("alive", T0 + 2 * LEASE_MS + 1)
    assert taken.placement_id == placement.placement_id
    assert not await store.progress(taken, "dead", T0)  # the old placer is out
    assert await store.unplaced(taken, "dead", T0) is None
    assert await store.unplaced(taken, "alive", T0) is not None


async def test_cancel_ticket(store: AgoraStore) -> None:
    await queue(store, "ann")
    with pytest.raises(NotYours):
        await store.cancel("t-ann", "eve")
    cancelled = await store.cancel("t-ann", "ann")
    assert cancelled is not None and cancelled.watches == ("w-ann",)
    assert await store.cancel("t-ann", "ann") is None
    assert await store.where("ann") is None


async def test_friendly_lobbies(store: AgoraStore) -> None:
    draw = codes()
    lobby, new = await store.create_lobby("ann", MatchKind.LONG, T0, draw)
    assert new and lobby.code == "CODE000000"
    again, new = await store.create_lobby("ann", MatchKind.LONG, T0 + 5, draw)
    assert (again.code, again.created_ms, new) == (lobby.code, T0, False)
    with pytest.raises(Refused) as err:
        await store.create_lobby("ann", MatchKind.SINGLE, T0, draw)
    assert err.value.reason == "lobby/open"
    with pytest.raises(UnknownCode):
        await store.join_lobby("NOPE", "bob", "j0", T0)
    for i, player in enumerate(("ann", "bob", "cy")):
        joined, replaced, _ = await store.join_lobby(lobby.code, player, f"j{i}", T0)
    assert joined.players == ["ann", "bob", "cy"] and replaced == ""
    _, replaced, _ = await store.join_lobby(lobby.code, "bob", "j9", T0)  # a newer stream
    assert replaced == "j1"
    with pytest.raises(Refused) as err:
        await store.join_lobby(lobby.code, "dan", "j3", T0)
    assert err.value.reason == "friendly/full"
    assert not await store.leave_lobby(lobby.code, "bob", "j1")  # the replaced stream
    assert store.waiting_seats() in (0, 3)  # (the Redis store's count: as last read)
    (placement,) = await store.claim_lobbies(lambda: "lp", "me", T0)
    assert (placement.code, placement.players, placement.kind, placement.competitive) == (
        lobby.code, ("ann", "bob", "cy"), MatchKind.LONG, False)
    assert await store.claim_lobbies(lambda: "lp2", "me", T0) == []  # being placed
    assert not await store.leave_lobby(lobby.code, "cy", "j2")  # too late to leave
    seated = Seated("s1.lp", "s1", placement.players)
    assert sorted(await store.placed(placement, seated, "me") or ()) == ["j0", "j2", "j9"]
    back, _, shard = await store.join_lobby(lobby.code, "ann", "j5", T0)  # coming back
    assert (back.table_id, shard) == ("s1.lp", "s1")
    assert await store.expire_lobbies(T0 + 10 * TTL_MS) == []  # placed: it lives on
    assert await store.release("s1.lp") == ("ann", "bob", "cy")
    assert await store.lobby(lobby.code) is None


async def test_a_lobby_past_its_ttl_and_detached_streams(store: AgoraStore) -> None:
    draw = codes()
    lobby, _ = await store.create_lobby("ann", MatchKind.SINGLE, T0, draw)
    await store.join_lobby(lobby.code, "ann", "j-ann", T0)
    await store.join_lobby(lobby.code, "bob", "j-bob", T0)
    await queue(store, "cy", "dan")
    # ann's and cy's streams are kept alive, bob's and dan's processes are gone
    await store.keepalive(["j-ann", "w-cy"], [], "me", T0 + ATTACH_MS)
    assert await store.sweep(T0 + ATTACH_MS + 2) == 2
    assert await store.where("bob") is None and await store.where("dan") is None
    assert await store.where("ann") == Spot("lobby", lobby.code)
    assert [t.player for t in await store.waiting()] == ["cy"]
    ((gone, watches),) = await store.expire_lobbies(T0 + TTL_MS)
    assert (gone.code, watches) == (lobby.code, ("j-ann",))
    assert await store.where("ann") is None and await store.lobby(lobby.code) is None


async def test_another_replica_is_told_of_its_streams_outcomes() -> None:
    prefix = f"test-agora-{secrets.token_hex(4)}:"
    mine, other = await redis_store(prefix), await redis_store(prefix)
    told: list[tuple[str, object]] = []
    other.on_outcome(lambda watch, outcome: told.append((watch, outcome)))
    try:
        tickets = await queue(mine, "ann", "bob", "cy")
        placement = await formed(mine, tickets)
        seated = Seated("s0.pl1", "s0", placement.players)
        await mine.placed(placement, seated, "me")
        for _ in range(100):
            if len(told) == 3:
                break
            await asyncio.sleep(0.02)
        assert sorted(told) == [("w-ann", seated), ("w-bob", seated), ("w-cy", seated)]
        assert abs(mine.clock() - other.clock()) < 1_000  # one clock: Redis's
    finally:
        await mine.delete_all()
        await mine.close()
        await other.close()


async def test_two_replicas_forming_at_once_form_each_group_once() -> None:
    """Two replicas (two connections to one Redis) form groups from the same waiting tickets
    at the same moment, each its own way of grouping them: every ticket ends in one placement
    at most, and each placement's tickets are a group one of them asked for."""
    prefix = f"test-agora-{secrets.token_hex(4)}:"
    one, two = await redis_store(prefix), await redis_store(prefix)
    try:
        for round_ in range(20):
            tickets = await queue(one, *(f"r{round_}-p{i}" for i in range(9)))
            mine = [Group(f"a{round_}-{i}", tuple(tickets[i:i + 3]),
                          tuple(t.player for t in tickets[i:i + 3])) for i in (0, 3, 6)]
            shifted = tickets[1:] + tickets[:1]
            theirs = [Group(f"b{round_}-{i}", tuple(shifted[i:i + 3]),
                            tuple(t.player for t in shifted[i:i + 3])) for i in (0, 3, 6)]
            formed_one, formed_two = await asyncio.gather(one.form(mine, "one", T0),
                                                          two.form(theirs, "two", T0))
            taken = [t for p in (*formed_one, *formed_two) for t in p.tickets]
            assert len(taken) == len(set(taken)), f"a ticket in two placements: {taken}"
            assert formed_one or formed_two
    finally:
        await one.delete_all()
        await one.close()
        await two.close()


async def test_a_lobby_nobody_joined_can_be_dropped(store: AgoraStore) -> None:
    """A practice table whose bots could not be had leaves no lobby (matchmaking/practice.py):
    dropped, its code is unknown and its creator free to open another; a lobby with a player
    in it is not dropped."""
    draw = codes()
    lobby, _ = await store.create_lobby("ann", MatchKind.SINGLE, T0, draw)
    assert await store.drop_lobby(lobby.code)
    assert await store.lobby(lobby.code) is None
    assert not await store.drop_lobby(lobby.code)
    with pytest.raises(UnknownCode):
        await store.join_lobby(lobby.code, "bob", "j0", T0)
    other, new = await store.create_lobby("ann", MatchKind.LONG, T0, draw)  # not lobby/open
    assert new and other.code != lobby.code
    await store.join_lobby(other.code, "bob", "j1", T0)
    assert not await store.drop_lobby(other.code)
    assert await store.lobby(other.code) is not None
