"""`machiavelox scoring`: run the scoring service until SIGTERM or SIGINT: every smazzata's
result (SQLite or PostgreSQL), the leaderboard, long-match standings, the results log."""

from __future__ import annotations

import logging

import grpc

from machiavelox._gen.v1 import scoring_pb2_grpc
from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled

from .service import SERVICE_NAME, ScoringServicer
from .settings import ScoringSettings
from .store import StoreUnavailableError, open_store

log = logging.getLogger(__name__)


async def serve(settings: ScoringSettings) -> None:
    store = await open_store(settings.database_url, settings.poll_s)
    try:
        servicer = ScoringServicer(store)

        def register(server: grpc.aio.Server) -> None:
            scoring_pb2_grpc.add_ScoringServiceServicer_to_server(servicer, server)

        service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                          [SERVICE_NAME], register, name="scoring",
                          observability=Observability("scoring", settings.observability))
        await run_until_signalled(service, "scoring", before_stop=servicer.stop_streams)
    finally:
        await store.close()


def main(argv: list[str]) -> int:
    return run_service("scoring", __doc__, ScoringSettings.from_env, serve, argv,
                       prepare=_starting, cannot_start=(StoreUnavailableError,))


def _starting(settings: ScoringSettings) -> None:
    log.info("scoring starting on %s", settings.backend)
