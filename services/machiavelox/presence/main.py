"""`machiavelox presence`: run one presence replica until SIGTERM: who is connected and
when each player last gave a sign of life (in memory, or in Redis shared by the replicas).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled

from .memory_store import MemoryPresenceStore
from .redis_store import RedisPresenceStore
from .service import SERVICE_NAME, PresenceServicer, register
from .settings import PresenceSettings
from .store import PresenceStore, StoreUnavailableError, stop_task, sweep_forever

log = logging.getLogger(__name__)


def build_store(settings: PresenceSettings) -> PresenceStore:
    if settings.redis_url:
        # host:port: stable across a restart, so a restarted replica finds its old beacon
        return RedisPresenceStore(settings.redis_url, settings.key_prefix, settings.silence_ms,
                                  replica_id=f"{socket.gethostname()}:{settings.port}",
                                  stale_ms=settings.stale_ms,
                                  interval_s=settings.sweep_interval_s,
                                  timeout_s=settings.store_timeout_s)
    return MemoryPresenceStore(settings.silence_ms, settings.stale_ms)


async def serve(settings: PresenceSettings) -> None:
    store = build_store(settings)
    await store.start()
    sweeper: asyncio.Task[None] | None = None
    stop_sweeping = asyncio.Event()
    try:
        servicer = PresenceServicer(store)
        service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                          [SERVICE_NAME], register(servicer), name="presence",
                          observability=Observability("presence", settings.observability))
        sweeper = asyncio.create_task(
            sweep_forever(store, settings.sweep_interval_s, stop_sweeping),
            name="presence-sweeper")
        log.info("presence store: %s, silence after %d ms",
                 "redis" if settings.redis_url else "memory", settings.silence_ms)

        async def end_watches() -> None:
            store.hub.close()

        await run_until_signalled(service, "presence", before_stop=end_watches)
    finally:
        if sweeper is not None:
            stop_sweeping.set()
            await stop_task(sweeper)
        await store.close()


def main(argv: list[str]) -> int:
    return run_service("presence", __doc__, PresenceSettings.from_env, serve, argv,
                       cannot_start=(StoreUnavailableError,))
