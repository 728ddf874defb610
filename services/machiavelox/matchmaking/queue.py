"""Who is waiting for what, as pure logic: no I/O; time comes in as ms of a monotonic clock.

- `Roster`: where each player is: in the competitive queue, in a friendly lobby, or seated at a
  table (or being seated). A player is in at most one place: a second ticket is refused with
  `ticket/duplicate`, queueing while seated at an unfinished table with `ticket/seated`.
- `MatchQueue`: competitive tickets, matched in groups of three by skill (the ranked classic
  queue, issue 16: a second `MatchQueue` of `Ticket.classic` tickets, matched in fours). A
  ticket's window is `base + widen_per_s * waited seconds` ordinal points around its own
  ordinal; a group is made only if every member has the others inside its window. The
  longest-waiting ticket is served first, and its partners are the longest-waiting tickets
  that fit.
- `FriendlyLobbies`: private tables by invite code: the first players to join sit (three at a
  Machiavelox table, the variants' 2..6 at a classic one: `TableRules`). A player has at most
  one open lobby (not yet placed at a table): creating another of the same kind and rules
  gives back the open one, of another is refused with `lobby/open`. A lobby not
  placed within its time to live is forgotten (`expire`, called by the matching tick).

Refusals never carry an invite code: their messages may end up in logs and traces.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from machiavelox.rules import MatchKind

GROUP = 3  # M13.5: three players only
# Partners are searched among this many compatible tickets (in waiting order) per anchor, so a
# tick costs O(n * PARTNER_SCAN^2) at worst however long the queue.
PARTNER_SCAN = 64
# A friendly lobby with no table this long after its creation is forgotten (the default of
# MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S): time enough to share a code and gather.
LOBBY_TTL_MS = 15 * 60_000


class WaitError(Exception):
    """A refusal with a stable reason."""

    def __init__(self, reason: str, message: str, table_id: str = "") -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.table_id = table_id  # `ticket/seated`: the table the player is seated at


class Refused(WaitError):
    """The player's state forbids it (FAILED_PRECONDITION on the wire)."""


class UnknownCode(WaitError):
    """No friendly table has this code (NOT_FOUND on the wire)."""

    def __init__(self) -> None:
        super().__init__("friendly/unknown-code", "no open friendly table has that code")


@dataclass(frozen=True)
class TableRules:
    """What a friendly table plays: Machiavelox (the default: three seats, `classic` "") or
    classic Machiavelli (issue 16): `seats` its player count (2..6), `classic` its variant set
    in a canonical text form that only the service's edges read (`classic_rules.py`: the
    agorà and its stores carry it as it is, and compare it whole)."""

    seats: int = GROUP
    classic: str = ""

    @property
    def name(self) -> str:
        return "classic" if self.classic else "Machiavelox"


MACHIAVELOX = TableRules()


def open_lobby_message(creator: str, kind: MatchKind, rules: TableRules = MACHIAVELOX) -> str:
    what = kind.value if not rules.classic else "classic"
    return (f"{creator} already has an open {what} friendly table; it closes once "
            "seated or expired")


def spot_refusal(player: str, spot: Spot) -> Refused:
    """Why `player`, who is at `spot`, may not wait for another table."""
    if spot.kind == "table":
        where = f"table {spot.ref}" if spot.ref else "a table being created"
        return Refused("ticket/seated", f"{player} is seated at {where}", spot.ref)
    what = "the queue" if spot.kind == "queue" else "a friendly table"
    return Refused("ticket/duplicate", f"{player} is already waiting in {what}")


def lobby_full(seats: int = GROUP) -> Refused:
    return Refused("friendly/full", f"that friendly table already has its {seats} players")


# ---------------------------------------------------------------------------------- roster
SpotKind = Literal["queue", "lobby", "table"]


@dataclass(frozen=True)
class Spot:
    """Where a player is; ref: the ticket id, the invite code, or the table id ("" while the
    table is being created)."""

    kind: SpotKind
    ref: str


