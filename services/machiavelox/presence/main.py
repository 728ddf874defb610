"""`machiavelox presence`: run one presence replica until SIGTERM.

Settings come from the environment (see `settings.py`): MACHIAVELOX_PRESENCE_HOST, _PORT,
_REDIS_URL, _SILENCE_MS, _KEY_PREFIX, MACHIAVELOX_GRACE_S, MACHIAVELOX_LOG_LEVEL,
MACHIAVELOX_METRICS_PORT, _METRICS_HOST and the OTEL_* variables (platform/telemetry.py).
Exit codes: 0 stopped cleanly, 1 could not start (port, Redis), 2 bad settings.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from machiavelox.platform import logs
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.settings import SettingsError

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
    parser = argparse.ArgumentParser(
        prog="machiavelox presence", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.parse_args(argv)
    try:
        settings = PresenceSettings.from_env()
    except SettingsError as exc:
        print(f"machiavelox presence: {exc}", file=sys.stderr)
        return 2
    logs.configure("presence", settings.log_level)
    try:
        asyncio.run(serve(settings))
    except (OSError, StoreUnavailableError) as exc:
        log.error("presence cannot start: %s", exc)
        return 1
    return 0
