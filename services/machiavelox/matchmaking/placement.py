"""Matchmaking's gRPC client of the table shards (`placing.Shards`, and the seat check's
`seatcheck.Checker`): their loads, CreateTable(s), CancelTable, and which seated tables they
do not have.

Every round asks every configured shard for its load (GetLoad, in parallel, with a short
deadline) and leaves out shards that do not answer. No table is ever placed on a shard that is
not SERVING: a shard binds its port only once its recovery is done (table/main.py: every table
back from its journal first), so a shard still recovering, or down, does not answer GetLoad and
is skipped; one that stops is draining first (GetLoad says so) and then answers nothing.

What an answer means (`placing.Answer`), the heart of placing without twins (docs/
architecture.md, "Placement"):
- CreateTable answered: created.
- Refused by the shard itself (a status with a `machiavelox-reason`: full, draining, its
  journal down `table/journal`, a cancelled id `table/cancelled`): refused, no table there,
  another shard may be tried; a bad request (INVALID_ARGUMENT, PERMISSION_DENIED, ...):
  invalid.
- The call never left this process (UNAVAILABLE "failed to connect": the shard was not
  reachable at all): refused.
- Anything else (DEADLINE_EXCEEDED, a connection lost mid-call, CANCELLED, ...): unsure: the
  table may exist there, or come into being later (a request stalled on the way). The
  placement is then cancelled on that shard before any other is tried.
- CreateTables (the creations asked of one shard in the same moment, in one call): each
  table's outcome means what its CreateTable's would (created; refused with a status and
  reason); a call that fails as a whole is refused for each table only if it never left or
  was refused before any table was made (`auth/...`, `request/...`), else unsure for each; a
  shard that serves no CreateTables (UNIMPLEMENTED: nothing done) gets a CreateTable a
  table.
- CancelTable answered: gone (the table is cancelled, or never was there and never will be);
  refused `table/in-play` or `table/ended`: kept (the table exists and is the placement's);
  anything else: unsure (ask again later).

The same channels ask a shard which seated tables it does not have (`missing`: CheckTables,
for `seatcheck.py`), at most `CHECK_BATCH` ids a call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

import grpc

from machiavelox._gen.v1 import classic_pb2, table_pb2, table_pb2_grpc
from machiavelox.platform.coalesce import Coalesced
from machiavelox.platform.errors import REASON_KEY
from machiavelox.platform.tls import Connect
from machiavelox.rules import MatchKind

from .classic_rules import variants_pb
from .placing import Answer, Load
from .store import Placement

log = logging.getLogger(__name__)

# Refusals (with a reason of the shard's) after which another shard may be tried; any other
# refusal is a bad request.
_REFUSED = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.RESOURCE_EXHAUSTED)
_KEPT = ("table/in-play", "table/ended")  # CancelTable's refusals: the table stays
_CODES = {code.value[0]: code for code in grpc.StatusCode}
_BEFORE_ANY = ("auth/", "request/")  # a whole CreateTables refused before any table was made
MAX_CREATES = 256  # tables of one CreateTables call (table.proto: the shard's most)
CREATE_WINDOW_S = 0.002  # while creations come this often, they go together
SINGLY_S = 30.0  # a shard that serves no CreateTables is asked a call a table this long


def _reason(err: grpc.aio.AioRpcError) -> str:
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            return value.decode() if isinstance(value, bytes) else str(value)
    return ""


def _by_reason(code: grpc.StatusCode, why: str) -> Answer:
    """A creation the shard refused with a reason of its own: another shard may be tried
    (full, draining, its journal down, a cancelled id), or it is a bad request."""
    return Answer("refused" if code in _REFUSED else "invalid", why)


def _failed(err: grpc.aio.AioRpcError) -> Answer:
    """What a failed CreateTable call means for its table."""
    reason = _reason(err)
    why = f"{err.code().name} {reason or err.details()}"
    if reason:
        return _by_reason(err.code(), why)
    return Answer("refused" if never_sent(err) else "unsure", why)


def _batch_failed(err: grpc.aio.AioRpcError) -> Answer:
    """What a CreateTables call that failed as a whole means for each of its tables: as a
    CreateTable's failure when it never left, or was refused before any table was looked at
    (who may call, a request that does not decode or is too long); anything else may have
    come after some of them were created: unsure."""
    if never_sent(err) or _reason(err).startswith(_BEFORE_ANY):
        return _failed(err)
    return Answer("unsure", f"{err.code().name} {_reason(err) or err.details()}")


def _outcome(outcome: table_pb2.CreateTableOutcome) -> Answer:
    """A table's answer in a CreateTables reply: as its CreateTable call would mean it."""
    if outcome.HasField("created"):
        return Answer("created")
    refused = outcome.refused
    code = _CODES.get(refused.code, grpc.StatusCode.UNKNOWN)
    why = f"{code.name} {refused.reason}"
    if not refused.reason:  # (a refusal without a reason: nothing is sure)
        return Answer("unsure", why)
    return _by_reason(code, why)


