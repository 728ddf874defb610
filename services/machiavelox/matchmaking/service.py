"""The agorà's use cases (`Agora`), the results follower, and the thin gRPC servicer.

Competitive (M13.1): a player queues with Enqueue and the stream reports Waiting at once, then
about every second (seconds waited, the skill window searched now), then the Assignment. A
background task matches the queue every tick (`queue.MatchQueue.match`) and creates each table
on the least-loaded shard (`placement`). Competitive tables are always single matches.

Friendly (M13.1, M13.2): CreateFriendlyTable returns a 10-character invite code (`codes.py`);
everyone who wants to sit, the creator included, opens JoinFriendlyTable with it. The first
three joiners sit, in join order; the table (single or long, competitive=false) is created at
the next tick and each of them gets the Assignment. A joiner whose stream ends before that
gives up the seat; a player's newer join stream replaces an older one (`ticket/replaced`). A
player has one open lobby at a time, and a lobby with no table after its time to live
(MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S) is gone: its waiters end with NOT_FOUND
`friendly/expired`, its code is unknown from then on.

Abuse (docs/security.md, "The agorà"): every call is rate limited per player (`limits.py`,
RESOURCE_EXHAUSTED `rate/limited`), join attempts with unknown codes much more, and logs name a
code only by its reference (`codes.code_ref`).

Seats are freed by scoring: `ResultsFollower` subscribes to SubscribeResults from offset 0 at
start-up (which also rebuilds every rating from the whole log), frees the players of every
result with match_ended=true and rates competitive results. Without MACHIAVELOX_SCORING_ADDRESS
nobody is ever rated and seated players stay seated (`ticket/seated`) until matchmaking restarts,
which is acceptable only for tests and demos. A table its shard lost (its journal lost, or not
replayable) never reports: `seatcheck.SeatCheck` asks the shards about the seated tables and
ends each lost one without points: its players are free, nobody is rated, scoring has no record
of it (there is nothing to store). State is in memory: one matchmaking replica.

Observability (`metrics.py`): the wait from a ticket's start to its assignment, tickets ended
by outcome, tickets waiting, placement failures; every round of table creation is a
`matchmaking.place` span linked to the Enqueue/JoinFriendlyTable spans of the tickets it
seats, with the shards' CreateTable calls as its children.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import random
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import grpc
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext

from machiavelox import rules
from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
)
from machiavelox.gateway.auth import TokenVerifier, authenticate
from machiavelox.platform.errors import (
    failed_precondition,
    invalid_argument,
    not_found,
    permission_denied,
    resource_exhausted,
    unavailable,
)
from machiavelox.platform.periodic import every
from machiavelox.platform.telemetry import Attr, SpanName, Telemetry
from machiavelox.platform.tls import Connect

from .codes import code_ref, new_code, normalize
from .limits import DEFAULT_RATES, AgoraLimits, AgoraRates, Call, Limited
from .metrics import COMPETITIVE, FRIENDLY, MatchmakingMetrics
from .placement import NoShardError, Placed, TableRequest
from .queue import (
    LOBBY_TTL_MS,
    FriendlyLobbies,
    Lobby,
    MatchQueue,
    Refused,
    Roster,
    Ticket,
    UnknownCode,
    WaitError,
)
from .ratings import Ratings

log = logging.getLogger(__name__)

SERVICE_NAME = "machiavelox.v1.MatchmakingService"

_KIND_FROM_PB = {table_pb2.MATCH_KIND_SINGLE: rules.MatchKind.SINGLE,
                 table_pb2.MATCH_KIND_LONG: rules.MatchKind.LONG}
_KIND_TO_PB = {kind: pb for pb, kind in _KIND_FROM_PB.items()}


def new_ticket_id() -> str:
    return secrets.token_urlsafe(12)


class Placer(Protocol):
    async def place_many(self, requests: Sequence[TableRequest]) -> list[Placed | NoShardError]:
        ...


# ---------------------------------------------------------------------------------- updates
@dataclass(frozen=True)
class Waiting:
    ticket_id: str
    waited_s: int
    window: float


@dataclass(frozen=True)
class Assigned:
    ticket_id: str
    table_id: str
    shard_id: str
    players: tuple[str, ...]


Update = Waiting | Assigned


class End(enum.Enum):
    CANCELLED = "cancelled"  # the ticket was cancelled: the stream ends normally
    STOPPING = "stopping"  # matchmaking is shutting down: the stream ends with UNAVAILABLE
    EXPIRED = "expired"  # the lobby outlived its TTL: NOT_FOUND friendly/expired
    REPLACED = "replaced"  # a newer join stream of the player: FAILED_PRECONDITION


@dataclass(eq=False)
class Watch:
    """One open Enqueue or JoinFriendlyTable stream."""

    ticket_id: str
    player: str
    kind: Literal["queue", "lobby"]
    ref: str  # the ticket id, or the invite code
    started_ms: int
    outcome: asyncio.Future[Placed | End] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    span: SpanContext | None = None  # the stream's server span, for the placement's links

    def finish(self, outcome: Placed | End) -> None:
        if not self.outcome.done():
            self.outcome.set_result(outcome)


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """The queue's refusals as service errors (status code and reason)."""
    try:
        yield
    except UnknownCode as err:
        raise not_found(err.reason, err.message) from None
    except Refused as err:
        raise failed_precondition(err.reason, err.message) from None
    except Limited as err:
        raise resource_exhausted(err.reason, err.message) from None
    except WaitError as err:  # pragma: no cover - every WaitError is one of the above
        raise failed_precondition(err.reason, err.message) from None


