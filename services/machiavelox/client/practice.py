"""Practice against two bots, for now in this process (issue 15 item 1).

The person creates a friendly table; two bots (`machiavelox.bots`, as `machiavelox bots` runs
them) log in through the same gateway and join it with the invite code, then play to the end
like any app, at a level: `basic` (today's bots, an action every `interval_s`) or `easy` /
`medium` / `hard` (the solver bots at their own human-like pace, docs/bots.md; `time_scale`:
the tables' rules clock speed, 1 but in tests and demos). When matchmaking can seat
server-side bots at a table of a chosen strength (issue 15 item 2), the menu entry asks for
that instead and this module goes.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import grpc

from machiavelox._gen.v1 import matchmaking_pb2
from machiavelox.bots.levels import BASIC, LEVEL_NAMES
from machiavelox.bots.player import Bot, BotOutcome
from machiavelox.platform import keepalive

BOT_INTERVAL_S = 1.5  # between a bot's actions: slow enough for a person to follow


class InviteBot(Bot):
    """A bot that takes its seat with an invite code instead of queueing in the agorà."""

    def __init__(self, name: str, channel: grpc.aio.Channel, code: str,
                 interval_s: float, level: str = BASIC, time_scale: float = 1.0) -> None:
        super().__init__(name, channel, channel, interval_s, level=level,
                         time_scale=time_scale)
        self.code = code

    async def _queue(self, metadata: Any) -> tuple[str, list[str]]:
        stream = self.matchmaking.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=self.code), metadata=metadata)
        async for update in stream:
            if update.update.WhichOneof("kind") == "assignment":
                a = update.update.assignment
                stream.cancel()
                return a.table_id, list(a.player_ids)
        raise RuntimeError("the lobby closed without an assignment")


def bot_names(player: str) -> list[str]:
    """Two bot names of the person's own (1-32 characters of A-Z a-z 0-9 _ -)."""
    return [f"{player[:27]}-bot{i}" for i in (1, 2)]


class Practice:
    """Two bots at the person's friendly table, on their own channel to the gateway."""

    def __init__(self, gateway: str, code: str, player: str,
                 interval_s: float = BOT_INTERVAL_S, level: str = BASIC,
                 time_scale: float = 1.0) -> None:
        if level not in LEVEL_NAMES:
            raise ValueError(f"unknown level {level!r} (one of {', '.join(LEVEL_NAMES)})")
        self.gateway = gateway
        self.code = code
        self.names = bot_names(player)
        self.interval_s = interval_s
        self.level = level
        self.time_scale = time_scale
        self.channel: grpc.aio.Channel | None = None
        self.bots: list[InviteBot] = []
        self.tasks: list[asyncio.Task[BotOutcome]] = []

    def start(self) -> None:
        self.channel = grpc.aio.insecure_channel(self.gateway, options=keepalive.CLIENT)
        self.bots = [InviteBot(name, self.channel, self.code, self.interval_s, self.level,
                               self.time_scale) for name in self.names]
        self.tasks = [asyncio.create_task(bot.run()) for bot in self.bots]

    def failure(self) -> str | None:
        """Why a bot stopped early, if one did."""
        for task in self.tasks:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return f"a practice bot stopped: {task.exception()}"
        return None

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.channel is not None:
            with contextlib.suppress(Exception):
                await self.channel.close()
            self.channel = None
