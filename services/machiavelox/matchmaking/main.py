"""`machiavelox matchmaking`: run the agorà until SIGTERM: the queue, friendly lobbies,
placements, who is seated where (seats of lost tables freed by the seat check), ratings
rebuilt from scoring's log. Its state is in this process's memory (one replica), or in Redis
(MACHIAVELOX_MATCHMAKING_REDIS_URL) shared by every replica.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import grpc

from machiavelox._gen.v1 import matchmaking_pb2_grpc
from machiavelox.identity.verifier import build_verifier
from machiavelox.platform.entry import run_service
from machiavelox.platform.gcsettings import large_generations
from machiavelox.platform.observability import Observability
from machiavelox.platform.ratings import Ratings
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.tls import InternalTls

from .agora import Agora
from .bothost import BotHostClient
from .link import LINK_SERVICE_NAME, AgoraLink
from .memory_store import MemoryStore
from .metrics import MatchmakingMetrics
from .placement import ShardClient
from .practice import Practice
from .redis_store import RedisStore, stop_task
from .results import ResultsFollower
from .seatcheck import SeatCheck
from .service import SERVICE_NAME, MatchmakingService
from .settings import MatchmakingSettings
from .store import AgoraStore, StoreUnavailableError

log = logging.getLogger(__name__)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def build_store(settings: MatchmakingSettings
                      ) -> tuple[AgoraStore, Callable[[], int]]:
    """The store its settings name, started, and the clock that goes with it."""
    ttl_ms = round(settings.lobby_ttl_s * 1000)
    attach_ms, lease_ms = round(settings.detached_s * 1000), round(settings.lease_s * 1000)
    if not settings.redis_url:
        return MemoryStore(ttl_ms, attach_ms=attach_ms, lease_ms=lease_ms), monotonic_ms
    store = RedisStore(settings.redis_url, settings.key_prefix, ttl_ms, attach_ms=attach_ms,
                       lease_ms=lease_ms)
    await store.start()
    log.info("the agorà's state is in Redis (prefix %s)", settings.key_prefix)
    return store, store.clock


async def serve(settings: MatchmakingSettings) -> None:
    obs = Observability("matchmaking", settings.observability)
    metrics = MatchmakingMetrics(obs.registry)
    tls = InternalTls.from_env("matchmaking")  # served to gateways; calls out as matchmaking
    placement = ShardClient(settings.shards,
                            tls.connector("table", interceptors=obs.client_interceptors()))
    store, clock = await build_store(settings)
    agora = Agora(Ratings(), placement, clock, settings.window, settings.widen_per_s,
                  metrics=metrics, telemetry=obs.telemetry, rates=settings.rates,
                  store=store, classic_ratings=Ratings(), ranked=settings.ranked)
    metrics.track_waiting(agora.queued, agora.seats_waiting)
    metrics.track_unresolved(agora.unresolved)
    verifier = build_verifier(settings.identity)
    bots = (BotHostClient(settings.bot_host,
                          tls.connector("bot-host", obs.client_interceptors()))
            if settings.bot_host else None)
    servicer = MatchmakingService(agora, verifier, Practice(agora, bots))
    link = AgoraLink(servicer, obs.telemetry, obs.grpc_metrics, prepare=verifier.prepare)

    def register(server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(servicer, server)
        if settings.agora_link:
            matchmaking_pb2_grpc.add_AgoraLinkServiceServicer_to_server(link, server)

    names = [SERVICE_NAME, LINK_SERVICE_NAME] if settings.agora_link else [SERVICE_NAME]
    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), names,
                      register, interceptors=verifier.interceptors(), name="matchmaking",
                      observability=obs, tls=tls)
    seats = SeatCheck(agora.store.seated_tables, placement, agora.end_table, metrics)
    agora.lost_check = seats.check_table
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
            await stop_task(task)
        await placement.close()
        if bots is not None:
            await bots.close()
        await store.close()

    try:
        await run_until_signalled(service, "matchmaking", before_stop=end_streams,
                                  after_stop=after_stop)
    finally:
        for task in tasks:
            task.cancel()


def prepare(settings: MatchmakingSettings | None) -> None:
    """A replica holds every waiting ticket's stream, task and futures (tens of objects
    each): the cycle collector's generations are large (platform/gcsettings.py). With
    CPython's defaults a burst of 10,000 players spent 30% of the main thread collecting
    (tests/bench/agora_bench.py)."""
    large_generations()


def main(argv: list[str]) -> int:
    return run_service("matchmaking", __doc__, MatchmakingSettings.from_env, serve, argv,
                       prepare=prepare, cannot_start=(StoreUnavailableError,))
