"""Where a new table goes: the least-loaded shard that accepts it.

Every placement round asks every configured shard for its load (GetLoad, in parallel, with a
short deadline) and skips shards that do not answer or are draining. Shards are ranked by the
share of their capacity in use, then by tables in play, then by id; a round placing several
tables counts the ones it has already sent to a shard, so a burst of matches spreads out instead
of piling on the shard that was emptiest at the start of the round.

The table id is `<shard_id>.<random suffix>`: the gateway routes a table to its shard by the part
before the first dot. If the chosen shard refuses (full, draining since its GetLoad, or gone),
the table is offered to the next shard in rank, with that shard's prefix. CreateTable is
idempotent by id, so nothing is duplicated on one shard; a CreateTable that timed out but did
succeed leaves an orphan table on that shard, which ends by abandonment (M11) when nobody joins.

No table is ever placed on a shard that is not SERVING: a shard binds its port only once its
recovery is done (table/main.py: every table back from its journal first), so a shard still
recovering, or down, does not answer GetLoad and is skipped; one that stops is draining first
(GetLoad says so) and then answers nothing. A shard whose journal cannot be written refuses
CreateTable with UNAVAILABLE `table/journal`, and the next shard is tried (`_TRY_NEXT`).

The same channels ask a shard which seated tables it does not have (`missing`: CheckTables,
for `seatcheck.py`), at most `CHECK_BATCH` ids a call.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import grpc

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.platform.tls import Connect

log = logging.getLogger(__name__)

# Refusals after which the next shard is tried; anything else is a bad request.
_TRY_NEXT = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE,
             grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED)


# The most table ids one CheckTables call may carry (table.proto; the shard refuses more).
CHECK_BATCH = 1_000


def random_suffix() -> str:
    return secrets.token_hex(6)


@dataclass(frozen=True)
class TableRequest:
    players: tuple[str, ...]  # seat order
    kind: table_pb2.MatchKind.ValueType
    competitive: bool


@dataclass(frozen=True)
class Placed:
    table_id: str
    shard_id: str


class NoShardError(Exception):
    """No shard accepted the table."""


class Placement:
    def __init__(self, shards: Mapping[str, str], connect: Connect,
                 new_suffix: Callable[[], str] = random_suffix, timeout_s: float = 2.0) -> None:
        """`connect`: opens the channel to a shard, as matchmaking, with the client
        interceptors (tracing): `InternalTls.connector`."""
        self._channels = {sid: connect(address) for sid, address in shards.items()}
        self._stubs = {sid: table_pb2_grpc.TableAuthorityServiceStub(channel)
                       for sid, channel in self._channels.items()}
        self.new_suffix = new_suffix
        self.timeout_s = timeout_s

    async def _load(self, shard_id: str) -> table_pb2.GetLoadResponse | None:
        try:
            load: table_pb2.GetLoadResponse = await self._stubs[shard_id].GetLoad(
                table_pb2.GetLoadRequest(), timeout=self.timeout_s)
        except grpc.aio.AioRpcError as err:
            log.warning("shard unreachable for placement: %s", err.code().name,
                        extra={"shard_id": shard_id})
            return None
        if load.shard_id and load.shard_id != shard_id:
            log.warning("shard configured as %s calls itself %s", shard_id, load.shard_id,
                        extra={"shard_id": shard_id})
        return load

    async def loads(self) -> dict[str, table_pb2.GetLoadResponse]:
        """The load of every shard that answers."""
        ids = list(self._stubs)
        answers = await asyncio.gather(*(self._load(sid) for sid in ids))
        return {sid: load for sid, load in zip(ids, answers, strict=True) if load is not None}

    async def missing(self, shard_id: str, table_ids: Sequence[str]) -> list[str] | None:
        """Those of `table_ids` (placed on `shard_id`) that the shard does not have, asked at
        most `CHECK_BATCH` at a time; None if it does not answer them all (down, recovering,
        or another shard at its address; or a shard not configured): nothing is known then."""
        stub = self._stubs.get(shard_id)
        if stub is None:
            return None
        out: list[str] = []
        for start in range(0, len(table_ids), CHECK_BATCH):
            try:
                answer: table_pb2.CheckTablesResponse = await stub.CheckTables(
                    table_pb2.CheckTablesRequest(
                        table_ids=list(table_ids[start:start + CHECK_BATCH])),
                    timeout=self.timeout_s)
            except grpc.aio.AioRpcError as err:
                log.info("shard did not answer which tables it has: %s", err.code().name,
                         extra={"shard_id": shard_id})
                return None
            if answer.shard_id != shard_id:
                log.warning("shard configured as %s calls itself %s: its tables are not "
                            "checked", shard_id, answer.shard_id, extra={"shard_id": shard_id})
                return None
            out += answer.missing_table_ids
        return out

    @staticmethod
    def ranked(loads: Mapping[str, table_pb2.GetLoadResponse],
               sent: Mapping[str, int]) -> list[str]:
        """Shards that accept tables, least loaded first (`sent`: tables placed this round)."""
        def key(sid: str) -> tuple[float, int, str]:
            tables = loads[sid].tables + sent.get(sid, 0)
            capacity = loads[sid].capacity
            return (tables / capacity if capacity else float(tables), tables, sid)

        open_ = [sid for sid, load in loads.items() if not load.draining
                 and (not load.capacity or load.tables + sent.get(sid, 0) < load.capacity)]
        return sorted(open_, key=key)

    async def _create(self, request: TableRequest, order: Sequence[str]) -> Placed:
        suffix = self.new_suffix()
        for shard_id in order:
            table_id = f"{shard_id}.{suffix}"
            try:
                await self._stubs[shard_id].CreateTable(table_pb2.CreateTableRequest(
                    table_id=table_id, player_ids=list(request.players), kind=request.kind,
                    competitive=request.competitive), timeout=self.timeout_s)
            except grpc.aio.AioRpcError as err:
                if err.code() not in _TRY_NEXT:
                    raise NoShardError(f"{shard_id} refused the table: {err.details()}") from None
                log.warning("shard refused a table (%s: %s), trying the next", err.code().name,
                            err.details(), extra={"shard_id": shard_id, "table_id": table_id})
                continue
            return Placed(table_id, shard_id)
        raise NoShardError("no shard accepted the table")

    async def place_many(self, requests: Sequence[TableRequest]) -> list[Placed | NoShardError]:
        """Create one table per request; a NoShardError in the place of each that failed."""
        if not requests:
            return []
        loads = await self.loads()
        sent: Counter[str] = Counter()
        orders = []
        for _ in requests:
            order = self.ranked(loads, sent)
            if order:
                sent[order[0]] += 1
            orders.append(order)
        results = await asyncio.gather(*(self._create(r, o) for r, o in zip(requests, orders,
                                                                              strict=True)),
                                       return_exceptions=True)
        out: list[Placed | NoShardError] = []
        for result in results:
            if isinstance(result, Placed | NoShardError):
                out.append(result)
            elif isinstance(result, BaseException):
                raise result
        return out

    async def place(self, request: TableRequest) -> Placed:
        (result,) = await self.place_many([request])
        if isinstance(result, NoShardError):
            raise result
        return result

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
