"""`machiavelox table`: run one table-authority shard."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time

import grpc

from machiavelox._gen.v1 import table_pb2_grpc
from machiavelox.platform import logs
from machiavelox.platform.observability import Observability, ObservabilitySettings
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.telemetry import UNTRACED_PREFIXES

from .metrics import ShardMetrics
from .observe import ShardObserver
from .presence import PresenceWatcher
from .reporting import ScoringReporter
from .service import TableAuthority
from .settings import TableSettings
from .shard import Shard


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


STREAMS = "/machiavelox.v1.TableAuthorityService/Connect"  # per-action spans, not per stream


async def serve(settings: TableSettings) -> None:
    obs = Observability("table", ObservabilitySettings.from_env("table"),
                        resource_attributes={"service.instance.id": settings.shard_id},
                        untraced=(*UNTRACED_PREFIXES, STREAMS))
    metrics = ShardMetrics(obs.registry, settings.shard_id)
    reporter = ScoringReporter(settings.scoring, settings.shard_id)
    shard = Shard(settings.shard_id, settings.capacity, wall_ms, reporter.report,
                  settings.time_scale, ShardObserver(metrics, obs.telemetry),
                  settings.deal_seed)
    metrics.track_load(lambda: shard.tables_in_play, lambda: shard.players, shard.capacity)
    servicer = TableAuthority(shard, settings.batch_window_s)
    watcher = PresenceWatcher(settings.presence, shard)

    def register(server: grpc.aio.Server) -> None:
        table_pb2_grpc.add_TableAuthorityServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                      ["machiavelox.v1.TableAuthorityService"], register, name="table",
                      observability=obs)
    timers = asyncio.create_task(shard.run_timers())
    watcher.start()

    async def after_stop() -> None:
        await watcher.close()
        timers.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await timers
        await shard.close()
        await reporter.close()

    async def before_stop() -> None:
        await shard.drain_for_shutdown(settings.drain_s)

    await run_until_signalled(service, f"table shard {settings.shard_id}",
                              before_stop=before_stop, after_stop=after_stop)


def tune_gc() -> None:
    """A shard holds many tables' long-lived state (boards, logs, events): with CPython's default
    thresholds (700, 10, 10) the collector runs every few hundred allocations and the older
    generations often, each full pass walking every object of every table, pauses that land on
    whichever actions are waiting (the p99: 59 ms at 600 tables in cluster_bench, 5.9 ms with
    this). Most of a table's state is freed by reference counting; cycles are still collected,
    less often (a full pass every few minutes under load instead of every few seconds)."""
    gc.freeze()  # what start-up allocated is never collected
    gc.set_threshold(50_000, 50, 100)


def main(argv: list[str]) -> int:
    settings = TableSettings.from_env()
    logs.configure("table", settings.log_level)
    tune_gc()
    asyncio.run(serve(settings))
    return 0