# ---------------------------------------------------------------------------------- use cases
class Agora:
    def __init__(self, ratings: Ratings, placer: Placer, clock: Callable[[], int],
                 window: float, widen_per_s: float, update_s: float = 1.0,
                 new_id: Callable[[], str] = new_ticket_id,
                 make_code: Callable[[], str] = new_code,
                 shuffle: Callable[[list[str]], None] | None = None,
                 metrics: MatchmakingMetrics | None = None,
                 telemetry: Telemetry | None = None,
                 rates: AgoraRates = DEFAULT_RATES,
                 lobby_ttl_s: float = LOBBY_TTL_MS / 1000) -> None:
        self.ratings = ratings
        self.metrics = metrics
        self.telemetry = telemetry
        self.placer = placer
        self.clock = clock
        self.update_s = update_s
        self.new_id = new_id
        self.shuffle = shuffle if shuffle is not None else random.SystemRandom().shuffle
        self.roster = Roster()
        self.queue = MatchQueue(self.roster, window, widen_per_s)
        self.lobbies = FriendlyLobbies(self.roster, make_code, round(lobby_ttl_s * 1000))
        self.limits = AgoraLimits(rates)
        self._watches: dict[str, Watch] = {}
        self._lobby_watches: dict[str, set[Watch]] = {}
        self._stopping = False

    # ------------------------------------------------------------------ streams
    def _open(self, player: str, kind: Literal["queue", "lobby"], ref: str, ticket_id: str,
              started_ms: int) -> Watch:
        span = trace.get_current_span().get_span_context()
        watch = Watch(ticket_id, player, kind, ref, started_ms,
                      span=span if span.is_valid else None)
        self._watches[ticket_id] = watch
        if kind == "lobby":
            self._lobby_watches.setdefault(ref, set()).add(watch)
        return watch

    def _check_open(self) -> None:
        if self._stopping:
            raise unavailable("matchmaking/stopping", "matchmaking is shutting down")

    def _admit(self, call: Call, player: str) -> None:
        """The player's pace for this call: RESOURCE_EXHAUSTED `rate/limited` over it."""
        with refusals():
            try:
                self.limits.admit(call, player, self.clock())
            except Limited:
                if self.metrics is not None:
                    self.metrics.rate_limited(call)
                raise

    def _close(self, watch: Watch) -> None:
        self._watches.pop(watch.ticket_id, None)
        if watch.kind == "lobby":
            watches = self._lobby_watches.get(watch.ref)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._lobby_watches[watch.ref]

    async def _follow(self, watch: Watch, window: Callable[[], float]
                      ) -> AsyncGenerator[Update, None]:
        ended = "left"  # the stream closed before an outcome
        try:
            while True:
                waited_s = max(0, self.clock() - watch.started_ms) // 1000
                yield Waiting(watch.ticket_id, waited_s, window())
                done, _ = await asyncio.wait({watch.outcome}, timeout=self.update_s)
                if done:
                    break
            outcome = watch.outcome.result()
            if outcome is End.STOPPING:
                ended = "stopped"
                raise unavailable("matchmaking/stopping",
                                  "matchmaking is shutting down; queue again")
            if outcome is End.EXPIRED:
                ended = "expired"
                raise not_found("friendly/expired", "the friendly table was not filled in time; "
                                                    "create a new one")
            if outcome is End.REPLACED:
                ended = "replaced"
                raise failed_precondition("ticket/replaced",
                                          "a newer JoinFriendlyTable stream took over")
            if isinstance(outcome, Placed):
                ended = "assigned"
                self._ticket_ended(watch, ended)
                players = self.roster.players_at(outcome.table_id)
                yield Assigned(watch.ticket_id, outcome.table_id, outcome.shard_id, players)
            else:
                ended = "cancelled"
        finally:
            if ended != "assigned":
                self._ticket_ended(watch, ended)

    def _ticket_ended(self, watch: Watch, outcome: str) -> None:
        if self.metrics is not None:
            queue = COMPETITIVE if watch.kind == "queue" else FRIENDLY
            self.metrics.ticket_ended(queue, outcome,
                                      max(0, self.clock() - watch.started_ms) / 1000)

    # ------------------------------------------------------------------ competitive
    async def enqueue(self, player: str) -> AsyncGenerator[Update, None]:
        self._check_open()
        self._admit("enqueue", player)
        now = self.clock()
        ticket = Ticket(self.new_id(), player, self.ratings.ordinal(player), now)
        with refusals():
            self.queue.add(ticket)
        watch = self._open(player, "queue", ticket.ticket_id, ticket.ticket_id, now)
        log.info("queued (ordinal %.2f)", ticket.ordinal,
                 extra={"player": player, "ticket_id": ticket.ticket_id})
        try:
            async for update in self._follow(watch, lambda: self.queue.window(ticket,
                                                                              self.clock())):
                yield update
        finally:
            self._close(watch)
            if self.queue.remove(ticket.ticket_id) is not None:
                log.info("left the queue", extra={"player": player,
                                                   "ticket_id": ticket.ticket_id})

    def cancel(self, player: str, ticket_id: str) -> bool:
        """Cancel a waiting ticket (queue or friendly seat); False if it is not waiting."""
        self._admit("cancel", player)
        watch = self._watches.get(ticket_id)
        if watch is None:
            return False
        if watch.player != player:
            raise permission_denied("ticket/not-yours", "that ticket is another player's")
        if watch.kind == "queue":
            if self.queue.remove(ticket_id) is None:
                return False  # already matched: the assignment is on its way
            watch.finish(End.CANCELLED)
        else:
            if not self.lobbies.leave(watch.ref, player):
                return False
            for other in list(self._lobby_watches.get(watch.ref, ())):
                if other.player == player:
                    other.finish(End.CANCELLED)
        log.info("ticket cancelled", extra={"player": player, "ticket_id": ticket_id})
        return True

    # ------------------------------------------------------------------ friendly
    def create_friendly(self, player: str, kind: rules.MatchKind) -> str:
        """A new lobby's code, or the code of the player's open lobby of this kind."""
        self._admit("create_friendly", player)
        before = self.lobbies.open_lobby(player)
        with refusals():
            lobby = self.lobbies.create(player, kind, self.clock())
        if lobby is not before:
            log.info("friendly %s table created", kind.value,
                     extra={"player": player, "code": code_ref(lobby.code)})
        return lobby.code

    def _lobby(self, player: str, typed: str) -> Lobby:
        """Take a seat by code (typed as the player typed it: what is not a code at all opens
        no lobby either); a code that opens no lobby costs a failed attempt."""
        with refusals():
            try:
                return self.lobbies.join(normalize(typed) or "", player)
            except UnknownCode:
                self.limits.join_failed(player, self.clock())
                if self.metrics is not None:
                    self.metrics.unknown_code()
                raise

    async def join_friendly(self, player: str, typed: str) -> AsyncGenerator[Update, None]:
        self._check_open()
        self._admit("join_friendly", player)
        lobby = self._lobby(player, typed)
        code = lobby.code
        for older in list(self._lobby_watches.get(code, ())):
            if older.player == player:  # one stream per seat: the newest is the app's
                older.finish(End.REPLACED)
        watch = self._open(player, "lobby", code, self.new_id(), self.clock())
        log.info("joined friendly table (%d/3)", len(lobby.players),
                 extra={"player": player, "code": code_ref(code), "ticket_id": watch.ticket_id})
        if lobby.table_id:  # a member coming back after the table was created
            watch.finish(Placed(lobby.table_id, lobby.table_id.partition(".")[0]))
        try:
            async for update in self._follow(watch, lambda: 0.0):
                yield update
        finally:
            self._close(watch)
            still_watching = any(w.player == player
                                 for w in self._lobby_watches.get(code, ()))
            if not still_watching and self.lobbies.leave(code, player):
                log.info("left friendly table", extra={"player": player,
                                                       "code": code_ref(code)})

    # ------------------------------------------------------------------ matching
    async def match_once(self) -> None:
        """Forget expired lobbies, match the queue, create the tables of the matched groups and
        full lobbies."""
        for lobby in self.lobbies.expire(self.clock()):
            self._lobby_expired(lobby)
        groups = self.queue.match(self.clock())
        lobbies = self.lobbies.ready()
        requests = []
        for group in groups:
            seats = [t.player for t in group]
            self.shuffle(seats)
            requests.append(TableRequest(tuple(seats), table_pb2.MATCH_KIND_SINGLE, True))
        requests += [TableRequest(tuple(lobby.players), _KIND_TO_PB[lobby.kind], False)
                     for lobby in lobbies]
        if not requests:
            return
        try:
            if self.telemetry is None:
                results = await self.placer.place_many(requests)
            else:
                links = self._links(groups, lobbies)
                with self.telemetry.span(SpanName.MATCHMAKING_PLACE, context=Context(),
                                         attributes={"machiavelox.tables": len(requests)},
                                         links=links):
                    results = await self.placer.place_many(requests)
        except Exception as err:  # a bug or a broken channel: keep everyone waiting
            log.exception("placement failed")
            results = [NoShardError(str(err)) for _ in requests]
        for group, request, result in zip(groups, requests[:len(groups)],
                                          results[:len(groups)], strict=True):
            self._competitive_placed(group, request, result)
        for lobby, request, result in zip(lobbies, requests[len(groups):],
                                          results[len(groups):], strict=True):
            self._friendly_placed(lobby, request, result)

    def _links(self, groups: Sequence[tuple[Ticket, ...]], lobbies: Sequence[Lobby]
               ) -> list[Link]:
        """Links from a placement to the streams of the tickets it seats."""
        watches = [self._watches.get(t.ticket_id) for group in groups for t in group]
        for lobby in lobbies:
            watches += self._lobby_watches.get(lobby.code, ())
        return [Link(w.span, {Attr.PLAYER: w.player, Attr.TICKET: w.ticket_id})
                for w in watches if w is not None and w.span is not None]

    def _competitive_placed(self, group: tuple[Ticket, ...], request: TableRequest,
                            result: Placed | NoShardError) -> None:
        if isinstance(result, NoShardError):
            if self.metrics is not None:
                self.metrics.placement_failed(COMPETITIVE)
            alive = tuple(t for t in group if t.ticket_id in self._watches)
            for ticket in group:
                self.roster.free(ticket.player)
            self.queue.requeue(alive)
            log.warning("no shard for a competitive table (%s); %d players requeued", result,
                        len(alive))
            return
        self.roster.seat(request.players, result.table_id)
        log.info("competitive table created", extra={"table_id": result.table_id,
                                                     "shard_id": result.shard_id})
        for ticket in group:
            watch = self._watches.get(ticket.ticket_id)
            if watch is not None:
                watch.finish(result)

    def _friendly_placed(self, lobby: Lobby, request: TableRequest,
                         result: Placed | NoShardError) -> None:
        if isinstance(result, NoShardError):
            if self.metrics is not None:
                self.metrics.placement_failed(FRIENDLY)
            self.lobbies.not_placed(lobby.code)
            log.warning("no shard for a friendly table (%s); retrying", result,
                        extra={"code": code_ref(lobby.code)})
            return
        self.lobbies.placed(lobby.code, result.table_id)
        log.info("friendly table created", extra={"table_id": result.table_id,
                                                  "shard_id": result.shard_id,
                                                  "code": code_ref(lobby.code)})
        for watch in self._lobby_watches.get(lobby.code, ()):
            watch.finish(result)

    def _lobby_expired(self, lobby: Lobby) -> None:
        if self.metrics is not None:
            self.metrics.lobby_expired()
        log.info("friendly table expired with %d/3 players", len(lobby.players),
                 extra={"player": lobby.creator, "code": code_ref(lobby.code)})
        for watch in list(self._lobby_watches.get(lobby.code, ())):
            watch.finish(End.EXPIRED)

    async def run(self, tick_s: float) -> None:
        """Match the queue every tick, until cancelled."""
        await every(tick_s, self.match_once, "matching")

    # ------------------------------------------------------------------ results
    def apply_result(self, result: scoring_pb2.ReportResultRequest) -> None:
        """One stored smazzata result: rate competitive ones, free the players of ended
        matches."""
        extra = {"table_id": result.table_id}
        if result.competitive:
            try:
                self.ratings.record(list(result.player_ids), list(result.result.scores))
            except ValueError as err:
                log.warning("result not rated: %s", err, extra=extra)
        if result.match_ended:
            freed = self.end_table(result.table_id)
            if freed:
                log.info("match ended; %d players free", len(freed), extra=extra)

    def end_table(self, table_id: str) -> tuple[str, ...]:
        """The table's match is over for the agorà: its players are free, its friendly lobby
        (if any) forgotten; the players freed (none: it was over already)."""
        self.lobbies.release(table_id)
        return self.roster.release(table_id)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """End every open stream with UNAVAILABLE (clients queue again elsewhere)."""
        self._stopping = True
        for watch in list(self._watches.values()):
            watch.finish(End.STOPPING)


