"""A shard answers a resume in bounded pages, or with a snapshot when the session is too far
behind (table/shard.py; docs/security.md). The real Shard in process, its frames collected."""

from __future__ import annotations

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.shard import MAX_REPLAY_EVENTS, PAGE_BYTES, Shard

PLAYERS = ["ann", "bob", "cy"]


async def _noop(frame: table_pb2.ConnectResponse) -> None:
    return None


def played(events: int) -> tuple[Shard, GatewayLink]:
    """A shard with one table whose log has at least `events` events (P1 declares and
    undeclares one card, two events each)."""
    clock = iter(range(1_000, 10**9, 5))
    shard = Shard("shard-0", 10, lambda: next(clock))
    host = shard.create_table("shard-0.t", PLAYERS, rules.MatchKind.SINGLE, True)
    host.apply("ann", rules.Draw(rules.Seat.P1), shard.clock())
    card = host.view(rules.Seat.P1).hand[0]
    while host.seq < events:
        for action in (rules.Declare(rules.Seat.P1, (card,)),
                       rules.Undeclare(rules.Seat.P1, (card,))):
            assert host.apply("ann", action, shard.clock()).error is None
    return shard, GatewayLink("test", _noop)


def subscribe(shard: Shard, link: GatewayLink, player: str,
              from_seq: int) -> table_pb2.ConnectResponse:
    frame = link._outbox.frame()  # the frame being filled: the answer goes into it
    shard.handle(link, table_pb2.GatewayItem(table_id="shard-0.t", player_id=player,
                                             subscribe=table_pb2.Subscribe(from_seq=from_seq)))
    return frame


async def test_pages_are_bounded_and_follow_on_exactly() -> None:
    shard, link = played(3_000)
    host = shard.tables["shard-0.t"]
    got: list[int] = []
    pages = 0
    from_seq = 1
    while True:
        [item] = subscribe(shard, link, "bob", from_seq).items
        link._outbox.discard()
        assert item.WhichOneof("kind") == "events"
        assert item.ByteSize() <= PAGE_BYTES + 1024
        pages += 1
        got += [ev.seq for ev in item.events.events]
        if not item.events.more:
            break
        from_seq = got[-1]
    assert got == list(range(2, host.seq + 1))
    assert pages >= 2


async def test_too_far_behind_gets_a_snapshot() -> None:
    shard, link = played(MAX_REPLAY_EVENTS + 10)
    [item] = subscribe(shard, link, "bob", 1).items
    assert item.WhichOneof("kind") == "snapshot"
    assert item.snapshot.seq == shard.tables["shard-0.t"].seq
    assert item.snapshot.view.viewer == 2  # bob's own view (P5)


async def test_a_page_never_shows_another_players_cards() -> None:
    """P5 holds in pages: in bob's replay ann's draw shows no card; in ann's it does."""
    shard, link = played(10)
    host = shard.tables["shard-0.t"]
    before = host.seq
    host.apply("ann", rules.Draw(rules.Seat.P1), shard.clock())
    drew: dict[str, list[int]] = {}
    for player in ("ann", "bob"):
        [item] = subscribe(shard, link, player, before).items
        link._outbox.discard()
        [event] = [ev for ev in item.events.events if ev.kind == "drew"]
        drew[player] = [card.index for card in event.cards]
    assert len(drew["ann"]) == 1 and drew["bob"] == []
