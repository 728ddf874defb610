"""The TableAuthorityService servicer: thin, over the Shard.

Placements (issue 13 item 3; docs/architecture.md, "Placement"): CreateTable is idempotent by
table id (the table is journaled under it) and, while this process runs, by placement id
(`placements`: a second CreateTable of a placement gets the first one's table whatever id it
names); CreateTables is a CreateTable for each of its tables, answered each in its place,
with one journal write for all. CancelTable cancels a table nobody has played at
(`Shard.cancel_table`) and remembers the id (`cancelled`, the last `MAX_REMEMBERED`): a
CreateTable of it that arrives later (one that was stalled on the way, behind the CancelTable
or not) is refused FAILED_PRECONDITION `table/cancelled`, so a table matchmaking gave up on
never comes into being after it was told it would not. (A stalled request does not outlive
this process: its connection ends with it.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import grpc

from machiavelox import classic_codec, rules
from machiavelox._gen.v1 import classic_pb2, table_pb2, table_pb2_grpc
from machiavelox.platform.errors import (
    ServiceError,
    failed_precondition,
    invalid_argument,
    service_error_of,
    shown,
    unavailable,
)
from machiavelox.platform.outbox import DEFAULT_WINDOW_S

from .gateway_link import GatewayLink
from .shard import Shard

log = logging.getLogger(__name__)

MAX_CHECKED_TABLES = 1_000  # the most table ids one CheckTables call may ask about
MAX_CREATED_TABLES = 256  # the most tables one CreateTables call may ask for
MAX_REMEMBERED = 100_000  # cancelled tables, and placements' tables, remembered (each ~100 B)

_KINDS = {table_pb2.MATCH_KIND_SINGLE: rules.MatchKind.SINGLE,
          table_pb2.MATCH_KIND_LONG: rules.MatchKind.LONG}


class TableAuthority(table_pb2_grpc.TableAuthorityServiceServicer):
    def __init__(self, shard: Shard, batch_window_s: float = DEFAULT_WINDOW_S) -> None:
        self.shard = shard
        self.batch_window_s = batch_window_s
        self.cancelled: OrderedDict[str, None] = OrderedDict()  # table ids
        self.placements: OrderedDict[str, str] = OrderedDict()  # placement id -> table id

    async def Connect(  # type: ignore[override]  # (the stubs know only the generator style)
            self, request_iterator: AsyncIterator[table_pb2.ConnectRequest], context: Any) -> None:
        """One gateway's stream. Its frames are handled in this task in arrival order; the
        answers of a frame go out from here at once when the stream is quiet (no hand-over to
        another task on an action's path), else the link's pump sends them paced."""
        handler = asyncio.current_task()

        def too_slow() -> None:  # the gateway does not read what it is sent: reset its stream
            log.warning("gateway reads too slowly: its stream is reset (it reconnects)",
                        extra={"peer": link.name})
            self.shard.drop_link(link)
            if handler is not None:
                handler.cancel()

        link = GatewayLink(context.peer(), context.write, self.batch_window_s, too_slow,
                           gated=self.shard.journal is not None)
        self.shard.links.add(link)
        log.info("gateway connected", extra={"peer": link.name})
        pump = asyncio.create_task(link.pump())
        try:
            journal = self.shard.journal
            async for frame in request_iterator:
                arrived_ns = time.time_ns()
                if journal is None:
                    link.hold()
                    later = self.shard.handle_frame(link, frame.items, arrived_ns)
                    try:
                        await link.flush()
                    finally:  # (even if the stream ends meanwhile: timers are re-armed)
                        self.shard.settle(later)
                    continue
                # journaled: the answers go once their write is stored (`GatewayLink`
                # sends them then); meanwhile the next frame is read, and its records join
                # the next write (group commit across frames, not one write per frame)
                later = self.shard.handle_frame(link, frame.items, arrived_ns)
                journal.write_now()
                self.shard.settle(later)
            link.close()
            await pump  # what is pending goes out, then the stream ends
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pump
            self.shard.drop_link(link)
            log.info("gateway disconnected", extra={"peer": link.name})

    async def CreateTable(self, request: table_pb2.CreateTableRequest,
                          context: Any) -> table_pb2.CreateTableResponse:
        table_id = self._create(request)
        await self.shard.durable()
        return self._created(table_id)

    async def CreateTables(self, request: table_pb2.CreateTablesRequest,
                           context: Any) -> table_pb2.CreateTablesResponse:
        """Each table as its CreateTable, all of them stored by one journal write; a
        refusal is the item's answer, the others go on."""
        if len(request.tables) > MAX_CREATED_TABLES:
            raise invalid_argument("request/too-many", f"at most {MAX_CREATED_TABLES} tables "
                                                       "a call")
        made: list[str | ServiceError] = []
        for item in request.tables:  # (no item's failure may fail the call: the others stand)
            try:
                made.append(self._create(item))
            except Exception as exc:
                refusal = service_error_of(exc)
                if refusal is None:  # a bug: no reason, so matchmaking is unsure of it
                    log.exception("creating a table of a CreateTables failed")
                    refusal = ServiceError(grpc.StatusCode.INTERNAL, "", "the creation failed")
                made.append(refusal)
        await self.shard.durable()
        return table_pb2.CreateTablesResponse(outcomes=[self._outcome(one) for one in made])

    def _outcome(self, made: str | ServiceError) -> table_pb2.CreateTableOutcome:
        """A CreateTables item's answer, once the journal is written: its table (`_created`),
        or its refusal."""
        if isinstance(made, str):
            try:
                return table_pb2.CreateTableOutcome(created=self._created(made))
            except ServiceError as err:
                made = err
        return table_pb2.CreateTableOutcome(refused=table_pb2.CreateTableRefusal(
            code=made.status.value[0], reason=made.reason, message=made.message))

    def _create(self, request: table_pb2.CreateTableRequest) -> str:
        """The table asked for, created in memory (its journal record not yet stored): its
        id."""
        variants = None
        if request.ruleset == classic_pb2.RULESET_CLASSIC:  # (its session is in its variants)
            variants = classic_codec.variants_from_pb(request.classic)
            kind = rules.MatchKind.SINGLE
        elif request.ruleset in (classic_pb2.RULESET_UNSPECIFIED,
                                 classic_pb2.RULESET_MACHIAVELOX):
            if request.HasField("classic"):
                raise invalid_argument("table/bad-ruleset",
                                       "classic variants are for a classic table")
            found = _KINDS.get(request.kind)
            if found is None:
                raise invalid_argument("table/bad-kind", "kind must be single or long")
            kind = found
        else:
            raise invalid_argument("table/bad-ruleset", f"unknown ruleset {request.ruleset}")
        if not request.table_id:
            raise invalid_argument("table/no-id", "a table needs an id")
        table_id = self.placements.get(request.placement_id, request.table_id) \
            if request.placement_id else request.table_id
        self._not_cancelled(table_id)
        players = list(request.player_ids)
        if variants is not None:
            self.shard.create_classic(table_id, players, variants, request.competitive)
        else:
            self.shard.create_table(table_id, players, kind, request.competitive)
        if request.placement_id:
            _remember(self.placements, request.placement_id, table_id)
        return table_id

    def _created(self, table_id: str) -> table_pb2.CreateTableResponse:
        """The answer for a table `_create` made, once the journal is written."""
        self._not_cancelled(table_id)  # (cancelled while its creation was being stored)
        if table_id not in self.shard.tables:  # its journal write failed
            raise unavailable("table/journal", "the table's journal cannot be written now")
        return table_pb2.CreateTableResponse(table_id=table_id, shard_id=self.shard.shard_id)

    def _not_cancelled(self, table_id: str) -> None:
        if table_id in self.cancelled:
            raise failed_precondition("table/cancelled",
                                      f"table {shown(table_id)} was cancelled")

    async def CancelTable(self, request: table_pb2.CancelTableRequest,
                          context: Any) -> table_pb2.CancelTableResponse:
        if not request.table_id:
            raise invalid_argument("table/no-id", "which table?")
        ids = [request.table_id]
        other = self.placements.get(request.placement_id) if request.placement_id else None
        if other is not None and other != request.table_id:
            ids.append(other)
        for table_id in ids:  # refused from now on, whatever the cancellation's fate
            _remember(self.cancelled, table_id, None)
        existed = False
        for table_id in ids:
            try:
                existed = await self.shard.cancel_table(table_id) or existed
            except ServiceError as err:
                if err.status == grpc.StatusCode.FAILED_PRECONDITION:  # played at: it stays
                    self.cancelled.pop(table_id, None)
                raise
        if not existed:
            log.info("placement cancelled before its table was created here",
                     extra={"table_id": request.table_id, "shard_id": self.shard.shard_id})
        return table_pb2.CancelTableResponse(existed=existed, shard_id=self.shard.shard_id)

    async def GetLoad(self, request: table_pb2.GetLoadRequest,
                      context: Any) -> table_pb2.GetLoadResponse:
        s = self.shard
        return table_pb2.GetLoadResponse(shard_id=s.shard_id, tables=s.tables_in_play,
                                         players=s.players, draining=s.draining,
                                         capacity=s.capacity)

    async def CheckTables(self, request: table_pb2.CheckTablesRequest,
                          context: Any) -> table_pb2.CheckTablesResponse:
        """The asked tables this shard does not have. Authoritative: a shard binds its port
        only once its recovery is done (main.py), so a table it does not know now is lost."""
        if len(request.table_ids) > MAX_CHECKED_TABLES:
            raise invalid_argument("table/too-many", f"at most {MAX_CHECKED_TABLES} table ids "
                                   f"per call, not {len(request.table_ids)}")
        return table_pb2.CheckTablesResponse(
            shard_id=self.shard.shard_id,
            missing_table_ids=[t for t in request.table_ids if not self.shard.knows(t)])

    async def SetDraining(self, request: table_pb2.SetDrainingRequest,
                          context: Any) -> table_pb2.SetDrainingResponse:
        self.shard.draining = request.draining
        log.info("draining set to %s", request.draining, extra={"shard_id": self.shard.shard_id})
        return table_pb2.SetDrainingResponse(draining=self.shard.draining)


def _remember(memory: OrderedDict[str, Any], key: str, value: Any) -> None:
    memory[key] = value
    memory.move_to_end(key)
    while len(memory) > MAX_REMEMBERED:
        memory.popitem(last=False)
