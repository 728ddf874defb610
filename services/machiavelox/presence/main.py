"""`machiavelox presence`: run one presence replica until SIGTERM: who is connected and
when each player last gave a sign of life (in memory, or in Redis shared by the replicas).
"""

from __future__ import annotations

import asyncio
import logging

from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled

from .service import SERVICE_NAME, PresenceServicer, register
from .settings import PresenceSettings
from .store import (
    Clock,
    LivenessHub,
    MemoryPresenceStore,
    PresenceStore,
    RedisPresenceStore,
    StoreUnavailableError,
    stop_task,
    sweep_forever,
    wall_clock_ms,
)

log = logging.getLogger(__name__)


def build_store(settings: PresenceSettings, hub: LivenessHub) -> PresenceStore:
    if settings.redis_url:
        return RedisPresenceStore(settings.redis_url, settings.key_prefix, hub,
                                  settings.silence_ms)
    return MemoryPresenceStore(hub, settings.silence_ms)


async def serve(settings: PresenceSettings, clock: Clock = wall_clock_ms) -> None:
    hub = LivenessHub()
    store = build_store(settings, hub)
    await store.start()
    sweeper: asyncio.Task[None] | None = None
    stop_sweeping = asyncio.Event()
    try:
        servicer = PresenceServicer(store, hub, clock)
        service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                          [SERVICE_NAME], register(servicer), name="presence",
                          observability=Observability("presence", settings.observability))
        sweeper = asyncio.create_task(
            sweep_forever(store, clock, settings.sweep_interval_s, stop_sweeping),
            name="presence-sweeper")
        log.info("presence store: %s, silence after %d ms",
                 "redis" if settings.redis_url else "memory", settings.silence_ms)

        async def end_watches() -> None:
            hub.close()

        await run_until_signalled(service, "presence", before_stop=end_watches)
    finally:
        if sweeper is not None:
            stop_sweeping.set()
            await stop_task(sweeper)
        await store.close()


def main(argv: list[str]) -> int:
    return run_service("presence", __doc__, PresenceSettings.from_env, serve, argv,
                       cannot_start=(StoreUnavailableError,))
