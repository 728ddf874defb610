"""Friendly classic lobbies in both stores of the agorà (issue 16): a lobby of N seats
(2..6, `queue.TableRules`) fills with N players, not three, and its placement carries its
rules through the store (what the shard's CreateTable is made from), also when another
replica takes the placement over; the same rules give the creator's open lobby back, other
rules are `lobby/open`. Runs on the memory store and on the machine's Redis (the fixture of
test_stores.py)."""

from __future__ import annotations

import pytest

from machiavelox._gen.v1 import classic_pb2
from machiavelox.matchmaking.classic_rules import rules_of, variants_pb
from machiavelox.matchmaking.queue import MACHIAVELOX, Refused
from machiavelox.matchmaking.store import AgoraStore
from machiavelox.platform.errors import ServiceError
from machiavelox.rules import MatchKind
from tests.services.matchmaking.test_stores import LEASE_MS, T0, codes, store

__all__ = ["store"]  # (the fixture: each test runs on both stores)

pytestmark = pytest.mark.timeout(60)

FOUR = classic_pb2.ClassicVariants(players=4, jokers=2, opening=36)
SINGLE = MatchKind.SINGLE


def test_rules_are_checked_by_the_engine_and_canonical() -> None:
    rules = rules_of(FOUR)
    assert rules.seats == 4 and rules.classic
    spelled = classic_pb2.ClassicVariants(players=4, decks=2, jokers=2, opening=36, penalty=1,
                                          aces=classic_pb2.CLASSIC_ACES_LOW)
    assert rules_of(spelled) == rules, "the same set, however its defaults are spelled"
    back = variants_pb(rules)
    assert (back.players, back.decks, back.jokers, back.opening) == (4, 2, 2, 36)
    with pytest.raises(ServiceError) as err:  # C1
        rules_of(classic_pb2.ClassicVariants(players=6, decks=2))
    assert err.value.reason == "variant/players-decks"


async def test_a_four_seat_lobby_fills_with_four_and_keeps_its_rules(
        store: AgoraStore) -> None:
    rules = rules_of(FOUR)
    draw = codes()
    lobby, new = await store.create_lobby("ann", SINGLE, T0, draw, rules)
    assert new and lobby.rules == rules
    again, new = await store.create_lobby("ann", SINGLE, T0 + 5, draw, rules)
    assert (again.code, new) == (lobby.code, False)
    for other in (MACHIAVELOX, rules_of(classic_pb2.ClassicVariants(players=3))):
        with pytest.raises(Refused) as err:
            await store.create_lobby("ann", SINGLE, T0, draw, other)
        assert err.value.reason == "lobby/open"
    for i, player in enumerate(("ann", "bob", "cy")):
        joined, _, _ = await store.join_lobby(lobby.code, player, f"j{i}", T0)
    assert not joined.full and await store.claim_lobbies(lambda: "early", "me", T0) == []
    joined, _, _ = await store.join_lobby(lobby.code, "dan", "j3", T0)
    assert joined.full and joined.players == ["ann", "bob", "cy", "dan"]
    with pytest.raises(Refused) as full:
        await store.join_lobby(lobby.code, "eve", "j4", T0)
    assert full.value.reason == "friendly/full"
    (placement,) = await store.claim_lobbies(lambda: "lp", "dead", T0)
    assert placement.players == ("ann", "bob", "cy", "dan") and placement.rules == rules
    assert await store.progress(placement, "dead", T0)
    (taken,) = await store.stale("alive", T0 + LEASE_MS + 1)  # another replica's now
    assert taken.rules == rules and taken.players == placement.players


async def test_a_machiavelox_lobby_still_has_three_seats(store: AgoraStore) -> None:
    lobby, _ = await store.create_lobby("ann", SINGLE, T0, codes())
    assert lobby.rules == MACHIAVELOX
    for i, player in enumerate(("ann", "bob", "cy")):
        await store.join_lobby(lobby.code, player, f"j{i}", T0)
    with pytest.raises(Refused):
        await store.join_lobby(lobby.code, "dan", "j3", T0)
    (placement,) = await store.claim_lobbies(lambda: "lp", "me", T0)
    assert placement.rules == MACHIAVELOX and len(placement.players) == 3
