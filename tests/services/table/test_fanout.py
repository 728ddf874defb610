"""One step of a table to its sessions (table/fanout.py): each seat's view (P5), the actor's
outcome in the same item, and a step without events reaching the actor alone."""

from __future__ import annotations

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, table_pb2
from machiavelox.table.fanout import fan_out
from machiavelox.table.gateway_link import GatewayLink

K = rules.EventKind

SEATS = {"ann": rules.Seat.P1, "bob": rules.Seat.P2, "cy": rules.Seat.P3}
CARD = rules.ALL_CARDS[5]


async def _noop(frame: table_pb2.ConnectResponse) -> None:
    return None


def items(link: GatewayLink) -> dict[str, table_pb2.ShardItem]:
    frame = link._outbox.frame()
    return {item.player_id: item for item in frame.items}


def ack(batch: common_pb2.Batch) -> None:
    batch.ack.client_action_id = "a1"


async def test_each_seat_sees_what_it_may_and_the_actor_its_outcome() -> None:
    link = GatewayLink("g", _noop)
    drew = rules.Event(K.DREW, 0, player=rules.Seat.P1, cards=(CARD,), secret_to=rules.Seat.P1)
    declared = rules.Event(K.DECLARED, 0, player=rules.Seat.P1, cards=(CARD,))
    fan_out("t", SEATS, {p: link for p in SEATS}, [(1, drew), (2, declared)], "ann", ack)
    got = items(link)
    assert [len(ev.cards) for ev in got["ann"].batch.events] == [1, 1]
    assert [len(ev.cards) for ev in got["bob"].batch.events] == [0, 1]  # P5
    assert [len(ev.cards) for ev in got["cy"].batch.events] == [0, 1]
    assert [ev.seq for ev in got["cy"].batch.events] == [1, 2]
    assert got["ann"].batch.ack.client_action_id == "a1"
    assert not got["bob"].batch.HasField("ack")


async def test_a_step_without_events_goes_to_the_actor_only() -> None:
    link = GatewayLink("g", _noop)
    fan_out("t", SEATS, {p: link for p in SEATS}, [], "bob", ack)
    got = items(link)
    assert list(got) == ["bob"] and got["bob"].batch.ack.client_action_id == "a1"
