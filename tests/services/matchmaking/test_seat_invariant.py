"""A player is seated at one table at most, always, and no table is left that nobody will
cancel (issue 13 item 3): a Hypothesis state machine over random interleavings of queueing,
matching ticks, shards that stall (answers lost, requests delivered late or never), placers
that crash mid-call or between ticks (the store kept, the process's state lost), retries,
results and lost tables.

The fake shards follow the real shard's rules (table/service.py, table/shard.py): CreateTable
is idempotent by table id and refused for a cancelled id; CancelTable cancels a table nobody
played at (a tombstone for an id it never saw), refuses one played at or ended. A stalled
shard answers nothing for sure: the request is held, and delivered later or dropped.

Checked after every step:
- no player is at two live tables (cancelled and ended ones are not live);
- every live table is either the table the store seats its players at, or the table of a
  placement the store still holds (whoever resolves it will cancel it: no orphan forgotten);
- nobody is both seated and waiting, nor in two placements.
And at the end, once every shard answers again and every lease ran out: every live table is
seated (each orphan was cancelled) and every seated table is live.

Fails without cancelling on an unsure answer (a twin on the next shard), without tombstones
(a late CreateTable after its CancelTable), and without the takeover of stale placements.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from machiavelox.matchmaking.agora import Agora, MatchResult
from machiavelox.matchmaking.memory_store import MemoryStore
from machiavelox.matchmaking.placing import Answer, Load
from machiavelox.matchmaking.queue import Refused, Spot, Ticket
from machiavelox.matchmaking.redis_store import RedisStore
from machiavelox.matchmaking.seatcheck import SeatCheck
from machiavelox.matchmaking.store import AgoraStore, Placement, Snapshot
from machiavelox.platform.ratings import Ratings

PLAYERS = [f"p{i}" for i in range(7)]
REDIS = "redis://127.0.0.1:6379/0"
SHARDS = ("s0", "s1")
LEASE_MS = 3_000
ATTACH_MS = 60_000  # (the apps keep their tickets attached in this model)


# How often each kind of step comes (a step is one of them, drawn from this list).
ACTIONS = (["enqueue"] * 3 + ["tick"] * 4 + ["shard_mode"] * 2 + ["held_request"] * 2
           + ["die"] + ["table_event"] * 3)


class Crash(BaseException):  # (a process dying, not an error: nothing catches it)
    """The placer's process dies in the middle of a call to a shard."""


@dataclass
class Table:
    players: tuple[str, ...]
    state: Literal["live", "ended", "cancelled"] = "live"
    acted: bool = False


@dataclass
class Held:
    """A request a stalled shard holds: delivered later, or never."""

    shard: str
    kind: Literal["create", "cancel"]
    table_id: str
    players: tuple[str, ...]


@dataclass
class Shard:
    mode: Literal["ok", "stall", "crash"] = "ok"
    tables: dict[str, Table] = field(default_factory=dict)
    tombstones: set[str] = field(default_factory=set)

    def create(self, table_id: str, players: tuple[str, ...]) -> Answer:
        if table_id in self.tombstones:
            return Answer("refused", "table/cancelled")
        self.tables.setdefault(table_id, Table(players))
        return Answer("created")

    def cancel(self, table_id: str) -> Answer:
        self.tombstones.add(table_id)
        table = self.tables.get(table_id)
        if table is None or table.state == "cancelled":
            return Answer("gone")
        if table.state == "ended" or table.acted:
            self.tombstones.discard(table_id)
            return Answer("kept", "table/in-play")
        table.state = "cancelled"
        return Answer("gone")


