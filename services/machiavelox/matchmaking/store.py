"""The agorà's state behind one interface: tickets, seats, friendly lobbies and placements.

Two implementations: `memory_store.MemoryStore` (this process's memory: one replica, the
default and `machiavelox up`'s) and `redis_store.RedisStore` (one Redis shared by every
replica). Every method is one atomic step of the agorà's state (a Lua script in Redis), so two
replicas never see half of a change; the policy (who matches whom, which shard, what a
refusal says) is the caller's (`agora.py`, `queue.find_groups`, `placing.py`), written once.

The records:
- a **ticket** (`Ticket`): a player waiting in the competitive queue (Machiavelox's, or the
  ranked classic one: `Ticket.classic`, a queue of its own, matched in fours), then being
  placed, then assigned; the stream following it is its current *watch* (one at a time: a
  newer stream replaces the older, which ends `ticket/replaced`). The stream's end takes a
  waiting ticket out of the queue. A ticket is *attached* while its watch is kept alive
  (`keepalive`, by the process that holds the stream, at least every `ATTACH_MS`): one whose
  process died is not (the app may re-attach meanwhile); a detached waiting ticket leaves the
  queue (`sweep`) and a detached ticket is not requeued after a failed placement.
- a **lobby** (`queue.Lobby`): a friendly table gathering its players by invite code (three,
  or a classic table's 2..6: `queue.TableRules`);
  each member's join stream is their watch (the join's ticket id), kept alive the same way: a
  detached member gives up the seat (`sweep`) unless the table is created or being created.
- a **placement** (`Placement`): a group (or a full lobby) whose table is being created: its
  players are seated at "a table being created" until it is placed (seated at the table) or
  not (the players wait again, or are free). Its progress (the shard tried, the table id
  there, whether a cancellation is under way) is stored before each call to a shard, so
  whoever resumes it (the same process, or after a crash another replica: `stale`) knows
  where a table may exist. A placement belongs to the process that formed it as long as that
  one keeps it alive (its *lease*, `LEASE_MS`); then any replica may take it over (`stale`)
  and undo it.
- a **seat**: the table each placed player is at, until the table ends (scoring's result),
  is cancelled or is lost (`release`).

Every change a method makes to a watch of another replica is announced to it (RedisStore:
published with the change, in the same script); the caller handles the watches of its own
process from the return values (`Outcome`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from machiavelox.rules import MatchKind

from .queue import MACHIAVELOX, Lobby, Spot, TableRules, Ticket, WaitError

PlacementState = Literal["new", "creating", "cancelling"]
TicketStatus = Literal["waiting", "placing", "assigned"]

ATTACH_MS = 15_000  # the default of MACHIAVELOX_MATCHMAKING_DETACHED_S (x1000)
LEASE_MS = 10_000  # the default of MACHIAVELOX_MATCHMAKING_LEASE_S (x1000)


class UnknownTicket(WaitError):
    """No ticket has this id (NOT_FOUND `ticket/unknown` on the wire)."""

    def __init__(self) -> None:
        super().__init__("ticket/unknown", "no ticket has that id (it ended): queue again")


class NotYours(WaitError):
    """The ticket is another player's (PERMISSION_DENIED `ticket/not-yours`)."""

    def __init__(self) -> None:
        super().__init__("ticket/not-yours", "that ticket is another player's")


class StoreUnavailableError(Exception):
    """The shared store cannot be reached now (UNAVAILABLE `agora/store` on the wire)."""


@dataclass(frozen=True)
class Seated:
    """Where a placed table is: its id, its shard, its players in seat order."""

    table_id: str
    shard_id: str
    players: tuple[str, ...]


@dataclass(frozen=True)
class TicketState:
    """A ticket as a stream re-attaching to it finds it."""

    ticket: Ticket
    status: TicketStatus
    seated: Seated | None = None  # assigned: its table


