"""The agorà's use cases (`Agora`): the queue, friendly tables, matching, results. No protobuf
and no gRPC here: the servicer (`service.py`) decodes and encodes, the results follower
(`results.py`) reads scoring's log, the shards are behind `placing.Shards`; the state is behind
`store.AgoraStore` (this process's memory, or Redis shared by every replica).

Competitive (M13.1): a player queues with Enqueue and the stream reports Waiting at once, then
about every second (seconds waited, the skill window searched now), then the Assignment. The
matching task finds groups every tick (`queue.find_groups`), the store takes each out of the
queue as a placement (atomically: a ticket another replica matched meanwhile makes the group
void), and `placing.Placer` creates its table on the least-loaded shard. Competitive tables are
always single matches. An Enqueue that names a ticket re-attaches to it (its stream broke): on
any replica when the store is shared. Ranked classic (issue 16): `enqueue(classic=True)` queues
in a queue of its own, matched in fours by the classic rating, each group a competitive
classic table with the ranked variants (`ranked.py`).

Friendly (M13.1, M13.2): CreateFriendlyTable returns a 10-character invite code (`codes.py`);
everyone who wants to sit, the creator included, opens JoinFriendlyTable with it. The first
three joiners sit, in join order; the table (single or long, competitive=false) is created at
the next tick and each of them gets the Assignment. A joiner whose stream ends before that
gives up the seat; a player's newer join stream replaces an older one (`ticket/replaced`). A
player has one open lobby at a time, and a lobby with no table after its time to live
(MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S) is gone: its waiters end with NOT_FOUND
`friendly/expired`, its code is unknown from then on.

Abuse (docs/security.md, "The agorà"): every call is rate limited per player (`limits.py`,
`rate/limited`), join attempts with unknown codes much more, and logs name a code only by its
reference (`codes.code_ref`). Limits are per replica.

Seats are freed by scoring's results (`apply_result`: match_ended), by a cancelled placement
(`placing.py`) and by the seat check for lost tables (`seatcheck.py`). Ratings are rebuilt by
every replica from scoring's whole log.

Observability (`metrics.py`): the wait from a ticket's start to its assignment, tickets ended
by outcome, tickets waiting, placement failures; every round of table creation is a
`matchmaking.place` span linked to the Enqueue/JoinFriendlyTable spans of the tickets it
seats, with the shards' CreateTable calls as its children.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanContext

from machiavelox import rules
from machiavelox.platform.periodic import every
from machiavelox.platform.ratings import Ratings
from machiavelox.platform.telemetry import Attr, SpanName, Telemetry

from .codes import code_ref, new_code, normalize
from .limits import DEFAULT_RATES, AgoraLimits, AgoraRates, Call, Limited
from .memory_store import MemoryStore
from .metrics import COMPETITIVE, FRIENDLY, MatchmakingMetrics
from .outcomes import (
    _ENDS,
    Assigned,
    End,
    Expired,
    MatchResult,
    Replaced,
    Stopping,
    Update,
    Waiting,
)
from .placing import Done, Failed, Pending, Placer, Shards, random_suffix
from .queue import (
    GROUP,
    LOBBY_TTL_MS,
    MACHIAVELOX,
    Refused,
    TableRules,
    Ticket,
    UnknownCode,
    find_groups,
    window,
)
from .ranked import RANKED_CLASSIC, RANKED_SEATS
from .store import AgoraStore, Group, Placement, Seated, StoreUnavailableError

__all__ = ["Agora", "Assigned", "End", "Expired", "MatchResult", "Replaced", "Stopping",
           "Update", "Waiting", "Watch", "new_ticket_id"]

log = logging.getLogger(__name__)

T = TypeVar("T")

LEAD_MS = 3_000  # the matching lease: renewed every tick, taken over this long after a death
ROUNDS = 4  # placement rounds in flight at once (`Agora.run`)


def new_ticket_id() -> str:
    return secrets.token_urlsafe(12)


@dataclass(eq=False)
class Watch:
    """One open Enqueue or JoinFriendlyTable stream."""

    watch_id: str
    ticket_id: str
    player: str
    kind: Literal["queue", "lobby"]
    ref: str  # the ticket id, or the invite code
    started_ms: int
    outcome: asyncio.Future[Seated | End] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    span: SpanContext | None = None  # the stream's server span, for the placement's links

    def finish(self, outcome: Seated | End) -> None:
        if not self.outcome.done():
            self.outcome.set_result(outcome)


async def _settled(work: Awaitable[T]) -> T | None:
    """A stream's cleanup: `work` run to its end even if the caller is cancelled meanwhile;
    None if the store cannot be reached (the sweep gives up a ticket nobody keeps alive)."""
    try:
        return await asyncio.shield(asyncio.ensure_future(work))
    except StoreUnavailableError as err:
        log.warning("a stream's end not stored (%s): its ticket is detached later", err)
        return None


# ---------------------------------------------------------------------------------- use cases
class Agora:
    def __init__(self, ratings: Ratings, shards: Shards, clock: Callable[[], int],
                 window: float, widen_per_s: float, update_s: float = 1.0,
                 new_id: Callable[[], str] = new_ticket_id,
                 make_code: Callable[[], str] = new_code,
                 shuffle: Callable[[list[str]], None] | None = None,
                 metrics: MatchmakingMetrics | None = None,
                 telemetry: Telemetry | None = None,
                 rates: AgoraRates = DEFAULT_RATES,
                 lobby_ttl_s: float = LOBBY_TTL_MS / 1000,
                 store: AgoraStore | None = None,
                 new_placement_id: Callable[[], str] = random_suffix,
                 replica: str = "", retry_s: float = 2.0,
                 classic_ratings: Ratings | None = None,
                 ranked: TableRules = RANKED_CLASSIC) -> None:
        """`replica`: this process's id in the store (a random one by default); `retry_s`:
        how often a placement whose cancellation was unsure is asked about again;
        `classic_ratings` and `ranked`: the ranked classic queue's ratings and table."""
        self.ratings = ratings
        self.classic_ratings = classic_ratings if classic_ratings is not None else Ratings()
        self.ranked = ranked
        self.metrics = metrics
        self.telemetry = telemetry
        self.clock = clock
        self.base_window = window
        self.widen_per_s = widen_per_s
        self.update_s = update_s
        self.new_id = new_id
        self.make_code = make_code
        self.new_placement_id = new_placement_id
        self.shuffle = shuffle if shuffle is not None else random.SystemRandom().shuffle
        self.store: AgoraStore = store if store is not None else MemoryStore(
            round(lobby_ttl_s * 1000), make_code)
        self.replica = replica or secrets.token_hex(4)
        self.retry_ms = round(retry_s * 1000)
        self.placer = Placer(self.store, shards, self.replica, clock,
                             metrics.cancelled if metrics is not None else None)
        self.limits = AgoraLimits(rates)
        self._watches: dict[str, Watch] = {}  # by watch id
        self._by_ref: dict[str, set[Watch]] = {}  # by ticket id (queue) or code (lobby)
        self._parked: dict[str, tuple[Placement, int]] = {}  # unsure: (placement, retry at)
        self._placing: set[str] = set()  # the placements of the rounds in flight
        self._kept_alive_ms: int | None = None
        # this replica matches (the store's matching lease; always, alone on its memory)
        self.leading = not self.store.shared
        self._stopping = False
        # asks at once about a table that refused a player `ticket/seated`: True if it was
        # lost and its seats are free (seatcheck.SeatCheck.check_table; None: never asks)
        self.lost_check: Callable[[str], Awaitable[bool]] | None = None
        self.store.on_outcome(self._deliver_remote)

    # ------------------------------------------------------------------ streams
    def _open(self, player: str, kind: Literal["queue", "lobby"], ref: str, ticket_id: str,
              watch_id: str, started_ms: int) -> Watch:
        span = trace.get_current_span().get_span_context()
        watch = Watch(watch_id, ticket_id, player, kind, ref, started_ms,
                      span=span if span.is_valid else None)
        self._watches[watch_id] = watch
        self._by_ref.setdefault(ref, set()).add(watch)
        return watch

    def _close(self, watch: Watch) -> None:
        self._watches.pop(watch.watch_id, None)
        watches = self._by_ref.get(watch.ref)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._by_ref[watch.ref]

    def _deliver(self, watch_ids: Sequence[str], outcome: Seated | End) -> None:
        """Finish this process's watches among `watch_ids` (the others are other replicas')."""
        for watch_id in watch_ids:
            watch = self._watches.get(watch_id)
            if watch is not None:
                watch.finish(outcome)

    def _deliver_remote(self, watch_id: str, outcome: Seated | str) -> None:
        """An outcome the store tells (another replica's doing, or one missed)."""
        end = outcome if isinstance(outcome, Seated) else _ENDS.get(outcome)
        if end is None:
            log.warning("an outcome of unknown kind for a stream: %.40r", outcome)
            return
        self._deliver((watch_id,), end)

    def local_watches(self) -> list[str]:
        return list(self._watches)

    def unresolved(self) -> int:
        """This process's placements waiting for a shard's sure answer."""
        return len(self._parked)

    def queued(self) -> int:
        """Tickets waiting, as the matching replica reports them (0 on the others: summed
        over the replicas, the gauge counts each ticket once)."""
        return self.store.queue_len() if self.leading else 0

    def seats_waiting(self) -> int:
        return self.store.waiting_seats() if self.leading else 0

    def _stopped_shared(self, watch: Watch) -> bool:
        """Nothing to tell the store of the stream's end: its ticket was assigned (the store
        forgets the stream by itself: `sweep`), or this process stopped the stream and the
        ticket is in a shared store (it waits on: the app re-attaches to it elsewhere)."""
        if not watch.outcome.done():
            return False
        outcome = watch.outcome.result()
        return isinstance(outcome, Seated) or (self.store.shared and outcome is End.STOPPING)

    def _check_open(self) -> None:
        if self._stopping:
            raise Stopping()

    def _admit(self, call: Call, player: str) -> None:
        """The player's pace for this call: `Limited` (`rate/limited`) over it."""
        try:
            self.limits.admit(call, player, self.clock())
        except Limited:
            if self.metrics is not None:
                self.metrics.rate_limited(call)
            raise

    async def _follow(self, watch: Watch, window_now: Callable[[], float]
                      ) -> AsyncGenerator[Update, None]:
        ended = "left"  # the stream closed before an outcome
        try:
            while True:
                waited_s = max(0, self.clock() - watch.started_ms) // 1000
                yield Waiting(watch.ticket_id, waited_s, window_now())
                done, _ = await asyncio.wait({watch.outcome}, timeout=self.update_s)
                if done:
                    break
            outcome = watch.outcome.result()
            if outcome is End.STOPPING:
                ended = "stopped"
                raise Stopping("matchmaking is shutting down; queue again")
            if outcome is End.EXPIRED:
                ended = "expired"
                raise Expired()
            if outcome is End.REPLACED:
                ended = "replaced"
                raise Replaced()
            if isinstance(outcome, Seated):
                ended = "assigned"
                self._ticket_ended(watch, ended)
                yield Assigned(watch.ticket_id, outcome.table_id, outcome.shard_id,
                               outcome.players)
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

    async def _unless_lost(self, work: Callable[[], Awaitable[T]]) -> T:
        """`work`, done once more if it was refused `ticket/seated` by a table that its shard
        turns out not to have (its seats are then free: seatcheck.py): a player whose table
        was lost is never locked out, not even until the next periodic check."""
        try:
            return await work()
        except Refused as refused:
            if refused.reason != "ticket/seated" or not refused.table_id or \
                    self.lost_check is None or not await self.lost_check(refused.table_id):
                raise
        return await work()

    def _window(self, ticket: Ticket) -> Callable[[], float]:
        return lambda: window(self.base_window, self.widen_per_s, ticket.enqueued_ms,
                              self.clock())

    # ------------------------------------------------------------------ competitive
    async def enqueue(self, player: str, ticket_id: str = "", classic: bool = False
                      ) -> AsyncGenerator[Update, None]:
        """Queue the player (a new ticket; `classic`: in the ranked classic queue), or
        re-attach to their ticket `ticket_id`."""
        self._check_open()
        self._admit("enqueue", player)
        watch_id = secrets.token_hex(8)
        seated = None
        if ticket_id:
            state, replaced = await self.store.attach(ticket_id, player, watch_id,
                                                      self.clock())
            ticket, seated = state.ticket, state.seated
            self._deliver((replaced,), End.REPLACED)
            log.info("re-attached to the ticket (%s)", state.status,
                     extra={"player": player, "ticket_id": ticket_id})
        else:
            rated = self.classic_ratings if classic else self.ratings
            ticket = Ticket(self.new_id(), player, rated.ordinal(player), self.clock(), classic)
            await self._unless_lost(lambda: self.store.add_ticket(ticket, watch_id))
            log.info("queued (ordinal %.2f)", ticket.ordinal,
                     extra={"player": player, "ticket_id": ticket.ticket_id})
        watch = self._open(player, "queue", ticket.ticket_id, ticket.ticket_id, watch_id,
                           ticket.enqueued_ms)
        if seated is not None:
            watch.finish(seated)
        try:
            async for update in self._follow(watch, self._window(ticket)):
                yield update
        finally:
            self._close(watch)
            if not self._stopped_shared(watch) and await _settled(
                    self.store.detach(ticket.ticket_id, watch_id)) is not None:
                log.info("left the queue", extra={"player": player,
                                                   "ticket_id": ticket.ticket_id})

    async def cancel(self, player: str, ticket_id: str) -> bool:
        """Cancel a waiting ticket (queue or friendly seat); False if it is not waiting."""
        self._admit("cancel", player)
        cancelled = await self.store.cancel(ticket_id, player)
        if cancelled is None:
            return False
        self._deliver(cancelled.watches, End.CANCELLED)
        log.info("ticket cancelled", extra={"player": player, "ticket_id": ticket_id})
        return True

    # ------------------------------------------------------------------ friendly
    async def create_friendly(self, player: str, kind: rules.MatchKind,
                              table: TableRules = MACHIAVELOX) -> str:
        """A new lobby's code, or the code of the player's open lobby of this kind and these
        rules (`table`: Machiavelox, or a classic table's)."""
        self._admit("create_friendly", player)
        lobby, created = await self._unless_lost(lambda: self.store.create_lobby(
            player, kind, self.clock(), self.make_code, table))
        if created:
            log.info("friendly %s table created (%d seats)",
                     kind.value if not table.classic else "classic", table.seats,
                     extra={"player": player, "code": code_ref(lobby.code)})
        return lobby.code

    async def join_friendly(self, player: str, typed: str) -> AsyncGenerator[Update, None]:
        """Take a seat by code (typed as the player typed it: what is not a code at all opens
        no lobby either); a code that opens no lobby costs a failed attempt."""
        self._check_open()
        self._admit("join_friendly", player)
        watch_id = self.new_id()  # (also the ticket id the app sees)
        try:
            lobby, replaced, shard_id = await self._unless_lost(lambda: self.store.join_lobby(
                normalize(typed) or "", player, watch_id, self.clock()))
        except UnknownCode:
            self.limits.join_failed(player, self.clock())
            if self.metrics is not None:
                self.metrics.unknown_code()
            raise
        code = lobby.code
        self._deliver((replaced,), End.REPLACED)  # one stream per seat: the newest is the app's
        watch = self._open(player, "lobby", code, watch_id, watch_id, self.clock())
        log.info("joined friendly table (%d/%d)", len(lobby.players), lobby.rules.seats,
                 extra={"player": player, "code": code_ref(code), "ticket_id": watch_id})
        if lobby.table_id:  # a member coming back after the table was created
            watch.finish(Seated(lobby.table_id, shard_id, tuple(lobby.players)))
        try:
            async for update in self._follow(watch, lambda: 0.0):
                yield update
        finally:
            self._close(watch)
            if not self._stopped_shared(watch) and await _settled(
                    self.store.leave_lobby(code, player, watch_id)):
                log.info("left friendly table", extra={"player": player,
                                                       "code": code_ref(code)})

    # ------------------------------------------------------------------ matching
    async def match_once(self) -> None:
        """One tick: keep this process's streams and placements alive (every `update_s`),
        forget expired lobbies and detached tickets, match the queue, create the tables of the
        matched groups and full lobbies, and undo the placements left unfinished (this
        process's unsure ones, and those of placers that died)."""
        work = await self._formed()
        if work is not None:
            await self._place(*work)

    async def _formed(self) -> tuple[list[Placement], list[Placement]] | None:
        """The tick but for the tables' creation: the placements to make, and to undo (None:
        nothing to do)."""
        try:
            return await self._tick()
        except StoreUnavailableError as err:  # (what was done is done; the rest next tick)
            log.warning("matching interrupted: %s", err)
            return None

    async def _tick(self) -> tuple[list[Placement], list[Placement]] | None:
        now = self.clock()
        beat = self._kept_alive_ms is None or now - self._kept_alive_ms >= self.update_s * 1000
        if beat:
            self._kept_alive_ms = now
            for watch, outcome in await self.store.keepalive(
                    self.local_watches(), [*self._parked, *self._placing], self.replica, now):
                self._deliver_remote(watch, outcome)
        placements: list[Placement] = []
        self.leading = await self.store.lead(self.replica, now, LEAD_MS)
        if self.leading:  # one replica matches
            if beat and (swept := await self.store.sweep(now)):
                log.info("%d detached tickets and seats given up", swept)
            for lobby, watches in await self.store.expire_lobbies(now):
                self._lobby_expired(lobby.code, lobby.creator,
                                    f"{len(lobby.players)}/{lobby.rules.seats}", watches)
            groups = [*self._groups(await self.store.waiting(), now, GROUP, MACHIAVELOX),
                      *self._groups(await self.store.waiting(classic=True), now,
                                    RANKED_SEATS, self.ranked)]
            placements = await self.store.form(groups, self.replica, now) if groups else []
            placements += await self.store.claim_lobbies(self.new_placement_id, self.replica,
                                                         now)
        resolve = [p for p, at in self._parked.values() if at <= now]
        for placement in await self.store.stale(self.replica, now):
            log.warning("taking over an unfinished placement (%s on %s): undoing it",
                        placement.state, placement.shard_id or "no shard",
                        extra={"table_id": placement.table_id,
                               "shard_id": placement.shard_id})
            if self.metrics is not None:
                self.metrics.placement_resumed()
            resolve.append(placement)
        if not placements and not resolve:
            return None
        for placement in resolve:
            self._parked.pop(placement.placement_id, None)
        return placements, resolve

    def _groups(self, waiting: list[Ticket], now: int, size: int, table: TableRules
                ) -> list[Group]:
        """The groups of one queue that fit now, each with its seats shuffled."""
        groups = []
        for found in find_groups(waiting, now, self.base_window, self.widen_per_s, size=size):
            seats = [t.player for t in found]
            self.shuffle(seats)
            groups.append(Group(self.new_placement_id(), found, tuple(seats), table))
        return groups

    async def _place(self, placements: Sequence[Placement],
                     resolve: Sequence[Placement]) -> None:
        ids = {p.placement_id for p in (*placements, *resolve)}
        self._placing |= ids
        try:
            if self.telemetry is None:
                results = await self.placer.place(placements, resolve)
            else:
                with self.telemetry.span(SpanName.MATCHMAKING_PLACE, context=Context(),
                                         attributes={"machiavelox.tables": len(placements)},
                                         links=self._links(placements)):
                    results = await self.placer.place(placements, resolve)
        finally:
            self._placing -= ids
        for result in results:
            if isinstance(result, Done):
                self._placed(result)
            elif isinstance(result, Failed):
                self._not_placed(result)
            else:
                self._pending(result)

    def _pending(self, pending: Pending) -> None:
        placement = pending.placement
        extra = {"shard_id": placement.shard_id, "table_id": placement.table_id}
        if not pending.retry:  # (taken over, or to be: as the store has it)
            log.warning("placement left to its lease (%s)", pending.why, extra=extra)
            return
        log.warning("placement unresolved on %s (%s): its players keep waiting, asked again "
                    "in %.1f s", placement.shard_id, pending.why, self.retry_ms / 1000,
                    extra=extra)
        self._parked[placement.placement_id] = (placement, self.clock() + self.retry_ms)

    def _links(self, placements: Sequence[Placement]) -> list[Link]:
        """Links from a placement to the streams of the tickets it seats."""
        watches: list[Watch] = []
        for placement in placements:
            for ref in placement.tickets or (placement.code,):
                watches += self._by_ref.get(ref, ())
        return [Link(w.span, {Attr.PLAYER: w.player, Attr.TICKET: w.ticket_id})
                for w in watches if w.span is not None]

    def _placed(self, done: Done) -> None:
        placement, seated = done.placement, done.seated
        extra = {"table_id": seated.table_id, "shard_id": seated.shard_id}
        if placement.code:
            extra["code"] = code_ref(placement.code)
        log.info("%s table created", "competitive" if placement.competitive else "friendly",
                 extra=extra)
        self._deliver(done.watches, seated)

    def _not_placed(self, failed: Failed) -> None:
        placement = failed.placement
        if self.metrics is not None:
            self.metrics.placement_failed(COMPETITIVE if placement.competitive else FRIENDLY)
        if placement.code:
            log.warning("no shard for a friendly table (%s); retrying", failed.why,
                        extra={"code": code_ref(placement.code)})
        else:
            log.warning("no shard for a competitive table (%s); %d players requeued",
                        failed.why, len(failed.unplaced.requeued))

    def _lobby_expired(self, code: str, creator: str, players: str,
                       watches: Sequence[str]) -> None:
        if self.metrics is not None:
            self.metrics.lobby_expired()
        log.info("friendly table expired with %s players", players,
                 extra={"player": creator, "code": code_ref(code)})
        self._deliver(watches, End.EXPIRED)

    async def run(self, tick_s: float) -> None:
        """Match the queue every tick, until cancelled. A round's tables are created while the
        next ticks match on (at most `ROUNDS` rounds in flight: a tick waits for one to end),
        so a slow shard or a big round delays only its own players."""
        rounds: set[asyncio.Task[None]] = set()

        async def tick() -> None:
            work = await self._formed()
            if work is None:
                return
            if len(rounds) >= ROUNDS:
                await asyncio.wait(rounds, return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.create_task(self._round(*work))
            rounds.add(task)
            task.add_done_callback(rounds.discard)

        try:
            await every(tick_s, tick, "matching")
        finally:
            for task in list(rounds):
                task.cancel()

    async def _round(self, placements: Sequence[Placement],
                     resolve: Sequence[Placement]) -> None:
        try:
            await self._place(placements, resolve)
        except Exception:  # a bug: logged, the placements are left to their leases
            log.exception("placement failed")

    # ------------------------------------------------------------------ results
    async def apply_result(self, result: MatchResult) -> None:
        """One stored smazzata result: rate competitive ones, free the players of ended
        matches."""
        extra = {"table_id": result.table_id}
        try:
            if result.ranks:  # a ranked classic session ended
                self.classic_ratings.record_ranks(result.players, result.ranks)
            elif result.competitive:
                self.ratings.record(list(result.players), list(result.scores))
        except ValueError as err:
            log.warning("result not rated: %s", err, extra=extra)
        if result.match_ended:
            freed = await self.end_table(result.table_id)
            if freed:
                log.info("match ended; %d players free", len(freed), extra=extra)

    async def end_table(self, table_id: str) -> tuple[str, ...]:
        """The table's match is over for the agorà: its players are free, its friendly lobby
        (if any) forgotten; the players freed (none: it was over already)."""
        return await self.store.release(table_id)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """End every open stream with UNAVAILABLE (apps queue again, or re-attach to their
        ticket elsewhere when the store is shared)."""
        self._stopping = True
        for watch in list(self._watches.values()):
            watch.finish(End.STOPPING)
