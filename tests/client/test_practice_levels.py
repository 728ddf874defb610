"""Invite bots at a level (bots/invite.py, what the bot host runs for practice tables): the
person creates a friendly table and joins it with the client's own connection
(client/connection.py), two `easy` solver bots join it with the invite code, the person gives
up the table (ABBANDONA, M11.3) and the two bots play the smazzata to its end through the
gateway, at their level, with no refusal their view could have predicted. A real cluster
(`machiavelox up`'s services, the rules clock 10 times faster). The practice tables the
cluster seats itself: tests/practice/."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import gateway_pb2
from machiavelox.bots.invite import InviteBot, bot_names
from machiavelox.bots.player import BotOutcome, LeveledBrain
from machiavelox.client.connection import Gateway, Incoming
from machiavelox.local.processes import Proc
from machiavelox.platform import keepalive

pytestmark = pytest.mark.timeout(120)
TIME_SCALE = 10.0  # read by conftest's `cluster`
STEP_S = 20.0


async def test_a_friendly_table_seats_two_easy_invite_bots(cluster: dict[str, Proc]) -> None:
    address = cluster["gateway"].address
    channel = grpc.aio.insecure_channel(address, options=keepalive.CLIENT)
    with pytest.raises(ValueError):
        InviteBot("pat-bot1", channel, "ABCDE12345", level="expert")
    gw = Gateway(address)
    player = await gw.login("pat")
    code = await gw.create_friendly()
    names = bot_names(player)
    bots = [InviteBot(name, channel, code, level="easy", time_scale=TIME_SCALE)
            for name in names]
    tasks: list[asyncio.Task[BotOutcome]] = []
    got: list[Incoming] = []
    session = None
    try:
        ticket = gw.join_friendly(code)
        seated: list[str] = []

        async def wait() -> None:
            async for update in ticket.updates():
                kind = update.WhichOneof("kind")
                if kind == "waiting" and not tasks:  # once in the lobby
                    tasks.extend(asyncio.create_task(bot.run()) for bot in bots)
                elif kind == "assignment":
                    seated[:] = [update.assignment.table_id, *update.assignment.player_ids]
                    ticket.cancel()
                    return

        await asyncio.wait_for(wait(), STEP_S)
        table_id, *players = seated
        assert sorted(players) == sorted([player, *names])
        session = gw.session(table_id, got.append)
        running = asyncio.create_task(session.run())
        for _ in range(200):
            if any(isinstance(m, gateway_pb2.PlayResponse) and m.WhichOneof("kind") == "snapshot"
                   for m in got):
                break
            await asyncio.sleep(0.1)
        seat = rules.Seat(players.index(player))
        session.act(rules.Abandon(seat))
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        for o in outcomes:
            assert o.result is not None
            assert o.level == "easy"
            assert o.actions > 0
            assert o.predictable == [], (o.player, o.predictable)
        for bot in bots:
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
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await channel.close()
        await gw.close()
