"""`machiavelox gateway`: run the public endpoint (GatewayService: Login, Play; the agorà
relayed to matchmaking) until SIGTERM."""

from __future__ import annotations

import grpc

from machiavelox._gen.v1 import gateway_pb2_grpc, matchmaking_pb2_grpc
from machiavelox.identity.verifier import build_verifier
from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability, ObservabilitySettings
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.telemetry import UNTRACED_PREFIXES
from machiavelox.platform.tls import InternalTls

from .agora import AgoraRelay
from .links import ShardLinks
from .login import DevLogin
from .metrics import GatewayMetrics
from .observe import GatewayObserver
from .pace import GatewayPace
from .presence import PresenceReporter
from .service import Gateway
from .settings import GatewaySettings

STREAMS = "/machiavelox.v1.GatewayService/Play"  # per-action spans, not per stream
# No request of an app's is near this (the largest action names ~40 cards): a larger message is
# RESOURCE_EXHAUSTED from gRPC itself, before it is decoded (docs/security.md).
MAX_REQUEST_BYTES = 64 * 1024


async def serve(settings: GatewaySettings) -> None:
    obs = Observability("gateway", ObservabilitySettings.from_env("gateway"),
                        resource_attributes={"service.instance.id": settings.gateway_id},
                        untraced=(*UNTRACED_PREFIXES, STREAMS),
                        trust_incoming=settings.trust_traceparent)
    metrics = GatewayMetrics(obs.registry)
    tls = InternalTls.from_env("gateway")  # its calls to internal services (mTLS)
    links = ShardLinks(settings.shards, tls.connector("table"), settings.batch_window_s,
                       on_state=metrics.link_state, idle_s=settings.link_idle_s)
    presence = PresenceReporter(settings.presence, settings.gateway_id,
                                connect=tls.connector("presence"))
    observer = GatewayObserver(metrics, obs.telemetry, settings.gateway_id)
    verifier = build_verifier(settings.identity)
    login = DevLogin(verifier.hmac if settings.dev_login else None, settings.login_rate)
    servicer = Gateway(verifier, links, presence, observer,
                       GatewayPace(settings.pace), settings.session_limits, login=login)

    tokens = servicer.tokens
    agora = (AgoraRelay(tokens, settings.matchmaking, tls.connector("matchmaking"),
                        link=settings.agora_link)
             if settings.matchmaking else None)

    def register(server: grpc.aio.Server) -> None:
        gateway_pb2_grpc.add_GatewayServiceServicer_to_server(servicer, server)
        if agora is not None:
            matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(agora, server)

    names = ["machiavelox.v1.GatewayService"]
    if agora is not None:
        names.append("machiavelox.v1.MatchmakingService")
    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), names, register,
                      interceptors=verifier.interceptors(), name="gateway", observability=obs,
                      plaintext=True,  # the public endpoint: apps, with their tokens
                      options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES)])

    async def after_stop() -> None:
        if agora is not None:
            await agora.close()
        await links.close()
        await presence.close()

    await run_until_signalled(service, "gateway", after_stop=after_stop)


def main(argv: list[str]) -> int:
    return run_service("gateway", __doc__, GatewaySettings.from_env, serve, argv)
