"""Where each placement's table goes, and how a placement ends, without twin or orphan tables
(issue 13 item 3; docs/architecture.md, "Placement"). No gRPC here: the shards are behind
`Shards` (`placement.ShardClient` in the service).

Every placement round asks every configured shard for its load and ranks the shards that
accept tables by the share of their capacity in use, then by tables in play, then by id
(`ranked`); a round placing several tables counts the ones it has already sent to a shard, so
a burst of matches spreads out instead of piling on the shard that was emptiest at the start of
the round.

A placement's table on shard S is `S.<placement id>` (the gateway routes a table by the part
before the first dot), created with the placement's id (CreateTable is idempotent by both).
Before each call to a shard the placement's progress is stored (`AgoraStore.progress`: the
shard, the table id, creating or cancelling), so whoever finishes it knows where a table of it
may exist. The rule: **a placement is asked of one shard at a time, and another shard is asked
only once the first has said for sure that it has no table of it.** So each answer is:
- created: the placement is placed (`AgoraStore.placed`), and only then are its players told;
- refused (the shard said no, or the call never left): the next shard;
- invalid (the request itself is wrong): the placement is given up;
- unsure (a timeout, a connection lost mid-call: the table may exist there, or come into
  being later): the placement is cancelled on that shard (CancelTable, which also makes a late
  CreateTable of it fail), and then
  - gone: the next shard, as after a refusal;
  - kept (the table exists and has been played at, or has ended): it is the placement's
    table: placed there;
  - unsure again: the placement stays as it is, stored "cancelling" on that shard; the
    placer asks again later (`resolve`), its players keep waiting, no other shard is tried.
With no shard left the placement is given up (`AgoraStore.unplaced`): competitive tickets
still attached are requeued with their age, the others' players are free; a lobby waits for
the next round.

A placement whose placer died (its lease ran out: `AgoraStore.stale`) is taken over by whoever
finds it and undone (`resolve`): cancelled on the shard it names, if any, then given up as
above (its players were waiting for it: they are matched again at once). So a table created
for a placement matchmaking abandoned is cancelled and costs nobody points.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from .store import AgoraStore, Outcome, Placement, Seated, StoreUnavailableError, Unplaced

log = logging.getLogger(__name__)


def random_suffix() -> str:
    """A placement's id: the suffix of its table's id on any shard."""
    return secrets.token_hex(6)


@dataclass(frozen=True)
class Load:
    """A shard's load (GetLoad)."""

    tables: int
    capacity: int  # 0: no limit
    draining: bool


@dataclass(frozen=True)
class Answer:
    """A shard's answer. To CreateTable: created, refused (no table there: try another),
    invalid (a bad request: give up) or unsure. To CancelTable: gone (no table of it there,
    nor ever will be), kept (the table exists and stays) or unsure."""

    kind: Literal["created", "refused", "invalid", "unsure", "gone", "kept"]
    why: str = ""


class Shards(Protocol):
    async def loads(self) -> dict[str, Load]:
        """The load of every shard that answers."""
        ...

    async def create(self, shard_id: str, table_id: str, placement: Placement) -> Answer:
        ...

    async def cancel(self, shard_id: str, table_id: str, placement_id: str) -> Answer:
        ...


def ranked(loads: Mapping[str, Load], sent: Mapping[str, int]) -> list[str]:
    """Shards that accept tables, least loaded first (`sent`: tables placed this round)."""
    def key(sid: str) -> tuple[float, int, str]:
        tables = loads[sid].tables + sent.get(sid, 0)
        capacity = loads[sid].capacity
        return (tables / capacity if capacity else float(tables), tables, sid)

    open_ = [sid for sid, load in loads.items() if not load.draining
             and (not load.capacity or load.tables + sent.get(sid, 0) < load.capacity)]
    return sorted(open_, key=key)


# ---------------------------------------------------------------------------------- outcomes
@dataclass(frozen=True)
class Done:
    placement: Placement
    seated: Seated
    watches: Outcome  # the streams to tell


@dataclass(frozen=True)
class Failed:
    placement: Placement
    unplaced: Unplaced
    why: str


@dataclass(frozen=True)
class Pending:
    """Not finished: stored as it stands, to be finished later by this process (`retry`), or
    by the replica that took it over."""

    placement: Placement
    why: str
    retry: bool = True


Result = Done | Failed | Pending


