"""A gateway that stops reading cannot make its shard hold an unbounded backlog: past
`max_pending_bytes` the shard forgets what waited, drops the gateway's subscriptions and resets
its stream (table/service.py), and the gateway reconnects. The real Shard in process, behind a
gateway whose writes never complete."""

from __future__ import annotations

import asyncio

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.shard import Shard

PLAYERS = ["ann", "bob", "cy"]


async def test_a_gateway_that_never_reads_is_cut_off_at_the_bound() -> None:
    stuck: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def never(frame: table_pb2.ConnectResponse) -> None:
        await stuck  # the gateway's flow-control window is shut: the write never completes

    overflows = []
    clock = iter(range(1_000, 10**9, 5))
    shard = Shard("shard-0", 10, lambda: next(clock))
    link = GatewayLink("slow", never, window_s=0, on_overflow=lambda: overflows.append(1),
                       max_pending_bytes=20_000)
    pump = asyncio.create_task(link.pump())
    host = shard.create_table("shard-0.t", PLAYERS, rules.MatchKind.SINGLE, True)
    for player in PLAYERS:
        shard.handle(link, table_pb2.GatewayItem(table_id="shard-0.t", player_id=player,
                                                 subscribe=table_pb2.Subscribe()))
    await asyncio.sleep(0)  # the pump takes the first frame: its write never completes
    host.apply("ann", rules.Draw(rules.Seat.P1), shard.clock())
    card = host.view(rules.Seat.P1).hand[0]
    for i in range(400):  # every step goes to the three subscribed sessions of the link
        action = (rules.Declare(rules.Seat.P1, (card,)) if i % 2 == 0
                  else rules.Undeclare(rules.Seat.P1, (card,)))
        shard._after(host, host.apply("ann", action, shard.clock()).events)
        if overflows:
            break
    assert overflows == [1]
    assert link.overflowed and link._outbox.pending_bytes < 1000  # what waited is gone
    pump.cancel()
    stuck.cancel()