class ResultsFollower:
    """Follows scoring's results log from offset 0, resuming after the last record applied."""

    def __init__(self, address: str, apply: Callable[[scoring_pb2.ReportResultRequest], None],
                 connect: Connect, retry_s: float = 1.0) -> None:
        """`connect`: opens the channel to scoring, as matchmaking, with the client
        interceptors (tracing): `InternalTls.connector`."""
        self.address = address
        self.apply = apply
        self.connect = connect
        self.retry_s = retry_s
        self.next_offset = 0

    async def run(self) -> None:
        async with self.connect(self.address) as channel:
            stub = scoring_pb2_grpc.ScoringServiceStub(channel)
            while True:
                try:
                    call = stub.SubscribeResults(
                        scoring_pb2.SubscribeResultsRequest(from_offset=self.next_offset))
                    async for response in call:
                        record = response.record
                        if record.offset < self.next_offset:
                            continue  # at-least-once: already applied
                        self.apply(record.result)
                        self.next_offset = record.offset + 1
                    log.warning("results stream ended; resubscribing",
                                extra={"offset": self.next_offset})
                except grpc.aio.AioRpcError as err:
                    log.warning("results stream lost (%s); resubscribing", err.code().name,
                                extra={"offset": self.next_offset})
                await asyncio.sleep(self.retry_s)