class FakeShards:
    def __init__(self) -> None:
        self.shards = {sid: Shard() for sid in SHARDS}
        self.held: list[Held] = []
        self.crash_applies = False  # (a crashing call: applied before the process dies?)

    async def loads(self) -> dict[str, Load]:
        return {sid: Load(sum(t.state == "live" for t in s.tables.values()), 0, False)
                for sid, s in self.shards.items()}

    async def create(self, shard_id: str, table_id: str, placement: Placement) -> Answer:
        shard = self.shards[shard_id]
        if shard.mode == "stall":
            self.held.append(Held(shard_id, "create", table_id, placement.players))
            return Answer("unsure", "DEADLINE_EXCEEDED")
        if shard.mode == "crash":
            shard.mode = "ok"
            if self.crash_applies:
                shard.create(table_id, placement.players)
            raise Crash()
        return shard.create(table_id, placement.players)

    async def cancel(self, shard_id: str, table_id: str, placement_id: str) -> Answer:
        shard = self.shards[shard_id]
        if shard.mode == "stall":
            self.held.append(Held(shard_id, "cancel", table_id, ()))
            return Answer("unsure", "DEADLINE_EXCEEDED")
        return shard.cancel(table_id)

    def deliver(self, held: Held) -> None:
        shard = self.shards[held.shard]
        if held.kind == "create":
            shard.create(held.table_id, held.players)
        else:
            shard.cancel(held.table_id)

    def live(self) -> dict[str, Table]:
        return {tid: t for s in self.shards.values() for tid, t in s.tables.items()
                if t.state == "live"}

    async def missing(self, shard_id: str, table_ids: Sequence[str]) -> list[str] | None:
        if self.shards[shard_id].mode != "ok":
            return None
        known = self.shards[shard_id].tables
        return [t for t in table_ids if t not in known or known[t].state == "cancelled"]