class Roster:
    def __init__(self) -> None:
        self._where: dict[str, Spot] = {}
        self._tables: dict[str, tuple[str, ...]] = {}

    def where(self, player: str) -> Spot | None:
        return self._where.get(player)

    def check_free(self, player: str) -> None:
        spot = self._where.get(player)
        if spot is not None:
            raise spot_refusal(player, spot)

    def hold(self, player: str, kind: SpotKind, ref: str) -> None:
        self.check_free(player)
        self._where[player] = Spot(kind, ref)

    def free(self, player: str) -> None:
        self._where.pop(player, None)

    def seat(self, players: tuple[str, ...], table_id: str) -> None:
        """Seat the players (table_id "": a table is being created for them)."""
        for player in players:
            self._where[player] = Spot("table", table_id)
        if table_id:
            self._tables[table_id] = players

    def release(self, table_id: str) -> tuple[str, ...]:
        """The table's match ended: its players are free again (unknown tables: nobody)."""
        players = self._tables.pop(table_id, ())
        for player in players:
            if self._where.get(player) == Spot("table", table_id):
                del self._where[player]
        return players

    def players_at(self, table_id: str) -> tuple[str, ...]:
        """The players of a created table, in seat order."""
        return self._tables.get(table_id, ())

    def seated_tables(self) -> int:
        return len(self._tables)

    def table_ids(self) -> list[str]:
        """The created tables with players seated (not those still being created)."""
        return list(self._tables)


# ---------------------------------------------------------------------------------- queue
@dataclass(frozen=True)
class Ticket:
    ticket_id: str
    player: str
    ordinal: float
    enqueued_ms: int
    classic: bool = False  # in the ranked classic queue (issue 16), not the Machiavelox one


class MatchQueue:
    def __init__(self, roster: Roster, base_window: float, widen_per_s: float) -> None:
        self.roster = roster
        self.base_window = base_window
        self.widen_per_s = widen_per_s
        self._tickets: dict[str, Ticket] = {}  # insertion order breaks ties of enqueued_ms

    def __len__(self) -> int:
        return len(self._tickets)

    def __contains__(self, ticket_id: object) -> bool:
        return ticket_id in self._tickets

    def get(self, ticket_id: str) -> Ticket | None:
        return self._tickets.get(ticket_id)

    def window(self, ticket: Ticket, now_ms: int) -> float:
        return window(self.base_window, self.widen_per_s, ticket.enqueued_ms, now_ms)

    def add(self, ticket: Ticket) -> None:
        """Queue a ticket; refused if the player already waits somewhere or is seated."""
        if ticket.ticket_id in self._tickets:
            raise Refused("ticket/duplicate", f"ticket {ticket.ticket_id} is already queued")
        self.roster.hold(ticket.player, "queue", ticket.ticket_id)
        self._tickets[ticket.ticket_id] = ticket

    def remove(self, ticket_id: str) -> Ticket | None:
        """Take a waiting ticket out (cancelled); None if it is not waiting."""
        ticket = self._tickets.pop(ticket_id, None)
        if ticket is not None:
            self.roster.free(ticket.player)
        return ticket

    def requeue(self, tickets: tuple[Ticket, ...]) -> None:
        """Put matched tickets back (their table could not be created), keeping their age."""
        for ticket in tickets:
            self.roster.free(ticket.player)
            self.add(ticket)

    def match(self, now_ms: int) -> list[tuple[Ticket, ...]]:
        """Groups of three that fit each other's windows now, longest-waiting first
        (`find_groups`).

        Matched tickets leave the queue and their players are marked as being seated
        (`Roster.seat(players, "")`); the caller seats them at the created table or requeues.
        """
        groups = find_groups(list(self._tickets.values()), now_ms, self.base_window,
                             self.widen_per_s)
        for group in groups:
            self.take(group)
        return groups

    def take(self, group: tuple[Ticket, ...]) -> bool:
        """Take a matched group out of the queue, its players being seated; False (nothing
        changed) if one of its tickets is no longer waiting."""
        if any(t.ticket_id not in self._tickets for t in group):
            return False
        for ticket in group:
            del self._tickets[ticket.ticket_id]
        self.roster.seat(tuple(t.player for t in group), "")
        return True

    def waiting(self) -> list[Ticket]:
        """The waiting tickets, in the order they were queued."""
        return list(self._tickets.values())


def window(base_window: float, widen_per_s: float, enqueued_ms: int, now_ms: int) -> float:
    """A ticket's skill window now: `base + widen_per_s * waited seconds` ordinal points."""
    waited_s = max(0, now_ms - enqueued_ms) / 1000
    return base_window + widen_per_s * waited_s


