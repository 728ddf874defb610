"""`machiavelox scoring`: run the scoring service until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging

import grpc

from machiavelox._gen.v1 import scoring_pb2_grpc
from machiavelox.platform.logs import configure
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.settings import SettingsError

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="machiavelox scoring",
        description="Run the scoring service (settings come from MACHIAVELOX_* variables).")
    parser.parse_args(argv)
    try:
        settings = ScoringSettings.from_env()
    except SettingsError as exc:
        configure("scoring")
        log.critical("bad settings: %s", exc)
        return 2
    configure("scoring", settings.log_level)
    log.info("scoring starting on %s", settings.backend)
    try:
        asyncio.run(serve(settings))
    except StoreUnavailableError as exc:
        log.critical("%s", exc)
        return 1
    except OSError as exc:  # a port taken (gRPC or /metrics)
        log.critical("scoring cannot start: %s", exc)
        return 1
    return 0