@dataclass(frozen=True)
class Placement:
    """A table being created for `players` (seat order); see the module docstring."""

    placement_id: str
    players: tuple[str, ...]
    kind: MatchKind
    competitive: bool
    tickets: tuple[str, ...] = ()  # competitive: the group's tickets
    code: str = ""  # friendly: the lobby's invite code
    state: PlacementState = "new"
    shard_id: str = ""  # the shard asked last ("" none yet)
    table_id: str = ""  # the table's id there
    refused: tuple[str, ...] = ()  # shards that have no table of it (refused, or cancelled)
    rules: TableRules = MACHIAVELOX  # what its table plays (its lobby's, or ranked classic's)


@dataclass(frozen=True)
class Group:
    """A matched group and its players in seat order (shuffled by the agorà)."""

    placement_id: str
    tickets: tuple[Ticket, ...]
    seats: tuple[str, ...]
    rules: TableRules = MACHIAVELOX  # the ranked classic queue's: its ranked variants


@dataclass(frozen=True)
class Snapshot:
    """The whole state at one moment (tests and operators: it reads everything)."""

    placements: tuple[Placement, ...]
    tables: dict[str, tuple[str, ...]]  # seated table -> its players
    spots: dict[str, Spot]  # player -> where
    waiting: tuple[str, ...]  # the waiting tickets, in order


Outcome = tuple[str, ...]
"""The watch ids (streams) an outcome is for."""


@dataclass(frozen=True)
class Cancelled:
    """A waiting ticket or a friendly seat given up (CancelTicket)."""

    watches: Outcome
    kind: Literal["queue", "lobby"]


@dataclass(frozen=True)
class Unplaced:
    """A placement given up without a table: who waits again, who is free."""

    requeued: tuple[str, ...]  # competitive tickets back in the queue (with their age)
    freed: tuple[str, ...]  # players free (their tickets' streams are gone)


