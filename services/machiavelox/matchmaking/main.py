"""`machiavelox matchmaking`: run the agorà (one replica: its queue is in memory) until
SIGTERM: the queue, friendly lobbies, who is seated where (seats of lost tables freed by the
seat check), ratings rebuilt from scoring's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import grpc

from machiavelox._gen.v1 import matchmaking_pb2_grpc
from machiavelox.gateway.identity import build_verifier
from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.tls import InternalTls

from .metrics import MatchmakingMetrics
from .placement import Placement
from .ratings import Ratings
from .seatcheck import SeatCheck
from .service import SERVICE_NAME, Agora, MatchmakingService, ResultsFollower
from .settings import MatchmakingSettings

log = logging.getLogger(__name__)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def serve(settings: MatchmakingSettings) -> None:
    obs = Observability("matchmaking", settings.observability)
    metrics = MatchmakingMetrics(obs.registry)
    tls = InternalTls.from_env("matchmaking")  # served to gateways; calls out as matchmaking
    placement = Placement(settings.shards,
                          tls.connector("table", interceptors=obs.client_interceptors()))
    agora = Agora(Ratings(), placement, monotonic_ms, settings.window, settings.widen_per_s,
                  metrics=metrics, telemetry=obs.telemetry, rates=settings.rates,
                  lobby_ttl_s=settings.lobby_ttl_s)
    metrics.track_waiting(lambda: len(agora.queue), agora.lobbies.waiting_seats)
    verifier = build_verifier(settings.identity)
    servicer = MatchmakingService(agora, verifier)

    def register(server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), [SERVICE_NAME],
                      register, interceptors=verifier.interceptors(), name="matchmaking",
                      observability=obs, tls=tls)
    seats = SeatCheck(agora.roster, placement, agora.end_table, metrics)
    tasks = [asyncio.create_task(agora.run(settings.tick_ms / 1000), name="matching"),
             asyncio.create_task(seats.run(settings.seat_check_s), name="seat-check")]
    if settings.scoring:
        follower = ResultsFollower(settings.scoring, agora.apply_result,
                                   tls.connector("scoring", obs.client_interceptors()))
        tasks.append(asyncio.create_task(follower.run(), name="results"))
    else:
        log.warning("no MACHIAVELOX_SCORING_ADDRESS: nobody is rated, and seated players stay "
                    "seated until matchmaking restarts")
    log.info("matchmaking over shards %s", ", ".join(settings.shards))

    async def end_streams() -> None:
        agora.close()

    async def after_stop() -> None:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await placement.close()

    try:
        await run_until_signalled(service, "matchmaking", before_stop=end_streams,
                                  after_stop=after_stop)
    finally:
        for task in tasks:
            task.cancel()


def main(argv: list[str]) -> int:
    return run_service("matchmaking", __doc__, MatchmakingSettings.from_env, serve, argv)
