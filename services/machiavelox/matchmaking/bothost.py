"""Matchmaking's gRPC client of the bot host (`practice.Bots`): SeatBots, as `matchmaking`
(the one role the bot host serves it to: platform/authz.py). Levels travel as their names
here ("basic", "easy", ...) and as `BotLevel` on the wire, a classic table's bots with
`ruleset` classic; matchmaking never imports the bots.

What an answer means:
- answered: the bots are started;
- refused by the host itself (a status with a `machiavelox-reason`: `bots/full`, a bad
  request): `BotsRefused`, with the host's status code and reason;
- anything else (the host down, unreachable, too slow: UNAVAILABLE or DEADLINE_EXCEEDED with
  no reason of its own): `BotsUnavailable`.
"""

from __future__ import annotations

import grpc

from machiavelox._gen.v1 import bots_pb2, bots_pb2_grpc, classic_pb2
from machiavelox.platform.errors import REASON_KEY
from machiavelox.platform.tls import Connect

from .practice import BotsRefused, BotsUnavailable

LEVEL_TO_PB = {"basic": bots_pb2.BOT_LEVEL_BASIC, "easy": bots_pb2.BOT_LEVEL_EASY,
               "medium": bots_pb2.BOT_LEVEL_MEDIUM, "hard": bots_pb2.BOT_LEVEL_HARD}


def _reason(err: grpc.aio.AioRpcError) -> str:
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


class BotHostClient:
    def __init__(self, address: str, connect: Connect, timeout_s: float = 3.0) -> None:
        """`connect`: opens the channel as matchmaking (`InternalTls.connector("bot-host")`)."""
        self.address = address
        self._channel = connect(address)
        self._stub = bots_pb2_grpc.BotHostServiceStub(self._channel)
        self.timeout_s = timeout_s

    async def seat(self, code: str, level: str, count: int, for_player: str,
                   classic: bool = False) -> list[str]:
        # (Machiavelox's bots leave the ruleset unset, as before it existed: an older host
        # serves them unchanged)
        ruleset = classic_pb2.RULESET_CLASSIC if classic else classic_pb2.RULESET_UNSPECIFIED
        try:
            reply: bots_pb2.SeatBotsResponse = await self._stub.SeatBots(
                bots_pb2.SeatBotsRequest(invite_code=code, level=LEVEL_TO_PB[level],
                                         count=count, for_player=for_player,
                                         ruleset=ruleset),
                timeout=self.timeout_s)
        except grpc.aio.AioRpcError as err:
            reason = _reason(err)
            if reason:
                raise BotsRefused(err.code().name, reason,
                                  (err.details() or "").removeprefix(f"{reason}: ")) from None
            raise BotsUnavailable(f"{err.code().name} {err.details() or ''}".strip()) from None
        return list(reply.bot_ids)

    async def close(self) -> None:
        await self._channel.close()
