"""`machiavelox controller`: keep a buffer of free table capacity, never killing a table.

Runs leader election (lease.py) and, while leading, reconcile rounds (reconcile.py) that scale
the shard StatefulSet up when free capacity runs low and down only by draining. Serves the
standard gRPC health service (for the pod's probes). On SIGTERM it stops acting, releases the
Lease so another replica takes over at once, and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from machiavelox.platform.entry import run_service
from machiavelox.platform.observability import Observability
from machiavelox.platform.server import Endpoint, Service, run_until_signalled
from machiavelox.platform.tls import InternalTls

from .kube import LeaseStore, ShardScale, StatefulSetWatch, api_client
from .lease import LeaderElector
from .metrics import ControllerMetrics
from .reconcile import Controller
from .settings import ControllerSettings
from .shards import ShardClients


def build(settings: ControllerSettings, metrics: ControllerMetrics | None = None,
          ) -> tuple[Controller, LeaderElector, StatefulSetWatch, ShardClients]:
    """The controller's parts, wired (no task started)."""
    api = api_client(settings.kube_api, settings.identity)
    elector = LeaderElector(LeaseStore(api, settings.namespace, settings.lease_name),
                            settings.identity, settings.lease_duration_s,
                            settings.renew_deadline_s)
    shards = ShardClients(settings.shard_address, settings.shard_id, settings.rpc_timeout_s,
                          InternalTls.from_env("controller").connector("table"))
    controller = Controller(settings.policy,
                            ShardScale(api, settings.namespace, settings.statefulset), shards,
                            elector.leading, time.monotonic, settings.interval_s, metrics)
    loop = asyncio.get_running_loop()

    def changed() -> None:  # from the watch thread
        loop.call_soon_threadsafe(controller.wake)

    watcher = StatefulSetWatch(api, settings.namespace, settings.statefulset, changed)
    return controller, elector, watcher, shards


async def serve(settings: ControllerSettings) -> None:
    observability = Observability.from_env("controller")
    metrics = ControllerMetrics(observability.registry)
    controller, elector, watcher, shards = build(settings, metrics)

    def on_leadership(leading: bool) -> None:
        metrics.leader.set(1 if leading else 0)
        if leading:
            controller.wake()

    # health only (its probes': no client certificate); its calls to shards are mTLS
    service = Service(Endpoint(settings.host, settings.port, settings.grace_s), [],
                      lambda server: None, name="controller", observability=observability,
                      plaintext=True)
    tasks = [asyncio.create_task(elector.run(settings.renew_s, on_leadership)),
             asyncio.create_task(controller.run())]
    watcher.start()

    async def before_stop() -> None:
        watcher.stop()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await asyncio.to_thread(elector.release)
        await shards.close()

    await run_until_signalled(service, "controller", before_stop=before_stop)


def main(argv: list[str]) -> int:
    return run_service("controller", __doc__, ControllerSettings.from_env, serve, argv)