class AgoraStore(Protocol):
    """One atomic step per method (see the module docstring)."""

    shared: bool  # kept when this process ends (Redis): streams that stop leave tickets behind

    # ------------------------------------------------------------------ competitive
    async def add_ticket(self, ticket: Ticket, watch_id: str) -> None:
        """Queue a new ticket followed by `watch_id` (attached from `ticket.enqueued_ms`);
        `Refused` if the player already waits somewhere (`ticket/duplicate`) or is seated
        (`ticket/seated`)."""
        ...

    async def attach(self, ticket_id: str, player: str, watch_id: str, now_ms: int
                     ) -> tuple[TicketState, str]:
        """`watch_id` follows the ticket from now on; the ticket and the watch it replaces
        ("" none). `UnknownTicket`, `NotYours`."""
        ...

    async def detach(self, ticket_id: str, watch_id: str) -> Ticket | None:
        """The stream `watch_id` ended: a waiting ticket it followed leaves the queue (the
        ticket returned), any other is no longer attached. Nothing if another watch
        replaced it."""
        ...

    async def cancel(self, ticket_id: str, player: str) -> Cancelled | None:
        """CancelTicket: a waiting ticket leaves the queue, a friendly seat not yet being
        placed is given up; None if there is nothing to cancel. `NotYours`."""
        ...

    async def waiting(self, classic: bool = False) -> list[Ticket]:
        """The waiting tickets of the Machiavelox queue (`classic`: of the ranked classic
        one), in the order they were queued (the matcher's input)."""
        ...

    async def form(self, groups: Sequence[Group], owner: str, now_ms: int
                   ) -> list[Placement]:
        """Take each group whose tickets all still wait out of the queue, as a placement
        of `owner`'s (its players seated at a table being created); the placements made."""
        ...

    # ------------------------------------------------------------------ friendly
    async def create_lobby(self, creator: str, kind: MatchKind, now_ms: int,
                           draw: Callable[[], str], rules: TableRules = MACHIAVELOX
                           ) -> tuple[Lobby, bool]:
        """A new lobby (True), or the creator's open one of this kind and these rules
        (False); `Refused` `lobby/open` if their open one is of another."""
        ...

    async def join_lobby(self, code: str, player: str, watch_id: str, now_ms: int
                         ) -> tuple[Lobby, str, str]:
        """Take a seat (a member joining again keeps theirs), followed by `watch_id`; the
        lobby, the watch it replaces ("" none) and the table's shard if it has one.
        `UnknownCode`, `Refused` (`friendly/full`, `ticket/duplicate`, `ticket/seated`)."""
        ...

    async def leave_lobby(self, code: str, player: str, watch_id: str) -> bool:
        """The join stream `watch_id` ended: give up the seat if it is still its, and the
        table is neither created nor being created."""
        ...

    async def drop_lobby(self, code: str) -> bool:
        """Forget a lobby nobody has joined yet and that has no table (a practice table whose
        bots could not be had); False if there is no such lobby."""
        ...

    async def expire_lobbies(self, now_ms: int) -> list[tuple[Lobby, Outcome]]:
        """Forget the lobbies past their time to live with no table (nor one being created);
        each with the watches of its members."""
        ...

    async def claim_lobbies(self, new_id: Callable[[], str], owner: str, now_ms: int
                            ) -> list[Placement]:
        """A placement of `owner`'s for each full lobby with no table yet (nor one being
        created)."""
        ...

    async def lobby(self, code: str) -> Lobby | None:
        ...

    # ------------------------------------------------------------------ placements
    async def progress(self, placement: Placement, owner: str, now_ms: int) -> bool:
        """Store a placement's progress (before calling the shard it names; its lease
        renewed); False if it is no longer `owner`'s (another replica took it over)."""
        ...

    async def placed(self, placement: Placement, seated: Seated, owner: str
                     ) -> Outcome | None:
        """The placement has its table: its players are seated there, its tickets assigned,
        its lobby placed; the watches to tell. None (nothing changed) if it is no longer
        `owner`'s."""
        ...

    async def unplaced(self, placement: Placement, owner: str, now_ms: int
                       ) -> Unplaced | None:
        """The placement has no table anywhere: its attached competitive tickets wait again
        (keeping their age), the others' players are free; its lobby is full and waiting for
        a table again. None (nothing changed) if it is no longer `owner`'s."""
        ...

    async def stale(self, owner: str, now_ms: int) -> list[Placement]:
        """Placements whose lease ran out (their placer crashed, or a dead replica's), now
        `owner`'s to finish."""
        ...

    # ------------------------------------------------------------------ seats
    async def release(self, table_id: str) -> tuple[str, ...]:
        """The table's match is over for the agorà (ended, cancelled or lost): its players
        are free, its lobby forgotten; the players freed (none: it was over already)."""
        ...

    async def seated_tables(self) -> list[str]:
        """The tables with players seated (not those being created)."""
        ...

    async def where(self, player: str) -> Spot | None:
        ...

    # ------------------------------------------------------------------ housekeeping
    async def keepalive(self, watch_ids: Sequence[str], placement_ids: Sequence[str],
                        owner: str, now_ms: int) -> list[tuple[str, Seated | str]]:
        """These streams are alive in this process (their tickets and seats stay attached),
        and these placements are still being placed by it (their leases renewed); the
        outcomes of those streams whose ticket or seat has moved on (as `on_outcome` gives
        them: a replica that missed one is told here)."""
        ...

    async def sweep(self, now_ms: int) -> int:
        """Detached waiting tickets leave the queue, detached lobby members their seats
        (those of lobbies with no table nor one being created); how many."""
        ...

    async def lead(self, owner: str, now_ms: int, lease_ms: int) -> bool:
        """`owner` holds the matching lease (for `lease_ms`): it alone forms groups, places
        lobbies and sweeps, one replica at a time (atomic formation makes a second one
        harmless, only wasteful). Taken when free, renewed when its own."""
        ...

    def queue_len(self) -> int:
        """Tickets waiting (as last seen: for the metrics, read without I/O)."""
        ...

    def waiting_seats(self) -> int:
        """Seats taken at lobbies without a table (as last seen, without I/O)."""
        ...

    def on_outcome(self, deliver: Callable[[str, Seated | str], None]) -> None:
        """Outcomes for watches made by other replicas: (watch id, where it is seated, or
        why it ended: "cancelled", "expired", "replaced")."""
        ...

    async def snapshot(self) -> Snapshot:
        ...

    async def close(self) -> None:
        ...
