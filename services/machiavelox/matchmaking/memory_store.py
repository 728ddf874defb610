"""The agorà's state in this process's memory (`store.AgoraStore`): one replica, forgotten when
it stops (the default, and `machiavelox up`'s). Each method runs without awaiting anything, so
it is atomic on the event loop; the structures are the pure ones of `queue.py`.

Nothing outlives the process: a restart forgets the queue, the lobbies, the seats and the
placements in flight (a table created by a placement the crash interrupted is not cancelled:
the guarantees of docs/architecture.md, "The agorà", across a crash need the Redis store).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from machiavelox.rules import MatchKind

from .codes import new_code
from .queue import (
    LOBBY_TTL_MS,
    MACHIAVELOX,
    FriendlyLobbies,
    Lobby,
    MatchQueue,
    Roster,
    Spot,
    TableRules,
    Ticket,
)
from .store import (
    ATTACH_MS,
    LEASE_MS,
    Cancelled,
    Group,
    NotYours,
    Outcome,
    Placement,
    Seated,
    Snapshot,
    TicketState,
    TicketStatus,
    UnknownTicket,
    Unplaced,
)


@dataclass
class _TicketRecord:
    ticket: Ticket
    watch: str  # the stream following it ("" none)
    status: TicketStatus = "waiting"
    seated: Seated | None = None


class MemoryStore:
    shared = False

    def __init__(self, lobby_ttl_ms: int = LOBBY_TTL_MS,
                 make_code: Callable[[], str] = new_code, attach_ms: int = ATTACH_MS,
                 lease_ms: int = LEASE_MS) -> None:
        self.attach_ms = attach_ms
        self.lease_ms = lease_ms
        self.roster = Roster()
        self.queue = MatchQueue(self.roster, 0.0, 0.0)  # (windows: the agorà's)
        self.classic_queue = MatchQueue(self.roster, 0.0, 0.0)  # ranked classic (issue 16)
        self.lobbies = FriendlyLobbies(self.roster, make_code, lobby_ttl_ms)
        self.placements: dict[str, Placement] = {}
        self._tickets: dict[str, _TicketRecord] = {}
        self._by_table: dict[str, list[str]] = {}  # table -> its tickets (competitive)
        self._joins: dict[str, tuple[str, str]] = {}  # join ticket -> (code, player)
        self._members: dict[tuple[str, str], str] = {}  # (code, player) -> its join stream
        self._shards: dict[str, str] = {}  # table -> shard (placed lobbies)
        self._alive: dict[str, int] = {}  # watch -> attached until (ms)
        self._leases: dict[str, tuple[str, int]] = {}  # placement -> (owner, until ms)

    def _attached(self, watch: str, now_ms: int) -> bool:
        return bool(watch) and self._alive.get(watch, -1) >= now_ms

    def _queue(self, ticket: Ticket) -> MatchQueue:
        return self.classic_queue if ticket.classic else self.queue

    def _lease(self, placement_id: str, owner: str, now_ms: int) -> None:
        self._leases[placement_id] = (owner, now_ms + self.lease_ms)

    # ------------------------------------------------------------------ competitive
    async def add_ticket(self, ticket: Ticket, watch_id: str) -> None:
        self._queue(ticket).add(ticket)
        self._tickets[ticket.ticket_id] = _TicketRecord(ticket, watch_id)
        self._alive[watch_id] = ticket.enqueued_ms + self.attach_ms

    async def attach(self, ticket_id: str, player: str, watch_id: str, now_ms: int
                     ) -> tuple[TicketState, str]:
        record = self._tickets.get(ticket_id)
        if record is None:
            raise UnknownTicket()
        if record.ticket.player != player:
            raise NotYours()
        replaced, record.watch = record.watch, watch_id
        self._alive.pop(replaced, None)
        self._alive[watch_id] = now_ms + self.attach_ms
        return TicketState(record.ticket, record.status, record.seated), replaced

    async def detach(self, ticket_id: str, watch_id: str) -> Ticket | None:
        self._alive.pop(watch_id, None)
        record = self._tickets.get(ticket_id)
        if record is None or record.watch != watch_id:
            return None
        record.watch = ""
        if record.status == "waiting":
            del self._tickets[ticket_id]
            return self._queue(record.ticket).remove(ticket_id)
        return None

    async def cancel(self, ticket_id: str, player: str) -> Cancelled | None:
        join = self._joins.get(ticket_id)
        if join is not None:
            code, member = join
            if member != player:
                raise NotYours()
            watch = self._members.get(join, "")
            if not self.lobbies.leave(code, player):
                return None
            self._forget_member(code, player)
            return Cancelled((watch,) if watch else (), "lobby")
        record = self._tickets.get(ticket_id)
        if record is None:
            return None
        if record.ticket.player != player:
            raise NotYours()
        if record.status != "waiting":
            return None  # already matched: the assignment is on its way
        del self._tickets[ticket_id]
        self._queue(record.ticket).remove(ticket_id)
        self._alive.pop(record.watch, None)
        return Cancelled((record.watch,) if record.watch else (), "queue")

    async def waiting(self, classic: bool = False) -> list[Ticket]:
        return (self.classic_queue if classic else self.queue).waiting()

    async def form(self, groups: Sequence[Group], owner: str, now_ms: int
                   ) -> list[Placement]:
        out = []
        for group in groups:
            if not group.tickets or not self._queue(group.tickets[0]).take(group.tickets):
                continue
            for ticket in group.tickets:
                self._tickets[ticket.ticket_id].status = "placing"
            placement = Placement(group.placement_id, group.seats, MatchKind.SINGLE, True,
                                  tickets=tuple(t.ticket_id for t in group.tickets),
                                  rules=group.rules)
            self.placements[placement.placement_id] = placement
            self._lease(placement.placement_id, owner, now_ms)
            out.append(placement)
        return out

    # ------------------------------------------------------------------ friendly
    async def create_lobby(self, creator: str, kind: MatchKind, now_ms: int,
                           draw: Callable[[], str], rules: TableRules = MACHIAVELOX
                           ) -> tuple[Lobby, bool]:
        before = self.lobbies.open_lobby(creator)
        lobby = self.lobbies.create(creator, kind, now_ms, draw, rules)
        return lobby, lobby is not before

    async def join_lobby(self, code: str, player: str, watch_id: str, now_ms: int
                         ) -> tuple[Lobby, str, str]:
        lobby = self.lobbies.join(code, player)
        replaced = self._members.get((code, player), "")
        self._members[(code, player)] = watch_id
        self._joins[watch_id] = (code, player)
        self._alive[watch_id] = now_ms + self.attach_ms
        if replaced:
            self._joins.pop(replaced, None)
            self._alive.pop(replaced, None)
        return lobby, replaced, self._shards.get(lobby.table_id, "")

    async def leave_lobby(self, code: str, player: str, watch_id: str) -> bool:
        self._alive.pop(watch_id, None)
        if self._members.get((code, player)) != watch_id:
            self._joins.pop(watch_id, None)
            return False  # a newer stream has the seat
        if not self.lobbies.leave(code, player):
            return False
        self._forget_member(code, player)
        return True

    def _forget_member(self, code: str, player: str) -> None:
        watch = self._members.pop((code, player), "")
        self._joins.pop(watch, None)
        self._alive.pop(watch, None)

    def _lobby_watches(self, lobby: Lobby) -> Outcome:
        return tuple(w for p in lobby.players if (w := self._members.get((lobby.code, p))))

    async def drop_lobby(self, code: str) -> bool:
        return self.lobbies.drop(code)

    async def expire_lobbies(self, now_ms: int) -> list[tuple[Lobby, Outcome]]:
        out = []
        for lobby in self.lobbies.expire(now_ms):
            out.append((lobby, self._lobby_watches(lobby)))
            for player in lobby.players:
                self._forget_member(lobby.code, player)
        return out

    async def claim_lobbies(self, new_id: Callable[[], str], owner: str, now_ms: int
                            ) -> list[Placement]:
        out = []
        for lobby in self.lobbies.ready():
            placement = Placement(new_id(), tuple(lobby.players), lobby.kind, False,
                                  code=lobby.code, rules=lobby.rules)
            self.placements[placement.placement_id] = placement
            self._lease(placement.placement_id, owner, now_ms)
            out.append(placement)
        return out

    async def lobby(self, code: str) -> Lobby | None:
        return self.lobbies.get(code)

    # ------------------------------------------------------------------ placements
    async def progress(self, placement: Placement, owner: str, now_ms: int) -> bool:
        lease = self._leases.get(placement.placement_id)
        if lease is None or lease[0] != owner:
            return False
        self.placements[placement.placement_id] = placement
        self._lease(placement.placement_id, owner, now_ms)
        return True

    def _take(self, placement: Placement, owner: str) -> bool:
        """The placement leaves the store, if it is `owner`'s."""
        lease = self._leases.get(placement.placement_id)
        if lease is None or lease[0] != owner:
            return False
        del self._leases[placement.placement_id]
        del self.placements[placement.placement_id]
        return True

    async def placed(self, placement: Placement, seated: Seated, owner: str
                     ) -> Outcome | None:
        if not self._take(placement, owner):
            return None
        if placement.code:
            lobby = self.lobbies.get(placement.code)
            if lobby is None:
                return ()
            self.lobbies.placed(placement.code, seated.table_id)
            self._shards[seated.table_id] = seated.shard_id
            return self._lobby_watches(lobby)
        self.roster.seat(seated.players, seated.table_id)
        watches = []
        for ticket_id in placement.tickets:
            record = self._tickets.get(ticket_id)
            if record is not None:
                record.status, record.seated = "assigned", seated
                if record.watch:
                    watches.append(record.watch)
        self._by_table[seated.table_id] = list(placement.tickets)
        return tuple(watches)

    async def unplaced(self, placement: Placement, owner: str, now_ms: int
                       ) -> Unplaced | None:
        if not self._take(placement, owner):
            return None
        if placement.code:
            self.lobbies.not_placed(placement.code)
            return Unplaced((), ())
        alive = []
        for ticket_id in placement.tickets:
            record = self._tickets.get(ticket_id)
            if record is not None and self._attached(record.watch, now_ms):
                alive.append(record)
            elif record is not None:
                del self._tickets[ticket_id]
                self._alive.pop(record.watch, None)
        for player in placement.players:
            self.roster.free(player)
        for record in alive:
            self._queue(record.ticket).requeue((record.ticket,))
        for record in alive:
            record.status = "waiting"
        kept = {r.ticket.player for r in alive}
        freed = [p for p in placement.players if p not in kept]
        return Unplaced(tuple(r.ticket.ticket_id for r in alive), tuple(freed))

    async def stale(self, owner: str, now_ms: int) -> list[Placement]:
        out = []
        for placement_id, (_, until) in list(self._leases.items()):
            if until < now_ms:
                self._lease(placement_id, owner, now_ms)
                out.append(self.placements[placement_id])
        return out

    # ------------------------------------------------------------------ seats
    async def release(self, table_id: str) -> tuple[str, ...]:
        lobby = self.lobbies.release(table_id)
        for player in lobby.players if lobby is not None else ():
            self._forget_member(lobby.code, player)  # type: ignore[union-attr]
        self._shards.pop(table_id, None)
        for ticket_id in self._by_table.pop(table_id, ()):
            self._tickets.pop(ticket_id, None)
        return self.roster.release(table_id)

    async def seated_tables(self) -> list[str]:
        return self.roster.table_ids()

    async def where(self, player: str) -> Spot | None:
        return self.roster.where(player)

    # ------------------------------------------------------------------ housekeeping
    async def keepalive(self, watch_ids: Sequence[str], placement_ids: Sequence[str],
                        owner: str, now_ms: int) -> list[tuple[str, Seated | str]]:
        until = now_ms + self.attach_ms
        for watch_id in watch_ids:
            if watch_id in self._alive:
                self._alive[watch_id] = until
        for placement_id in placement_ids:
            lease = self._leases.get(placement_id)
            if lease is not None and lease[0] == owner:
                self._lease(placement_id, owner, now_ms)
        return []  # (every outcome was told as it happened: one process)

    async def sweep(self, now_ms: int) -> int:
        gone = 0
        for ticket in [*self.queue.waiting(), *self.classic_queue.waiting()]:
            record = self._tickets[ticket.ticket_id]
            if not self._attached(record.watch, now_ms):
                del self._tickets[ticket.ticket_id]
                self._queue(ticket).remove(ticket.ticket_id)
                self._alive.pop(record.watch, None)
                gone += 1
        for (code, player), watch in list(self._members.items()):
            if not self._attached(watch, now_ms) and self.lobbies.leave(code, player):
                self._forget_member(code, player)
                gone += 1
        return gone

    async def lead(self, owner: str, now_ms: int, lease_ms: int) -> bool:
        return True  # (one process)

    def queue_len(self) -> int:
        return len(self.queue)

    def waiting_seats(self) -> int:
        return self.lobbies.waiting_seats()

    def on_outcome(self, deliver: Callable[[str, Seated | str], None]) -> None:
        return  # (no other replica)

    async def snapshot(self) -> Snapshot:
        return Snapshot(tuple(self.placements.values()),
                        {t: self.roster.players_at(t) for t in self.roster.table_ids()},
                        {p: spot for p in list(self.roster._where)
                         if (spot := self.roster.where(p)) is not None},
                        tuple(t.ticket_id for t in [*self.queue.waiting(),
                                                    *self.classic_queue.waiting()]))

    async def close(self) -> None:
        return
