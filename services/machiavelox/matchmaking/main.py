"""`machiavelox matchmaking`: run the agorà (one replica: its queue is in memory).

Settings come from the environment (see `settings.py`): MACHIAVELOX_MATCHMAKING_HOST, _PORT,
_SHARDS, _TICK_MS, _WINDOW, _WIDEN_PER_S, MACHIAVELOX_TOKEN_KEY, MACHIAVELOX_SCORING_ADDRESS,
MACHIAVELOX_GRACE_S, MACHIAVELOX_LOG_LEVEL, MACHIAVELOX_METRICS_PORT, _METRICS_HOST and the
OTEL_* variables (platform/telemetry.py). Exit codes: 0 stopped cleanly, 1 could not start,
2 bad settings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import time

import grpc

from machiavelox._gen.v1 import matchmaking_pb2_grpc
from machiavelox.gateway.auth import HmacTokens
from machiavelox.platform import logs
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.settings import SettingsError

from .metrics import MatchmakingMetrics
from .placement import Placement
from .ratings import Ratings
from .service import SERVICE_NAME, Agora, MatchmakingService, ResultsFollower
from .settings import MatchmakingSettings

log = logging.getLogger(__name__)


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def serve(settings: MatchmakingSettings) -> None:
    obs = Observability("matchmaking", settings.observability)
    metrics = MatchmakingMetrics(obs.registry)
    placement = Placement(settings.shards, interceptors=obs.client_interceptors())
    agora = Agora(Ratings(), placement, monotonic_ms, settings.window, settings.widen_per_s,
                  metrics=metrics, telemetry=obs.telemetry)
    metrics.track_waiting(lambda: len(agora.queue), agora.lobbies.waiting_seats)
    servicer = MatchmakingService(agora, HmacTokens(settings.token_key))

    def register(server: grpc.aio.Server) -> None:
        matchmaking_pb2_grpc.add_MatchmakingServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), [SERVICE_NAME],
                      register, name="matchmaking", observability=obs)
    tasks = [asyncio.create_task(agora.run(settings.tick_ms / 1000), name="matching")]
    if settings.scoring:
        follower = ResultsFollower(settings.scoring, agora.apply_result,
                                   interceptors=obs.client_interceptors())
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
    parser = argparse.ArgumentParser(
        prog="machiavelox matchmaking", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    try:
        settings = MatchmakingSettings.from_env()
    except SettingsError as exc:
        print(f"machiavelox matchmaking: {exc}", file=sys.stderr)
        return 2
    logs.configure("matchmaking", settings.log_level)
    try:
        asyncio.run(serve(settings))
    except OSError as exc:
        log.error("matchmaking cannot start: %s", exc)
        return 1
    return 0
