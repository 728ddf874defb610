"""`machiavelox table`: run one table-authority shard (the tables placed on it) until SIGTERM;
then it drains: no new table, its tables play on for MACHIAVELOX_TABLE_DRAIN_S."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging

import grpc

from machiavelox._gen.v1 import table_pb2_grpc
from machiavelox.platform.clock import Timeline
from machiavelox.platform.entry import run_service
from machiavelox.platform.gcsettings import large_generations
from machiavelox.platform.observability import Observability, ObservabilitySettings
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.telemetry import UNTRACED_PREFIXES
from machiavelox.platform.tls import InternalTls

from .journal_store import JournalUnavailableError, open_journal
from .metrics import JournalMetrics, ShardMetrics
from .observe import ShardObserver
from .presence import PresenceWatcher
from .records import JournalCorruptError
from .recovery import recover
from .reporting import ScoringReporter
from .service import TableAuthority
from .settings import TableSettings
from .shard import Shard

log = logging.getLogger(__name__)
STREAMS = "/machiavelox.v1.TableAuthorityService/Connect"  # per-action spans, not per stream


async def serve(settings: TableSettings) -> None:
    obs = Observability("table", ObservabilitySettings.from_env("table"),
                        resource_attributes={"service.instance.id": settings.shard_id},
                        untraced=(*UNTRACED_PREFIXES, STREAMS))
    metrics = ShardMetrics(obs.registry, settings.shard_id)
    tls = InternalTls.from_env("table")  # served to gateways, matchmaking; calls out as table
    reporter = ScoringReporter(settings.scoring, settings.shard_id, tls.connector("scoring"))
    # the rules clock: the wall clock's scale at start, advanced by the monotonic clock (a
    # wall clock step while the shard runs moves no timer; platform/clock.py)
    shard = Shard(settings.shard_id, settings.capacity, Timeline(), reporter.report,
                  settings.time_scale, ShardObserver(metrics, obs.telemetry),
                  settings.deal_seed, settings.action_rate, settings.resume_grace_s)
    if settings.journal != "off":  # every table it owns, back before it serves
        store = await open_journal(settings.journal, settings.shard_id,
                                   settings.journal_timeout_s)
        log.info("journal: %s", store.durability, extra={"shard_id": settings.shard_id})
        recovered = await recover(shard, store)
        journaled = JournalMetrics(obs.registry, settings.shard_id)
        journaled.recovery.set(recovered.seconds)
        journaled.recovered.set(recovered.tables)
        journal = shard.journal
        assert journal is not None
        journal.on_write = journaled.write.observe
        journal.on_failure = journaled.failures.inc
        journaled.track(lambda: float(journal.healthy), lambda: len(shard.tables))
    metrics.track_load(lambda: shard.tables_in_play, lambda: shard.players, shard.capacity)
    servicer = TableAuthority(shard, settings.batch_window_s)
    watcher = PresenceWatcher(settings.presence, shard, tls.connector("presence"))

    def register(server: grpc.aio.Server) -> None:
        table_pb2_grpc.add_TableAuthorityServiceServicer_to_server(servicer, server)

    service = Service(Endpoint(settings.host, settings.port, settings.grace_s),
                      ["machiavelox.v1.TableAuthorityService"], register, name="table",
                      observability=obs, tls=tls)
    tasks = [asyncio.create_task(shard.run_timers()), asyncio.create_task(shard.run_sweeper()),
             asyncio.create_task(shard.run_liveness())]
    watcher.start()

    async def after_stop() -> None:
        await watcher.close()
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await shard.close(settings.report_wait_s)
        await reporter.close()

    async def before_stop() -> None:
        await shard.drain_for_shutdown(settings.drain_s)

    await run_until_signalled(service, f"table shard {settings.shard_id}",
                              before_stop=before_stop, after_stop=after_stop)


def tune_gc() -> None:
    """A shard holds many tables' long-lived state (boards, logs, events, calate): millions of
    objects at a few thousand tables. CPython's cycle collector scans a generation whole each
    time it collects it: with its defaults (700, 10, 10) the older generations are collected
    every few seconds under load (the p99 at 600 tables in cluster_bench: 59 ms); with large
    young generations alone (50,000 and 50) rarely, but each pass of the second generation then
    took 0.9 s at 1,500 tables (a failed 10 s window about once a minute in a soak).

    So what survives a young collection is frozen (`gc.freeze()` after every collection of the
    youngest generation): the older generations stay empty and are never scanned, and the only
    pauses are young collections (under 50,000 objects: tens of ms). Reference counting frees
    most objects; the cost is that a reference cycle that outlives a young collection is never
    collected. So a table must never be part of a cycle: once it has ended and left the shard
    (`Shard.sweep`), reference counting alone frees it (tests/services/table/test_memory.py
    checks it with the collector off; a refusal keeps no traceback, whose frames would tie
    the table into one). A transient cycle that is alive during a young collection (asyncio or
    gRPC bookkeeping) is kept until the process ends: the soak benchmark
    (tests/bench/soak_bench.py) shows what that costs over hours."""
    large_generations()
    gc.callbacks.append(_freeze_survivors)


def _freeze_survivors(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and info["generation"] == 0:
        gc.freeze()


def main(argv: list[str]) -> int:
    return run_service("table", __doc__, TableSettings.from_env, serve, argv,
                       prepare=lambda settings: tune_gc(),
                       cannot_start=(JournalUnavailableError, JournalCorruptError))