@settings(max_examples=300, stateful_step_count=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
class Placements(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.now = 1_000_000
        self.store: AgoraStore = self.new_store()
        self.shards = FakeShards()
        self.ids = (f"x{i}" for i in itertools.count())
        self.watches: dict[str, str] = {}  # ticket -> its app's watch
        self.agora = self.new_agora()

    def new_store(self) -> AgoraStore:
        return MemoryStore(attach_ms=ATTACH_MS, lease_ms=LEASE_MS)

    def new_agora(self) -> Agora:
        return Agora(Ratings(), self.shards, lambda: self.now, 5.0, 1.0, update_s=0.5,
                     store=self.store, new_placement_id=lambda: next(self.ids),
                     retry_s=0.5)

    def run(self, work: object) -> object:
        return self.loop.run_until_complete(work)  # type: ignore[arg-type]

    def teardown(self) -> None:
        try:
            self.settle()
        finally:
            self.run(self.close_store())
            self.loop.close()

    async def close_store(self) -> None:
        await self.store.close()

    # ------------------------------------------------------------------ rules
    @rule(action=st.sampled_from(ACTIONS), data=st.data())
    def step(self, action: str, data: st.DataObject) -> None:
        getattr(self, action)(data)

    def enqueue(self, data: st.DataObject) -> None:
        players = data.draw(st.lists(st.sampled_from(PLAYERS), min_size=1, max_size=4,
                                     unique=True))
        for player in players:
            ticket = Ticket(next(self.ids), player, 0.0, self.now)
            watch = f"w-{ticket.ticket_id}"
            try:
                self.run(self.store.add_ticket(ticket, watch))
            except Refused:
                continue
            self.watches[ticket.ticket_id] = watch

    def tick(self, data: st.DataObject | None = None) -> None:
        self.now += data.draw(st.sampled_from([0, 100, 600, 2_000, 4_000])) if data else 0
        self.run(self.store.keepalive(list(self.watches.values()), [], "apps", self.now))
        try:
            self.run(self.agora.match_once())
        except Crash:
            self.die()

    def die(self, data: st.DataObject | None = None) -> None:
        """The placer's process dies: its state is gone. (The calls of its round other than
        the one that crashed end first: whether a Redis script cut by a cancellation ran is a
        race, and the test must replay the same way.)"""
        tasks = {t for t in asyncio.all_tasks(self.loop)
                 if not t.get_name().startswith("agora-redis")}
        if tasks:
            self.run(asyncio.wait(tasks, timeout=10))
        self.agora = self.new_agora()

    def shard_mode(self, data: st.DataObject) -> None:
        shard = self.shards.shards[data.draw(st.sampled_from(SHARDS))]
        shard.mode = data.draw(st.sampled_from(["ok", "ok", "stall", "crash"]))
        self.shards.crash_applies = data.draw(st.booleans())

    def held_request(self, data: st.DataObject) -> None:
        if self.shards.held:
            held = self.shards.held.pop(data.draw(st.integers(0, len(self.shards.held) - 1)))
            if data.draw(st.booleans()):  # late, maybe after its CancelTable
                self.shards.deliver(held)

    def table_event(self, data: st.DataObject) -> None:
        """At a seated table: a player acts, the match ends (its result applied), or its
        shard loses it (the seat check frees its players)."""
        seated = self.seated()
        if not seated:
            return
        table_id = data.draw(st.sampled_from(sorted(seated)))
        table = self.table(table_id)
        what = data.draw(st.sampled_from(["play", "result", "result", "lose"]))
        if what == "play":
            table.acted = True
        elif what == "result":
            table.state = "ended"
            self.run(self.agora.apply_result(MatchResult(table_id, table.players, (0, 0, 0),
                                                         True, True)))
        elif self.shards.shards[table_id.partition(".")[0]].mode == "ok":
            del self.shards.shards[table_id.partition(".")[0]].tables[table_id]
            check = SeatCheck(self.store.seated_tables, self.shards, self.agora.end_table)
            self.run(check.check_once())
            self.run(check.check_once())

    # ------------------------------------------------------------------ model
    def seated(self) -> dict[str, tuple[str, ...]]:
        """The tables the store seats players at that are live on their shard."""
        live = self.shards.live()
        tables = self.run(self.store.seated_tables())
        assert isinstance(tables, list)
        return {t: live[t].players for t in tables if t in live}

    def table(self, table_id: str) -> Table:
        return self.shards.shards[table_id.partition(".")[0]].tables[table_id]

    # ------------------------------------------------------------------ invariants
    @invariant()
    def one_live_table_per_player(self) -> None:
        at: dict[str, list[str]] = {}
        for table_id, table in self.shards.live().items():
            for player in table.players:
                at.setdefault(player, []).append(table_id)
        doubled = {p: t for p, t in at.items() if len(t) > 1}
        assert not doubled, f"players at two live tables: {doubled}"

    def snapshot(self) -> Snapshot:
        snap = self.run(self.store.snapshot())
        assert isinstance(snap, Snapshot)
        return snap

    @invariant()
    def no_live_table_is_forgotten(self) -> None:
        snap = self.snapshot()
        pending = {p.table_id for p in snap.placements if p.table_id}
        pending |= {f"{sid}.{p.placement_id}" for p in snap.placements
                    for sid in SHARDS}  # (any shard a held request may still reach)
        for table_id, table in self.shards.live().items():
            if table_id in snap.tables:
                assert snap.tables[table_id] == table.players
                continue
            assert table_id in pending, f"{table_id} is live, seated nowhere, placed by nobody"

    @invariant()
    def each_player_in_one_place(self) -> None:
        snap = self.snapshot()
        placing = [p for pl in snap.placements for p in pl.players]
        assert len(placing) == len(set(placing)), "a player in two placements"
        for player in placing:
            assert snap.spots.get(player) == Spot("table", ""), snap.spots.get(player)

    def settle(self) -> None:
        """Every shard answers, held requests come or not, leases run out, ticks run."""
        for shard in self.shards.shards.values():
            shard.mode = "ok"
        for held in self.shards.held:
            self.shards.deliver(held)
        self.shards.held.clear()
        for _ in range(6):
            self.now += LEASE_MS + 1
            self.tick()
        seated = set(self.run(self.store.seated_tables()))  # type: ignore[call-overload]
        live = self.shards.live()
        assert set(live) <= seated, f"orphans left: {set(live) - seated}"
        assert seated <= set(live), f"seated at tables that are not live: {seated - set(live)}"


TestPlacements = Placements.TestCase


class RedisPlacements(Placements):
    """The same, on the Redis store (a fresh key prefix per example, deleted after)."""

    def new_store(self) -> AgoraStore:
        store = RedisStore(REDIS, f"test-seats-{secrets.token_hex(4)}:", 60_000,
                           attach_ms=ATTACH_MS, lease_ms=LEASE_MS)
        self.run(store.start())
        return store

    async def close_store(self) -> None:
        assert isinstance(self.store, RedisStore)
        await self.store.delete_all()
        await self.store.close()


TestRedisPlacements = RedisPlacements.TestCase
TestRedisPlacements.settings = settings(max_examples=60, stateful_step_count=60, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