class Placer:
    def __init__(self, store: AgoraStore, shards: Shards, owner: str,
                 clock: Callable[[], int],
                 cancelled: Callable[[str], None] | None = None) -> None:
        """`owner`: this process's id in the store; `cancelled`: told each cancellation's
        answer (gone, kept, unsure), for the metrics."""
        self.store = store
        self.shards = shards
        self.owner = owner
        self.clock = clock
        self.cancelled = cancelled

    async def place(self, placements: Sequence[Placement],
                    resolve: Sequence[Placement] = ()) -> list[Result]:
        """Create one table per placement, the shards of a round spread by load; and undo the
        placements of `resolve` (taken over, or left unsure earlier)."""
        if not placements and not resolve:
            return []
        loads = await self.shards.loads() if placements else {}
        sent: Counter[str] = Counter()
        work = []
        for placement in placements:
            order = [sid for sid in ranked(loads, sent) if sid not in placement.refused]
            if order:
                sent[order[0]] += 1
            work.append(self._safely(placement, self._one(placement, order)))
        work += [self._safely(p, self.resolve(p)) for p in resolve]
        return list(await asyncio.gather(*work))

    @staticmethod
    async def _safely(placement: Placement, work: Coroutine[Any, Any, Result]) -> Result:
        """One placement's work; if it fails (its store unreachable, a bug), the placement
        stays as stored, and the others of the round go on. It is not retried from here
        (where it got to is known to the store only): its lease runs out and it is taken over
        as stored (`AgoraStore.stale`), by this process or another."""
        try:
            return await work
        except Exception as err:  # (StoreUnavailableError; anything else is as bad)
            log.warning("placement %s interrupted (%s): resolved once its lease runs out",
                        placement.placement_id, err, exc_info=not isinstance(
                            err, StoreUnavailableError))
            return Pending(placement, f"interrupted: {err}", retry=False)

    async def _one(self, placement: Placement, order: Sequence[str]) -> Result:
        why = "no shard accepted the table"
        for shard_id in order:
            placement = replace(placement, state="creating", shard_id=shard_id,
                                table_id=f"{shard_id}.{placement.placement_id}")
            if not await self.store.progress(placement, self.owner, self.clock()):
                return Pending(placement, "taken over by another replica", retry=False)
            answer = await self.shards.create(shard_id, placement.table_id, placement)
            if answer.kind == "unsure":
                log.warning("shard did not answer a table's creation for sure (%s): "
                            "cancelling it there before any other shard is asked", answer.why,
                            extra={"shard_id": shard_id, "table_id": placement.table_id})
                settled = await self._cancel(placement)
                if not isinstance(settled, Placement):
                    return settled
                placement = settled
                continue
            if answer.kind == "created":
                return await self._placed(placement)
            if answer.kind == "invalid":
                why = f"{shard_id} refused the table: {answer.why}"
                break
            log.warning("shard refused a table (%s), trying the next", answer.why,
                        extra={"shard_id": shard_id, "table_id": placement.table_id})
            placement = replace(placement, refused=(*placement.refused, shard_id))
        return await self._unplaced(placement, why)

    async def _cancel(self, placement: Placement) -> Result | Placement:
        """Cancel the placement on the shard it names: the placement, with that shard among
        those without a table of it, when it is gone there; else its result (placed there,
        or pending)."""
        placement = replace(placement, state="cancelling")
        if not await self.store.progress(placement, self.owner, self.clock()):
            return Pending(placement, "taken over by another replica", retry=False)
        answer = await self.shards.cancel(placement.shard_id, placement.table_id,
                                          placement.placement_id)
        if self.cancelled is not None:
            self.cancelled(answer.kind)
        if answer.kind == "gone":
            log.info("placement cancelled on its shard (%s)", answer.why,
                     extra={"shard_id": placement.shard_id, "table_id": placement.table_id})
            return replace(placement, state="new", refused=(*placement.refused,
                                                            placement.shard_id))
        if answer.kind == "kept":  # the table exists and is in use: it is the placement's
            return await self._placed(placement)
        return Pending(placement, f"its cancellation is unsure too ({answer.why})")

    async def resolve(self, placement: Placement) -> Result:
        """Undo a placement left unfinished: cancelled on the shard it names (if any), then
        given up; pending while that shard does not answer for sure."""
        if placement.state != "new":
            settled = await self._cancel(placement)
            if not isinstance(settled, Placement):
                return settled
            placement = settled
        return await self._unplaced(placement, "its placement was interrupted")

    async def _placed(self, placement: Placement) -> Done | Pending:
        seated = Seated(placement.table_id, placement.shard_id, placement.players)
        watches = await self.store.placed(placement, seated, self.owner)
        if watches is None:  # (frozen past its lease: the replica that took it over undoes it)
            return Pending(placement, "taken over by another replica", retry=False)
        return Done(placement, seated, watches)

    async def _unplaced(self, placement: Placement, why: str) -> Failed | Pending:
        unplaced = await self.store.unplaced(placement, self.owner, self.clock())
        if unplaced is None:
            return Pending(placement, "taken over by another replica", retry=False)
        return Failed(placement, unplaced, why)
