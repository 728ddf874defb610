"""`machiavelox gateway`: run the public endpoint."""

from __future__ import annotations

import asyncio

import grpc

from machiavelox._gen.v1 import gateway_pb2_grpc, matchmaking_pb2_grpc
from machiavelox.platform import logs
from machiavelox.platform.observability import Observability, ObservabilitySettings
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.telemetry import UNTRACED_PREFIXES

from .agora import AgoraRelay
from .auth import HmacTokens
from .links import ShardLinks
from .metrics import GatewayMetrics
from .observe import GatewayObserver
from .presence import PresenceReporter
from .service import Gateway
from .settings import GatewaySettings

STREAMS = "/machiavelox.v1.GatewayService/Play"  # per-action spans, not per stream


async def serve(settings: GatewaySettings) -> None:
    obs = Observability("gateway", ObservabilitySettings.from_env("gateway"),
                        resource_attributes={"service.instance.id": settings.gateway_id},
                        untraced=(*UNTRACED_PREFIXES, STREAMS))
    metrics = GatewayMetrics(obs.registry)
    links = ShardLinks(settings.shards, settings.shard_template, settings.batch_window_s,
                       on_open=metrics.add_shard)
    presence = PresenceReporter(settings.presence, settings.gateway_id)
    observer = GatewayObserver(metrics, obs.telemetry, settings.gateway_id)
    servicer = Gateway(HmacTokens(settings.token_key), links, presence, observer)

    tokens = servicer.tokens
    agora = AgoraRelay(tokens, settings.matchmaking) if settings.matchmaking else None

    def register(server: grpc.aio.Server) -> None:
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)
        if agora is not None:
            matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(agora, server)

    names = ["machiavelox.v1.GatewayService"]
    if agora is not None:
        names.append("machiavelox.v1.MatchmakingService")
    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), names, register,
                      name="gateway", observability=obs)

    async def after_stop() -> None:
        if agora is not None:
            await agora.close()
        await links.close()
        await presence.close()

    await run_until_signalled(service, "gateway", after_stop=after_stop)


def main(argv: list[str]) -> int:
    settings = GatewaySettings.from_env()
    logs.configure("gateway", settings.log_level)
    asyncio.run(serve(settings))
    return 0
