"""The agorà's state in one Redis shared by every matchmaking replica (`store.AgoraStore`),
selected by MACHIAVELOX_MATCHMAKING_REDIS_URL (issue 13 item 4; docs/architecture.md, "The
agorà").

Every method is one Lua script, run by Redis atomically: two replicas never see half of a
change, and a condition checked is still true when the change is made (a group is formed only
if its three tickets all still wait: exactly one replica forms it). The scripts only keep the
records; the decisions (who matches whom, which shard) are the caller's, in Python, once.

Keys (`P` is MACHIAVELOX_MATCHMAKING_KEY_PREFIX):
- `P:p:<player>`: where the player is (`q <ticket>`, `l <code>`, `t ` being seated, `t <table>`);
- `P:t:<ticket>`: a ticket (hash: player, ordinal, at, seq, watch, status, placement, queue,
  and once assigned table, shard, players); `P:q`: the waiting tickets (hash ticket -> JSON,
  one HGETALL for the matcher, ordered by (at, seq)); `P:qc`: the same for the ranked classic
  queue (issue 16; the ticket's `queue` is `qc`, absent or `q` for Machiavelox);
- `P:w:<watch>`: what a stream follows (`["q", ticket]` or `["l", code, player]`);
  `P:alive`: sorted set watch -> attached until (ms): kept alive by the replica holding the
  stream (`keepalive`), swept when it lapses (`sweep`);
- `P:l:<code>`: a friendly lobby (hash: kind, creator, created, players, table, shard,
  placing, `w:<player>` each member's stream; a classic table's also seats and classic:
  `queue.TableRules`, absent for Machiavelox); `P:lopen:<creator>`, `P:lage` (lobbies
  without a table by creation time), `P:lready` (full ones without a table), `P:ltable:<table>`;
- `P:pl:<placement>`: a placement (hash: its `store.Placement` as JSON, owner); `P:leases`:
  sorted set placement -> lease end (ms);
- `P:tb:<table>`: a seated table (its players and tickets); `P:tables`: the seated tables;
- `P:lseats`: seats taken at lobbies without a table; `P:seq`; `P:matcher`: the matching
  lease (`lead`: one replica matches at a time; the others only serve streams).

Outcomes for streams held by other replicas (a ticket assigned, cancelled, replaced; a lobby
placed or expired) are published on `P:events` by the script that makes them; every replica
subscribes (`start`) and finishes its own streams. Pub/sub delivers at most once: a replica
that was not subscribed at that moment lets its stream wait on; the app's re-attach (or the
next Waiting update's poll: `follow`) finds the ticket as it is.

Time is Redis's (`clock`, from TIME, advanced by this process's monotonic clock between
readings): tickets' ages, leases and lobby lifetimes are comparable between replicas without
comparing their clocks. Redis Cluster: every key of one agorà is in one slot only if the
prefix carries a hash tag (`{mxm}:`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from machiavelox.platform.coalesce import Coalesced
from machiavelox.rules import MatchKind

from .queue import (
    MACHIAVELOX,
    Lobby,
    Refused,
    Spot,
    TableRules,
    Ticket,
    UnknownCode,
    lobby_full,
    open_lobby_message,
    spot_refusal,
)
from .redis_scripts import SCRIPTS
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
    StoreUnavailableError,
    TicketState,
    UnknownTicket,
    Unplaced,
)

log = logging.getLogger(__name__)

_SWEEP_BATCH = 1_000
MAX_CONNECTIONS = 32  # to Redis, per replica
MAX_BATCH = 500  # items of one "many" script call
BATCH_WINDOW_S = 0.001  # while calls come this often, they go together (one call a window)
_RESYNC_S = 10.0  # how often the clock is read from Redis again
_CODE_TRIES = 8  # codes drawn per lobby creation (one free is enough)

_KINDS = {kind.value: kind for kind in MatchKind}


def _list(value: Any) -> list[Any]:
    """A JSON array from a script (cjson writes an empty one as {})."""
    return list(value) if isinstance(value, list) else []


def _rules(seats: Any, classic: Any) -> TableRules:
    """A lobby's or placement's rules as stored (absent: Machiavelox, as before rulesets)."""
    if not classic:
        return MACHIAVELOX
    return TableRules(int(seats), str(classic))


def placement_from(data: dict[str, Any]) -> Placement:
    return Placement(data["placement_id"], tuple(_list(data["players"])), _KINDS[data["kind"]],
                     bool(data["competitive"]), tuple(_list(data["tickets"])), data["code"],
                     data["state"], data["shard_id"], data["table_id"],
                     tuple(_list(data["refused"])),
                     _rules(data.get("seats"), data.get("classic")))


def placement_json(placement: Placement) -> str:
    return json.dumps({"placement_id": placement.placement_id,
                       "players": list(placement.players), "kind": placement.kind.value,
                       "competitive": placement.competitive,
                       "tickets": list(placement.tickets), "code": placement.code,
                       "state": placement.state, "shard_id": placement.shard_id,
                       "table_id": placement.table_id, "refused": list(placement.refused),
                       "seats": placement.rules.seats, "classic": placement.rules.classic})


def _spot(value: str) -> Spot:
    kind, _, ref = value.partition(" ")
    return Spot({"q": "queue", "l": "lobby"}.get(kind, "table"), ref)  # type: ignore[arg-type]


def _lobby(view: dict[str, str]) -> Lobby:
    return Lobby(view["code"], _KINDS[view["kind"]], view["creator"], int(view["created"]),
                 _list(json.loads(view.get("players") or "[]")), view.get("table", ""),
                 bool(view.get("placing")), _rules(view.get("seats"), view.get("classic")))


class RedisClock:
    """Redis's clock (ms since the epoch, from TIME), advanced by this process's monotonic
    clock between readings and never backwards: the one clock every replica shares."""

    def __init__(self) -> None:
        self._offset_ms: int | None = None
        self._last = 0

    def sync(self, redis_ms: int) -> None:
        self._offset_ms = redis_ms - time.monotonic_ns() // 1_000_000

    def __call__(self) -> int:
        if self._offset_ms is None:
            raise RuntimeError("the Redis clock was not read yet (RedisStore.start)")
        self._last = max(self._last, time.monotonic_ns() // 1_000_000 + self._offset_ms)
        return self._last


class RedisStore:
    shared = True

    def __init__(self, url: str, prefix: str, lobby_ttl_ms: int, attach_ms: int = ATTACH_MS,
                 lease_ms: int = LEASE_MS) -> None:
        self.prefix = prefix
        self.lobby_ttl_ms = lobby_ttl_ms
        self.attach_ms = attach_ms
        self.lease_ms = lease_ms
        self.clock = RedisClock()
        self.channel = f"{prefix}events"
        self._key = f"{prefix}q"  # every script's KEYS[1]
        self._classic_key = f"{prefix}qc"  # the ranked classic queue (issue 16)
        # A bounded pool: a burst of calls waits for a connection (at most 5 s) rather than
        # opening one each; the events subscription holds one of them.
        self._redis = aioredis.Redis(connection_pool=aioredis.BlockingConnectionPool.from_url(
            url, max_connections=MAX_CONNECTIONS, timeout=5, decode_responses=True,
            socket_timeout=5.0, socket_connect_timeout=5.0, health_check_interval=10,
            client_name="machiavelox-matchmaking"))
        scripts = SCRIPTS
        self._scripts = {name: self._redis.register_script(lua)
                         for name, lua in scripts.items()}
        # The calls of one "many" script (`redis_scripts.MANY`) go to Redis together (a
        # burst of Enqueues, the placements of a round).
        self._many = {name: Coalesced(self._batch(name), MAX_BATCH, BATCH_WINDOW_S,
                                      lambda: StoreUnavailableError("cancelled"))
                      for name in ("add_ticket", "detach", "progress", "placed", "unplaced")}
        self._deliver: Callable[[str, Seated | str], None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._syncer: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._queue_len = 0
        self._lobby_seats = 0

    # ------------------------------------------------------------------ plumbing
    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        try:
            yield
        except ResponseError:  # (a script's own error: a bug, not an outage)
            raise
        except RedisError as exc:
            raise StoreUnavailableError(f"redis: {exc}") from exc

    async def _run(self, name: str, *args: str | int) -> Any:
        async with self._guard():
            return await self._scripts[name](keys=[self._key], args=[self.prefix, *args])

    def _batch(self, name: str) -> Callable[[list[tuple[str | int, ...]]], Awaitable[list[Any]]]:
        """A "many" script's send: every item's arguments in one call, an answer each."""
        async def send(items: list[tuple[str | int, ...]]) -> list[Any]:
            args = [value for item in items for value in item]
            return _list(json.loads(await self._run(name, len(items[0]), *args)))
        return send

    async def _json(self, name: str, *args: str | int) -> Any:
        return json.loads(await self._run(name, *args))

    async def start(self, timeout_s: float = 10.0) -> None:
        """Read Redis's clock and subscribe to the outcomes of other replicas."""
        await self._sync()
        self._listener = asyncio.create_task(self._listen(), name="agora-redis-listener")
        self._syncer = asyncio.create_task(self._resync(), name="agora-redis-clock")
        try:
            await asyncio.wait_for(self._subscribed.wait(), timeout_s)
        except TimeoutError:
            await self.close()
            raise StoreUnavailableError(f"no subscription to {self.channel} after "
                                        f"{timeout_s} s") from None

    async def _sync(self) -> None:
        async with self._guard():
            seconds, micros = await self._redis.time()
        self.clock.sync(int(seconds) * 1000 + int(micros) // 1000)

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(_RESYNC_S)
            try:
                await self._sync()
            except StoreUnavailableError as err:
                log.warning("could not read Redis's clock: %s", err)

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                async for message in pubsub.listen():
                    if message["type"] == "subscribe":
                        self._subscribed.set()
                        delay = 0.1
                    elif message["type"] == "message":
                        self._outcome(message["data"])
            except RedisError as exc:
                self._subscribed.clear()
                log.warning("agorà events subscription lost, retrying in %.1f s: %s", delay, exc)
            finally:
                with contextlib.suppress(RedisError):
                    await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    @staticmethod
    def _decode(what: Any) -> Seated | str:
        if isinstance(what, list):
            return Seated(what[1], what[2], tuple(_list(what[3])))
        return str(what)

    def _outcome(self, data: str) -> None:
        try:
            watch, what = json.loads(data)
            outcome = self._decode(what)
        except (ValueError, TypeError, IndexError):
            log.warning("an agorà event that does not decode: %.80r", data)
            return
        if self._deliver is not None:
            self._deliver(str(watch), outcome)

    def on_outcome(self, deliver: Callable[[str, Seated | str], None]) -> None:
        self._deliver = deliver

    async def close(self) -> None:
        for task in (self._listener, self._syncer):
            if task is not None:
                await stop_task(task)
        self._listener = self._syncer = None
        with contextlib.suppress(RedisError):
            await self._redis.aclose()

    # ------------------------------------------------------------------ competitive
    async def add_ticket(self, ticket: Ticket, watch_id: str) -> None:
        answer = await self._many["add_ticket"]((
            ticket.ticket_id, ticket.player, repr(ticket.ordinal), ticket.enqueued_ms, watch_id,
            ticket.enqueued_ms + self.attach_ms, "qc" if ticket.classic else "q"))
        if answer[0] == "spot":
            raise spot_refusal(ticket.player, _spot(answer[1]))

    async def attach(self, ticket_id: str, player: str, watch_id: str, now_ms: int
                     ) -> tuple[TicketState, str]:
        answer = await self._json("attach", ticket_id, player, watch_id,
                                  now_ms + self.attach_ms)
        if answer[0] == "unknown":
            raise UnknownTicket()
        if answer[0] == "notyours":
            raise NotYours()
        record, replaced = answer[1], answer[2]
        ticket = Ticket(ticket_id, player, float(record["ordinal"]), int(record["at"]),
                        record.get("queue") == "qc")
        seated = None
        if record.get("status") == "assigned":
            seated = Seated(record["table"], record["shard"],
                            tuple(_list(json.loads(record["players"]))))
        return TicketState(ticket, record["status"], seated), replaced

    async def detach(self, ticket_id: str, watch_id: str) -> Ticket | None:
        answer = _list(await self._many["detach"]((ticket_id, watch_id)))
        if not answer:
            return None
        return Ticket(ticket_id, answer[0], float(answer[1]), int(answer[2]),
                      len(answer) > 3 and answer[3] == "qc")

    async def cancel(self, ticket_id: str, player: str) -> Cancelled | None:
        answer = await self._json("cancel", ticket_id, player)
        if answer[0] == "notyours":
            raise NotYours()
        if answer[0] == "no":
            return None
        return Cancelled((answer[1],) if answer[1] else (), answer[0])

    async def waiting(self, classic: bool = False) -> list[Ticket]:
        async with self._guard(), self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._classic_key if classic else self._key)
            pipe.get(f"{self.prefix}lseats")
            raw, seats = await pipe.execute()
        entries = []
        for ticket_id, data in raw.items():
            player, ordinal, at, seq = json.loads(data)
            entries.append((int(at), int(seq), Ticket(ticket_id, player, float(ordinal),
                                                       int(at), classic)))
        entries.sort(key=lambda e: (e[0], e[1]))
        if not classic:  # (the gauges count the Machiavelox queue, as before)
            self._queue_len = len(entries)
            self._lobby_seats = int(seats or 0)
        return [e[2] for e in entries]

    async def form(self, groups: Sequence[Group], owner: str, now_ms: int
                   ) -> list[Placement]:
        args: list[str | int] = [owner, now_ms + self.lease_ms]
        by_id = {}
        for group in groups:
            queue = "qc" if group.tickets and group.tickets[0].classic else "q"
            args += [group.placement_id, queue, len(group.tickets),
                     *(t.ticket_id for t in group.tickets), *group.seats, group.rules.seats,
                     group.rules.classic]
            by_id[group.placement_id] = group
        formed = _list(await self._json("form", *args))
        out = []
        for placement_id in formed:
            group = by_id[placement_id]
            out.append(Placement(placement_id, group.seats, MatchKind.SINGLE, True,
                                 tickets=tuple(t.ticket_id for t in group.tickets),
                                 rules=group.rules))
        self._queue_len -= sum(len(p.tickets) for p in out if not p.rules.classic)
        return out

    # ------------------------------------------------------------------ friendly
    async def create_lobby(self, creator: str, kind: MatchKind, now_ms: int,
                           draw: Callable[[], str], rules: TableRules = MACHIAVELOX
                           ) -> tuple[Lobby, bool]:
        codes = [draw() for _ in range(_CODE_TRIES)]
        answer = await self._json("create_lobby", creator, kind.value, now_ms, rules.seats,
                                  rules.classic, *codes)
        if answer[0] == "open":
            raise Refused("lobby/open", open_lobby_message(
                creator, _KINDS[answer[1]], _rules(answer[2], answer[3])))
        if answer[0] == "nocode":
            raise RuntimeError("no free invite code found")
        return _lobby(answer[1]), answer[0] == "new"

    async def join_lobby(self, code: str, player: str, watch_id: str, now_ms: int
                         ) -> tuple[Lobby, str, str]:
        answer = await self._json("join_lobby", code, player, watch_id,
                                  now_ms + self.attach_ms)
        if answer[0] == "unknown":
            raise UnknownCode()
        if answer[0] == "full":
            raise lobby_full(int(answer[1]))
        if answer[0] == "spot":
            raise spot_refusal(player, _spot(answer[1]))
        view = answer[1]
        return _lobby(view), answer[2], view.get("shard", "")

    async def leave_lobby(self, code: str, player: str, watch_id: str) -> bool:
        return bool(await self._run("leave_lobby", code, player, watch_id))

    async def drop_lobby(self, code: str) -> bool:
        return bool(await self._run("drop_lobby", code))

    async def expire_lobbies(self, now_ms: int) -> list[tuple[Lobby, Outcome]]:
        answer = _list(await self._json("expire_lobbies", now_ms - self.lobby_ttl_ms))
        return [(_lobby(view), tuple(_list(watches))) for view, watches in answer]

    async def claim_lobbies(self, new_id: Callable[[], str], owner: str, now_ms: int
                            ) -> list[Placement]:
        answer = _list(await self._json("claim_lobbies", owner, now_ms + self.lease_ms,
                                        new_id()))
        return [placement_from(p) for p in answer]

    async def lobby(self, code: str) -> Lobby | None:
        async with self._guard():
            view: dict[str, str] = await self._redis.hgetall(  # type: ignore[assignment]
                f"{self.prefix}l:{code}")
        return _lobby({"code": code, **view}) if view else None

    # ------------------------------------------------------------------ placements
    async def progress(self, placement: Placement, owner: str, now_ms: int) -> bool:
        return bool(await self._many["progress"]((placement.placement_id, owner,
                                                  now_ms + self.lease_ms,
                                                  placement_json(placement))))

    async def placed(self, placement: Placement, seated: Seated, owner: str
                     ) -> Outcome | None:
        answer = await self._many["placed"]((placement.placement_id, owner, seated.table_id,
                                             seated.shard_id))
        return tuple(_list(answer[1])) if answer[0] == "ok" else None

    async def unplaced(self, placement: Placement, owner: str, now_ms: int
                       ) -> Unplaced | None:
        answer = await self._many["unplaced"]((placement.placement_id, owner, now_ms))
        if answer[0] != "ok":
            return None
        return Unplaced(tuple(_list(answer[1])), tuple(_list(answer[2])))

    async def stale(self, owner: str, now_ms: int) -> list[Placement]:
        answer = _list(await self._json("stale", owner, now_ms, now_ms + self.lease_ms))
        return [placement_from(json.loads(p)) for p in answer]

    # ------------------------------------------------------------------ seats
    async def release(self, table_id: str) -> tuple[str, ...]:
        return tuple(_list(await self._json("release", table_id)))

    async def seated_tables(self) -> list[str]:
        async with self._guard():
            tables: set[str] = await self._redis.smembers(  # type: ignore[assignment]
                f"{self.prefix}tables")
        return sorted(tables)

    async def where(self, player: str) -> Spot | None:
        async with self._guard():
            value: str | None = await self._redis.get(  # type: ignore[assignment]
                f"{self.prefix}p:{player}")
        return None if value is None else _spot(value)

    # ------------------------------------------------------------------ housekeeping
    async def keepalive(self, watch_ids: Sequence[str], placement_ids: Sequence[str],
                        owner: str, now_ms: int) -> list[tuple[str, Seated | str]]:
        queued, seats, moved = await self._json(
            "keepalive", owner, now_ms + self.attach_ms, now_ms + self.lease_ms,
            len(watch_ids), *watch_ids, *placement_ids)
        self._queue_len, self._lobby_seats = int(queued), int(seats)
        return [(str(watch), self._decode(what)) for watch, what in _list(moved)]

    async def sweep(self, now_ms: int) -> int:
        gone = 0
        for _ in range(100):  # (bounded: 100 batches a call)
            swept = int(await self._run("sweep", now_ms, _SWEEP_BATCH))
            gone += swept
            if swept < _SWEEP_BATCH:
                break
        return gone

    async def lead(self, owner: str, now_ms: int, lease_ms: int) -> bool:
        """This replica holds the matching lease (taken if free, renewed if its own)."""
        return bool(await self._run("lead", owner, lease_ms, now_ms))

    def queue_len(self) -> int:
        return self._queue_len

    def waiting_seats(self) -> int:
        return self._lobby_seats

    async def snapshot(self) -> Snapshot:
        P = self.prefix
        async with self._guard():
            placements = []
            async for key in self._redis.scan_iter(match=f"{P}pl:*", count=1_000):
                data = await self._redis.hget(key, "placement")
                if data:
                    placements.append(placement_from(json.loads(data)))
            tables = {}
            for table_id in await self._redis.smembers(f"{P}tables"):
                players = await self._redis.hget(f"{P}tb:{table_id!s}", "players")
                tables[str(table_id)] = tuple(_list(json.loads(players or "[]")))
            spots = {}
            async for key in self._redis.scan_iter(match=f"{P}p:*", count=1_000):
                value = await self._redis.get(key)
                if value is not None:
                    spots[str(key)[len(P) + 2:]] = _spot(str(value))
        waiting = tuple(t.ticket_id for t in [*await self.waiting(), *await self.waiting(True)])
        return Snapshot(tuple(sorted(placements, key=lambda p: p.placement_id)), tables, spots,
                        waiting)

    async def delete_all(self) -> int:
        """Delete every key of this prefix (tests, benchmarks); how many."""
        count = 0
        async with self._guard():
            async for key in self._redis.scan_iter(match=f"{self.prefix}*", count=1_000):
                count += await self._redis.delete(key)
        return count


async def stop_task(task: asyncio.Task[Any], limit_s: float = 5.0) -> None:
    """Cancel `task` and wait until it ends, cancelling again if the cancellation was absorbed
    (redis-py's asyncio client can absorb one that lands mid-command); at most `limit_s`."""
    deadline = time.monotonic() + limit_s
    while not task.done() and time.monotonic() < deadline:
        task.cancel()
        await asyncio.wait({task}, timeout=0.2)
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.warning("%s ended with %r", task.get_name(), task.exception())
