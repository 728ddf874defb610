"""`machiavelox bot-host`: the bot host, until SIGTERM. Matchmaking asks it (SeatBots, over
mutual TLS; only the `matchmaking` role may: platform/authz.py) for the bots of a practice
table (Machiavelox, or classic Machiavelli with `ruleset` classic); the bots play through the
public gateway like any app (`host.BotHost`).

The servicer is thin: it decodes the request, calls `BotHost.seat`, and its refusals become
status codes with their reasons here. Metrics: `machiavelox_bot_host_bots` (bots running now)
and `machiavelox_bot_host_max_bots` beside every service's own.
"""

from __future__ import annotations

from typing import Any

import grpc
from prometheus_client import Gauge

from machiavelox._gen.v1 import bots_pb2, bots_pb2_grpc, classic_pb2
from machiavelox.identity.tokens import PLAYER_NAME, HmacTokens
from machiavelox.platform import keepalive
from machiavelox.platform.entry import run_service
from machiavelox.platform.errors import invalid_argument, resource_exhausted
from machiavelox.platform.metrics import read_safely
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.tls import InternalTls

from .host import BotHost, Full, HostConfig, HostRefusal
from .host_settings import BotHostSettings
from .levels import BASIC

SERVICE_NAME = "machiavelox.v1.BotHostService"

LEVEL_FROM_PB = {bots_pb2.BOT_LEVEL_BASIC: BASIC, bots_pb2.BOT_LEVEL_EASY: "easy",
                 bots_pb2.BOT_LEVEL_MEDIUM: "medium", bots_pb2.BOT_LEVEL_HARD: "hard"}
# Which bots (True: classic Machiavelli's); unset: Machiavelox's, as before the field existed.
CLASSIC_FROM_PB = {classic_pb2.RULESET_UNSPECIFIED: False,
                   classic_pb2.RULESET_MACHIAVELOX: False, classic_pb2.RULESET_CLASSIC: True}


class BotHostServicer(bots_pb2_grpc.BotHostServiceServicer):
    def __init__(self, host: BotHost) -> None:
        self.host = host

    async def SeatBots(self, request: bots_pb2.SeatBotsRequest,
                       context: Any) -> bots_pb2.SeatBotsResponse:
        level = LEVEL_FROM_PB.get(request.level)
        if level is None:
            raise invalid_argument("bots/bad-level", "level must be basic, easy, medium or hard")
        if request.for_player and not PLAYER_NAME.fullmatch(request.for_player):
            raise invalid_argument("bots/bad-player", "for_player is a player name")
        classic = CLASSIC_FROM_PB.get(request.ruleset)
        if classic is None:
            raise invalid_argument("bots/bad-ruleset", f"unknown ruleset {request.ruleset}")
        try:
            names = self.host.seat(request.invite_code, level, request.count,
                                   request.for_player, classic=classic)
        except Full as err:
            raise resource_exhausted(err.reason, err.message) from None
        except HostRefusal as err:
            raise invalid_argument(err.reason, err.message) from None
        return bots_pb2.SeatBotsResponse(bot_ids=names)


async def serve(settings: BotHostSettings) -> None:
    obs = Observability("bot-host", settings.observability)
    tls = InternalTls.from_env("bot-host")
    minted = HmacTokens(settings.token_key) if settings.login == "token" else None
    # the public endpoint, as apps reach it (plaintext, or the cluster's own TLS in front)
    gateway = grpc.aio.insecure_channel(settings.gateway, options=keepalive.CLIENT)
    host = BotHost(gateway, HostConfig(settings.max_bots, settings.time_scale,
                                       settings.basic_interval_s, settings.max_bot_s),
                   token_for=None if minted is None else lambda name: minted.issue(name)[0])
    Gauge("machiavelox_bot_host_bots", "Bots running now.", registry=obs.registry
          ).set_function(read_safely(lambda: host.running))
    Gauge("machiavelox_bot_host_max_bots", "The most bots this host runs at once.",
          registry=obs.registry).set(settings.max_bots)
    servicer = BotHostServicer(host)

    def register(server: grpc.aio.Server) -> None:
        bots_pb2_grpc.add_BotHostServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), [SERVICE_NAME],
                      register, name="bot-host", observability=obs, tls=tls)

    async def after_stop() -> None:
        await host.close()
        await gateway.close()

    await run_until_signalled(service, "bot-host", after_stop=after_stop)


def main(argv: list[str]) -> int:
    return run_service("bot-host", __doc__, BotHostSettings.from_env, serve, argv)
