"""A bot that takes its seat at a friendly table with the invite code (practice tables), the
way an app's player does: JoinFriendlyTable through the gateway, then the table to its end
(`player.Bot`). The bot host (`host.py`) runs them; tests use them as scripted friends.

Its token is the gateway's development Login's (`Bot._login`), or one `token_for` mints (the
bot host holding the token key, where the development Login is off: identity/verifier.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from machiavelox._gen.v1 import matchmaking_pb2

from .levels import BASIC
from .player import Bot

BOT_INTERVAL_S = 1.5  # between a basic bot's actions: slow enough for a person to follow


class InviteBot(Bot):
    """A bot that takes its seat with an invite code instead of queueing in the agorà."""

    def __init__(self, name: str, channel: grpc.aio.Channel, code: str,
                 interval_s: float = BOT_INTERVAL_S, level: str = BASIC,
                 time_scale: float = 1.0, max_game_s: float = 1800.0,
                 token_for: Callable[[str], str] | None = None) -> None:
        super().__init__(name, channel, channel, interval_s, max_game_s=max_game_s,
                         level=level, time_scale=time_scale)
        self.code = code
        self.token_for = token_for

    async def _login(self) -> str:
        if self.token_for is not None:
            return self.token_for(self.name)
        return await super()._login()

    async def _queue(self, metadata: Any) -> tuple[str, list[str]]:
        stream = self.matchmaking.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=self.code), metadata=metadata)
        async for update in stream:
            if update.update.WhichOneof("kind") == "assignment":
                a = update.update.assignment
                stream.cancel()
                return a.table_id, list(a.player_ids)
        raise RuntimeError("the lobby closed without an assignment")


def bot_names(player: str, count: int = 2, taken: Callable[[str], bool] = lambda _: False
              ) -> list[str]:
    """`count` bot names of the person's own (1-32 characters of A-Z a-z 0-9 _ -):
    `<player>-bot1`, `-bot2`, ..., the lowest numbers not `taken`."""
    base = (player or "practice")[:25]
    out: list[str] = []
    for i in range(1, 1000):
        name = f"{base}-bot{i}"
        if not taken(name):
            out.append(name)
            if len(out) == count:
                return out
    raise RuntimeError("no free bot name")
