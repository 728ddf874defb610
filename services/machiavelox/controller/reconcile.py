"""One reconcile round: observe, decide (decide.py, pure), act. And the loop that runs rounds.

A round reads the StatefulSet's scale, asks every shard 0..replicas-1 for its load and health
in parallel, decides, then acts in a safe order: resume or drain a shard first, then write the
replicas with the resourceVersion read at the start of the round (a Conflict means somebody
changed the StatefulSet meanwhile: nothing is written, the next round looks again). A scale-down
is only ever decided on a load answer that showed the highest shard draining and empty, and a
draining shard accepts no new table, so it is still empty when the pod goes.

Rounds run every `interval_s`, at once when the StatefulSet changes (watch) or when this replica
becomes the leader, and only while it leads; each act checks leadership again just before it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import grpc

from .decide import Decision, Memory, Observation, Policy, decide
from .errors import Conflict, KubeError
from .kube import Scale
from .metrics import ControllerMetrics
from .shards import ShardClients

log = logging.getLogger(__name__)


class Scaler(Protocol):
    def read(self) -> Scale: ...
    def write(self, replicas: int, resource_version: str) -> None: ...


@dataclass(frozen=True)
class Round:
    """What one round saw, decided and did (`acted`: the writes that went through)."""

    observation: Observation
    decision: Decision
    acted: tuple[str, ...]


class Controller:
    def __init__(self, policy: Policy, scaler: Scaler, shards: ShardClients,
                 leading: Callable[[], bool], clock: Callable[[], float],
                 interval_s: float, metrics: ControllerMetrics | None = None) -> None:
        self.policy = policy
        self.scaler = scaler
        self.shards = shards
        self.leading = leading
        self.clock = clock
        self.interval_s = interval_s
        self.metrics = metrics
        self.memory = Memory()
        self._wake = asyncio.Event()
        self._last: tuple[str, str] | None = None

    def wake(self) -> None:
        """Start a round now (safe from the event loop only; threads use call_soon_threadsafe)."""
        self._wake.set()

    async def reconcile_once(self) -> Round | None:
        """One round; None when this replica does not lead or the API server failed."""
        if not self.leading():
            self.memory = Memory()  # a new leader judges excess afresh
            return None
        try:
            scale = await asyncio.to_thread(self.scaler.read)
        except KubeError as err:
            log.warning("cannot read the shard StatefulSet's scale: %s", err)
            return None
        observation = Observation(scale.replicas, await self.shards.loads(scale.replicas))
        decision = decide(observation, self.policy, self.memory, self.clock())
        self.memory = decision.memory
        self._log(observation, decision)
        if self.metrics is not None:
            self.metrics.round(observation, decision, self.policy)
        acted: list[str] = []
        for ordinal, draining in ((decision.resume, False), (decision.drain, True)):
            if ordinal is None or not self.leading():
                continue
            try:
                await self.shards.set_draining(ordinal, draining)
            except (grpc.aio.AioRpcError, LookupError) as err:
                log.warning("shard %d did not take draining=%s: %s", ordinal, draining, err)
                return Round(observation, decision, tuple(acted))
            acted.append(f"{'drain' if draining else 'resume'} {ordinal}")
        if decision.replicas != scale.replicas and self.leading():
            try:
                await asyncio.to_thread(self.scaler.write, decision.replicas,
                                        scale.resource_version)
            except Conflict:  # its watch event starts the next round
                log.info("the StatefulSet changed during the round; not scaled")
            except KubeError as err:
                log.warning("cannot scale the shards to %d: %s", decision.replicas, err)
            else:
                acted.append(f"replicas {scale.replicas}->{decision.replicas}")
        return Round(observation, decision, tuple(acted))

    def _log(self, observation: Observation, decision: Decision) -> None:
        key = (decision.kind, decision.reason)
        level = logging.DEBUG if key == self._last else logging.INFO  # changes, not repeats
        self._last = key
        log.log(level, "%s: %s (replicas %d, tables %d, players %d)", decision.kind,
                decision.reason, observation.replicas, observation.tables, observation.players)

    async def run(self) -> None:
        """Rounds forever: every interval, on wake-ups, while leading."""
        while True:
            self._wake.clear()
            try:
                await self.reconcile_once()
            except Exception:  # a bug in a round must not stop the controller for good
                log.exception("reconcile round failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval_s)