def find_groups(tickets: list[Ticket], now_ms: int, base_window: float, widen_per_s: float,
                scan: int = PARTNER_SCAN, size: int = GROUP) -> list[tuple[Ticket, ...]]:
    """Groups of `size` (three; four for ranked classic) that fit each other's windows now,
    longest-waiting first: each anchor (in waiting order; `tickets` in the order they were
    queued breaks ties) takes the first `size - 1` partners, among its first `scan`
    compatible tickets in waiting order (in the order of `itertools.combinations`), that fit
    it and each other. Pure: nothing is taken out (the store does that, atomically).

    Grouped tickets are skipped in O(1) amortised (`_Pool`), and an anchor's compatible
    tickets are found as its pairs are tried, so a round over n compatible tickets costs about
    n steps, not n^2.
    """
    pool = _Pool(sorted(tickets, key=lambda t: t.enqueued_ms), now_ms, base_window,
                 widen_per_s)  # (sorted is stable)
    groups: list[tuple[Ticket, ...]] = []
    for anchor in range(len(pool.order)):
        if pool.ungrouped(anchor) != anchor:
            continue
        found = pool.partners(anchor, scan, size - 1)
        if found is not None:
            groups.append(pool.group(anchor, *found))
    return groups


class _Pool:
    """The tickets of one matching round, by index in waiting order."""

    def __init__(self, order: list[Ticket], now_ms: int, base_window: float,
                 widen_per_s: float) -> None:
        self.order = order
        self.windows = [window(base_window, widen_per_s, t.enqueued_ms, now_ms) for t in order]
        self.ordinals = [t.ordinal for t in order]
        self.parent = list(range(len(order) + 1))  # parent[i] == i: ungrouped (n: the end)

    def ungrouped(self, i: int) -> int:
        """The first ungrouped index at or after `i` (a "next" pointer, path-compressed)."""
        parent = self.parent
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def fits(self, a: int, b: int) -> bool:
        return abs(self.ordinals[a] - self.ordinals[b]) <= min(self.windows[a], self.windows[b])

    def partners(self, anchor: int, scan: int, need: int) -> tuple[int, ...] | None:
        """The first `need` partners, in the order of `itertools.combinations` over the
        anchor's first `scan` compatible tickets, that fit each other; its compatible tickets
        are looked for only as far as the combinations tried need them."""
        candidates: list[int] = []
        cursor = self.ungrouped(0)
        end = len(self.order)

        def candidate(k: int) -> int | None:
            nonlocal cursor
            while len(candidates) <= k < scan and cursor < end:
                if cursor != anchor and self.fits(anchor, cursor):
                    candidates.append(cursor)
                cursor = self.ungrouped(cursor + 1)
            return candidates[k] if k < len(candidates) else None

        def extend(chosen: tuple[int, ...], start: int) -> tuple[int, ...] | None:
            if len(chosen) == need:
                return chosen
            k = start
            while (c := candidate(k)) is not None:
                if all(self.fits(c, other) for other in chosen):
                    found = extend((*chosen, c), k + 1)
                    if found is not None:
                        return found
                k += 1
            return None

        return extend((), 0)

    def group(self, anchor: int, *partners: int) -> tuple[Ticket, ...]:
        for i in (anchor, *partners):
            self.parent[i] = i + 1
        return tuple(self.order[i] for i in (anchor, *partners))


# ---------------------------------------------------------------------------------- friendly
@dataclass
class Lobby:
    code: str
    kind: MatchKind
    creator: str
    created_ms: int
    players: list[str] = field(default_factory=list)  # in seat order (join order)
    table_id: str = ""  # set once the table exists
    placing: bool = False  # a table is being created for it
    rules: TableRules = MACHIAVELOX  # what it plays, and so how many seats it has

    @property
    def full(self) -> bool:
        return len(self.players) == self.rules.seats