def never_sent(err: grpc.aio.AioRpcError) -> bool:
    """The call failed before any byte of it left: the shard could not be reached at all."""
    return (err.code() == grpc.StatusCode.UNAVAILABLE
            and "failed to connect" in (err.details() or "").lower())


_KINDS = {MatchKind.SINGLE: table_pb2.MATCH_KIND_SINGLE,
          MatchKind.LONG: table_pb2.MATCH_KIND_LONG}

# The most table ids one CheckTables call may carry (table.proto; the shard refuses more).
CHECK_BATCH = 1_000


class ShardClient:
    def __init__(self, shards: Mapping[str, str], connect: Connect,
                 timeout_s: float = 2.0) -> None:
        """`connect`: opens the channel to a shard, as matchmaking, with the client
        interceptors (tracing): `InternalTls.connector`."""
        self._channels = {sid: connect(address) for sid, address in shards.items()}
        self._stubs = {sid: table_pb2_grpc.TableAuthorityServiceStub(channel)
                       for sid, channel in self._channels.items()}
        self.timeout_s = timeout_s
        self._creates = {sid: Coalesced(self._sender(sid), MAX_CREATES, CREATE_WINDOW_S,
                                        lambda: RuntimeError("the creation was cancelled"))
                         for sid in self._stubs}
        self._singly_until: dict[str, float] = {}  # shards without CreateTables, until then

    async def _load(self, shard_id: str) -> Load | None:
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
        return Load(load.tables, load.capacity, load.draining)

    async def loads(self) -> dict[str, Load]:
        """The load of every shard that answers."""
        ids = list(self._stubs)
        answers = await asyncio.gather(*(self._load(sid) for sid in ids))
        return {sid: load for sid, load in zip(ids, answers, strict=True) if load is not None}

    async def create(self, shard_id: str, table_id: str, placement: Placement) -> Answer:
        """The table of `placement` created on `shard_id` as `table_id`: the creations asked
        of one shard in the same moment go in one CreateTables call (`Coalesced`)."""
        creates = self._creates.get(shard_id)
        if creates is None:
            return Answer("refused", f"{shard_id} is not configured")
        request = table_pb2.CreateTableRequest(
            table_id=table_id, player_ids=list(placement.players),
            kind=_KINDS[placement.kind], competitive=placement.competitive,
            placement_id=placement.placement_id)
        if placement.rules.classic:  # a classic table: its ruleset and variants (issue 16)
            request.ruleset = classic_pb2.RULESET_CLASSIC
            request.classic.CopyFrom(variants_pb(placement.rules))
        return await creates(request)

    def _sender(self, shard_id: str) -> Callable[[list[table_pb2.CreateTableRequest]],
                                                 Awaitable[list[Answer]]]:
        stub = self._stubs[shard_id]

        async def one(request: table_pb2.CreateTableRequest) -> Answer:
            try:
                await stub.CreateTable(request, timeout=self.timeout_s)
            except grpc.aio.AioRpcError as err:
                return _failed(err)
            return Answer("created")

        async def together(requests: list[table_pb2.CreateTableRequest]
                           ) -> list[Answer] | None:
            """One CreateTables; None if the shard serves none (older than it: UNIMPLEMENTED,
            nothing was created), which is then asked a call a table for SINGLY_S."""
            try:
                reply: table_pb2.CreateTablesResponse = await stub.CreateTables(
                    table_pb2.CreateTablesRequest(tables=requests), timeout=self.timeout_s)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNIMPLEMENTED:
                    return [_batch_failed(err)] * len(requests)
                log.info("shard serves no CreateTables: a call a table for %.0f s",
                         SINGLY_S, extra={"shard_id": shard_id})
                self._singly_until[shard_id] = asyncio.get_running_loop().time() + SINGLY_S
                return None
            if len(reply.outcomes) != len(requests):  # (a bad answer: nothing is sure)
                return [Answer("unsure", f"{len(reply.outcomes)} answers to "
                                         f"{len(requests)} tables")] * len(requests)
            return [_outcome(o) for o in reply.outcomes]

        async def send(requests: list[table_pb2.CreateTableRequest]) -> list[Answer]:
            if len(requests) > 1 and \
                    asyncio.get_running_loop().time() >= self._singly_until.get(shard_id, 0.0):
                answers = await together(requests)
                if answers is not None:
                    return answers
            return list(await asyncio.gather(*(one(r) for r in requests)))
        return send

    async def cancel(self, shard_id: str, table_id: str, placement_id: str) -> Answer:
        stub = self._stubs.get(shard_id)
        if stub is None:  # (no longer configured: it can hold no table we could reach)
            return Answer("gone", f"{shard_id} is not configured")
        try:
            reply: table_pb2.CancelTableResponse = await stub.CancelTable(
                table_pb2.CancelTableRequest(table_id=table_id, placement_id=placement_id),
                timeout=self.timeout_s)
        except grpc.aio.AioRpcError as err:
            reason = _reason(err)
            if reason in _KEPT:
                return Answer("kept", reason)
            return Answer("unsure", f"{err.code().name} {reason or err.details()}")
        return Answer("gone", "cancelled" if reply.existed else "never created")

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

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
