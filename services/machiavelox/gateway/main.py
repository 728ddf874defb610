"""`machiavelox gateway`: run the public endpoint."""

from __future__ import annotations

import asyncio

import grpc

from machiavelox._gen.v1 import gateway_pb2_grpc
from machiavelox.platform import logs
from machiavelox.platform.server import Endpoint, Service, run_until_signalled

from .auth import HmacTokens
from .links import ShardLinks
from .presence import PresenceReporter
from .service import Gateway
from .settings import GatewaySettings


async def serve(settings: GatewaySettings) -> None:
    links = ShardLinks(settings.shards, settings.shard_template, settings.batch_window_s)
    presence = PresenceReporter(settings.presence, settings.gateway_id)
    servicer = Gateway(HmacTokens(settings.token_key), links, presence)

    def register(server: grpc.aio.Server) -> None:
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                      ["machiavelox.v1.GatewayService"], register)
    async def after_stop() -> None:
        await links.close()
        await presence.close()

    await run_until_signalled(service, "gateway", after_stop=after_stop)


def main(argv: list[str]) -> int:
    settings = GatewaySettings.from_env()
    logs.configure("gateway", settings.log_level)
    asyncio.run(serve(settings))
    return 0