class FriendlyLobbies:
    """Friendly tables waiting for their players. A lobby lives until its table's match ends,
    or `ttl_ms` after its creation if no table was created for it by then."""

    def __init__(self, roster: Roster, new_code: Callable[[], str],
                 ttl_ms: int = LOBBY_TTL_MS) -> None:
        self.roster = roster
        self.new_code = new_code
        self.ttl_ms = ttl_ms
        self._lobbies: dict[str, Lobby] = {}
        self._by_table: dict[str, str] = {}
        self._open_by_creator: dict[str, str] = {}  # creator -> code of the lobby not placed
        self._by_age: deque[Lobby] = deque()  # lobbies not placed yet, oldest first (lazy)

    def __len__(self) -> int:
        return len(self._lobbies)

    def get(self, code: str) -> Lobby | None:
        return self._lobbies.get(code)

    def waiting_seats(self) -> int:
        """Seats taken at lobbies whose table is not created yet."""
        return sum(len(lobby.players) for lobby in list(self._lobbies.values())
                   if not lobby.table_id)

    def open_lobby(self, creator: str) -> Lobby | None:
        """The creator's lobby that has no table yet, if any."""
        code = self._open_by_creator.get(creator)
        return None if code is None else self._lobbies.get(code)

    def _not_open(self, lobby: Lobby) -> None:
        """The lobby is placed or gone: no longer its creator's open one."""
        if self._open_by_creator.get(lobby.creator) == lobby.code:
            del self._open_by_creator[lobby.creator]

    def create(self, creator: str, kind: MatchKind, now_ms: int,
               draw: Callable[[], str] | None = None,
               rules: TableRules = MACHIAVELOX) -> Lobby:
        """A new lobby with a fresh code (`draw`, or the lobbies' own `new_code`); the creator
        joins it like everyone else. A creator whose lobby has no table yet gets that one back
        (same kind and rules: a retried call) or is refused (`lobby/open`, another)."""
        current = self.open_lobby(creator)
        if current is not None:
            if current.kind is kind and current.rules == rules:
                return current
            raise Refused("lobby/open", open_lobby_message(creator, current.kind,
                                                           current.rules))
        new_code = draw or self.new_code
        for _ in range(100):  # a drawn code already in use is drawn again
            code = new_code()
            if code not in self._lobbies:
                break
        else:
            raise RuntimeError("no free invite code found")
        lobby = Lobby(code, kind, creator, now_ms, rules=rules)
        self._lobbies[code] = lobby
        self._open_by_creator[creator] = code
        self._by_age.append(lobby)
        return lobby

    def join(self, code: str, player: str) -> Lobby:
        """Take a seat (idempotent for a member: a reconnecting app gets the same lobby)."""
        lobby = self._lobbies.get(code)
        if lobby is None:
            raise UnknownCode()
        if player in lobby.players:
            return lobby
        if lobby.full:
            raise lobby_full(lobby.rules.seats)
        self.roster.hold(player, "lobby", code)
        lobby.players.append(player)
        return lobby

    def leave(self, code: str, player: str) -> bool:
        """Give up a seat before the table is created; False if it cannot be given up."""
        lobby = self._lobbies.get(code)
        if lobby is None or player not in lobby.players or lobby.placing or lobby.table_id:
            return False
        lobby.players.remove(player)
        self.roster.free(player)
        return True

    def drop(self, code: str) -> bool:
        """Forget a lobby with no players and no table (nor one being created)."""
        lobby = self._lobbies.get(code)
        if lobby is None or lobby.players or lobby.placing or lobby.table_id:
            return False
        del self._lobbies[code]
        self._not_open(lobby)
        return True  # (its entry in `_by_age` is skipped: no longer in `_lobbies`)

    def ready(self) -> list[Lobby]:
        """Full lobbies whose table is still to be created; they are marked as placing."""
        out = [lobby for lobby in self._lobbies.values()
               if lobby.full and not lobby.table_id and not lobby.placing]
        for lobby in out:
            lobby.placing = True
        return out

    def placed(self, code: str, table_id: str) -> None:
        lobby = self._lobbies[code]
        lobby.placing = False
        lobby.table_id = table_id
        self._by_table[table_id] = code
        self._not_open(lobby)
        self.roster.seat(tuple(lobby.players), table_id)

    def not_placed(self, code: str) -> None:
        """Creating the table failed: the lobby is ready again at the next attempt."""
        lobby = self._lobbies.get(code)
        if lobby is not None:
            lobby.placing = False

    def release(self, table_id: str) -> Lobby | None:
        """The table's match ended: forget the lobby (its code becomes unknown)."""
        code = self._by_table.pop(table_id, None)
        return None if code is None else self._lobbies.pop(code, None)

    def expire(self, now_ms: int) -> list[Lobby]:
        """Forget the lobbies created `ttl_ms` ago or more that have no table (nor one being
        created): their codes become unknown, their players free. Oldest first; the cost is
        the number of lobbies forgotten or placed since the last call."""
        gone = []
        while self._by_age:
            lobby = self._by_age[0]
            if lobby.table_id or self._lobbies.get(lobby.code) is not lobby:
                self._by_age.popleft()  # placed (or forgotten) meanwhile
                continue
            if now_ms - lobby.created_ms < self.ttl_ms or lobby.placing:
                break
            self._by_age.popleft()
            del self._lobbies[lobby.code]
            self._not_open(lobby)
            for player in lobby.players:
                if self.roster.where(player) == Spot("lobby", lobby.code):
                    self.roster.free(player)
            gone.append(lobby)
        return gone
