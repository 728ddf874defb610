"""Leader election with a `coordination.k8s.io/v1` Lease, so several replicas can run safely.

Every replica calls `tick()` every few seconds:

- no Lease: create it naming itself (a concurrent creator gets Conflict and follows);
- the Lease names itself: renew it (`renewTime`), written with the resourceVersion it read;
- it names another holder: follow, until the record has not changed for the whole
  `leaseDurationSeconds` as measured by this replica's own monotonic clock since it last saw a
  change (clocks of different machines are never compared), or the holder released it (empty
  holder): then take it over, `leaseTransitions` + 1.

Every write is optimistic (resourceVersion), so of two replicas that try at once one wins and
the other gets Conflict. A leader acts only while `leading()`: until `renew_deadline_s` after
the start of its last successful write. That deadline is shorter than the lease duration, and
the others wait the whole duration after they observed that write, so an old leader has stopped
acting before anyone else can start, even if it was cut off from the API server.

On a graceful stop the leader releases the Lease (empty holder) so another replica takes over
at its next tick instead of waiting for expiry.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from .errors import Conflict, KubeError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseRecord:
    holder: str  # spec.holderIdentity ("" = free)
    duration_s: int  # spec.leaseDurationSeconds
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int  # spec.leaseTransitions
    resource_version: str = ""


class LeaseStorage(Protocol):
    def get(self) -> LeaseRecord | None: ...  # None: no Lease yet
    def create(self, record: LeaseRecord) -> LeaseRecord: ...  # Conflict if it exists
    def replace(self, record: LeaseRecord) -> LeaseRecord: ...  # Conflict if it changed


def _utcnow() -> datetime:
    return datetime.now(UTC)


class LeaderElector:
    def __init__(self, store: LeaseStorage, identity: str, duration_s: float,
                 renew_deadline_s: float, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = _utcnow) -> None:
        if not 0 < renew_deadline_s < duration_s:
            raise ValueError("the renew deadline must be positive and below the lease duration")
        self.store = store
        self.identity = identity
        self.duration_s = max(1, math.ceil(duration_s))
        self.renew_deadline_s = renew_deadline_s
        self.clock = clock
        self.wall = wall
        self._leading_until: float | None = None
        self._seen: LeaseRecord | None = None  # the last record read or written
        self._seen_at = 0.0  # when it last changed, by our clock

    def leading(self) -> bool:
        return self._leading_until is not None and self.clock() < self._leading_until

    @property
    def holder(self) -> str:
        """The holder as last seen ("" when unknown or free)."""
        return self._seen.holder if self._seen is not None else ""

    def tick(self) -> bool:
        """Try to acquire or renew the Lease (blocking). True: this replica leads."""
        start = self.clock()
        try:
            current = self.store.get()
            if current is None:
                mine = LeaseRecord(self.identity, self.duration_s, self.wall(), self.wall(), 0)
                return self._won(self.store.create(mine), start)
            if current != self._seen:
                self._seen, self._seen_at = current, start
            if (current.holder and current.holder != self.identity
                    and start < self._seen_at + current.duration_s):
                self._leading_until = None
                return False
            now = self.wall()
            if current.holder == self.identity:
                mine = replace(current, renew_time=now, duration_s=self.duration_s)
            else:
                mine = replace(current, holder=self.identity, acquire_time=now, renew_time=now,
                               duration_s=self.duration_s, transitions=current.transitions + 1)
                log.info("taking the lease over from %r", current.holder or "(released)")
            return self._won(self.store.replace(mine), start)
        except Conflict:
            self._leading_until = None
            return False
        except KubeError as err:
            log.warning("lease not renewed: %s", err)
            return self.leading()  # still leading until the deadline of the last renewal

    def _won(self, record: LeaseRecord, start: float) -> bool:
        self._seen, self._seen_at = record, start
        self._leading_until = start + self.renew_deadline_s
        return True

    def release(self) -> None:
        """Give the Lease up at once (blocking): the next candidate need not wait for expiry."""
        was_leading = self.leading()
        self._leading_until = None
        if not was_leading or self._seen is None or self._seen.holder != self.identity:
            return
        try:
            self.store.replace(replace(self._seen, holder="", duration_s=1,
                                       renew_time=self.wall()))
            log.info("lease released")
        except KubeError as err:
            log.warning("lease not released (it expires by itself): %s", err)

    async def run(self, period_s: float, on_change: Callable[[bool], None]) -> None:
        """Tick forever every `period_s`; `on_change(leading)` on every change of role."""
        was = False
        while True:
            await asyncio.to_thread(self.tick)
            now = self.leading()
            if now != was:
                if now:
                    log.info("leading")
                else:
                    log.info("following (holder %r)", self.holder)
                on_change(now)
                was = now
            await asyncio.sleep(period_s)