# ---------------------------------------------------------------------------------- servicer
def _update_pb(update: Update) -> matchmaking_pb2.TicketUpdate:
    if isinstance(update, Waiting):
        return matchmaking_pb2.TicketUpdate(
            ticket_id=update.ticket_id,
            waiting=matchmaking_pb2.Waiting(waited_s=update.waited_s, window=update.window))
    return matchmaking_pb2.TicketUpdate(
        ticket_id=update.ticket_id,
        assignment=matchmaking_pb2.Assignment(table_id=update.table_id,
                                              shard_id=update.shard_id,
                                              player_ids=list(update.players)))


class MatchmakingService(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, agora: Agora, verifier: TokenVerifier) -> None:
        self.agora = agora
        self.verifier = verifier

    def _player(self, context: Any) -> str:
        return authenticate(self.verifier, context.invocation_metadata())

    async def Enqueue(self, request: matchmaking_pb2.EnqueueRequest,
                      context: Any) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        player = self._player(context)
        async for update in self.agora.enqueue(player):
            yield matchmaking_pb2.EnqueueResponse(update=_update_pb(update))

    async def CancelTicket(self, request: matchmaking_pb2.CancelTicketRequest,
                           context: Any) -> matchmaking_pb2.CancelTicketResponse:
        player = self._player(context)
        return matchmaking_pb2.CancelTicketResponse(
            cancelled=self.agora.cancel(player, request.ticket_id))

    async def CreateFriendlyTable(self, request: matchmaking_pb2.CreateFriendlyTableRequest,
                                  context: Any) -> matchmaking_pb2.CreateFriendlyTableResponse:
        player = self._player(context)
        kind = _KIND_FROM_PB.get(request.kind)
        if kind is None:
            raise invalid_argument("table/bad-kind", "kind must be single or long")
        return matchmaking_pb2.CreateFriendlyTableResponse(
            invite_code=self.agora.create_friendly(player, kind))

    async def JoinFriendlyTable(self, request: matchmaking_pb2.JoinFriendlyTableRequest,
                                context: Any) -> AsyncIterator[
                                    matchmaking_pb2.JoinFriendlyTableResponse]:
        player = self._player(context)
        async for update in self.agora.join_friendly(player, request.invite_code):
            yield matchmaking_pb2.JoinFriendlyTableResponse(update=_update_pb(update))

