"""Practice at a level (client/practice.py): the person creates a friendly table and joins it
with the client's own connection (client/connection.py), the practice seats two `easy` solver
bots with the invite code, the person gives up the table (ABBANDONA, M11.3) and the two bots
play the smazzata to its end through the gateway, at their level, with no refusal their view
could have predicted. A real cluster (`machiavelox up`'s services, the rules clock 10 times
faster)."""

from __future__ import annotations

import asyncio

import pytest

from machiavelox import rules
from machiavelox._gen.v1 import gateway_pb2
from machiavelox.bots.player import LeveledBrain
from machiavelox.client.connection import Gateway, Incoming
from machiavelox.client.practice import Practice
from machiavelox.local.processes import Proc

pytestmark = pytest.mark.timeout(120)
TIME_SCALE = 10.0  # read by conftest's `cluster`
STEP_S = 20.0


async def test_a_practice_table_seats_two_easy_bots(cluster: dict[str, Proc]) -> None:
    address = cluster["gateway"].address
    with pytest.raises(ValueError):
        Practice(address, "ABCDE12345", "pat", level="expert")
    gw = Gateway(address)
    player = await gw.login("pat")
    code = await gw.create_friendly()
    practice = Practice(address, code, player, level="easy", time_scale=TIME_SCALE)
    got: list[Incoming] = []
    session = None
    try:
        ticket = gw.join_friendly(code)
        seated: list[str] = []

        async def wait() -> None:
            async for update in ticket.updates():
                kind = update.WhichOneof("kind")
                if kind == "waiting" and not practice.tasks:
                    practice.start()  # as the waiting screen does, once in the lobby
                elif kind == "assignment":
                    seated[:] = [update.assignment.table_id, *update.assignment.player_ids]
                    ticket.cancel()
                    return

        await asyncio.wait_for(wait(), STEP_S)
        table_id, *players = seated
        assert sorted(players) == sorted([player, *practice.names])
        session = gw.session(table_id, got.append)
        running = asyncio.create_task(session.run())
        for _ in range(200):
            if any(isinstance(m, gateway_pb2.PlayResponse) and m.WhichOneof("kind") == "snapshot"
                   for m in got):
                break
            await asyncio.sleep(0.1)
        seat = rules.Seat(players.index(player))
        session.act(rules.Abandon(seat))
        outcomes = await asyncio.wait_for(asyncio.gather(*practice.tasks), 60)
        for o in outcomes:
            assert o.result is not None
            assert o.level == "easy"
            assert o.actions > 0
            assert o.predictable == [], (o.player, o.predictable)
        for bot in practice.bots:
            assert isinstance(bot.brain, LeveledBrain) and bot.brain.bot.level.name == "easy"
            assert bot.brain.bot.solves, "the solver decided"
        by_bots = {m.event.player for m in got if isinstance(m, gateway_pb2.PlayResponse)
                   and m.WhichOneof("kind") == "event" and m.event.kind in ("drew", "direct",
                                                                            "attached")}
        assert len(by_bots) == 2, "the person saw both bots play"
        session.stop()
        await asyncio.wait_for(running, STEP_S)
    finally:
        if session is not None:
            session.stop()
        await practice.stop()
        await gw.close()
