"""The capacity load generators of the cluster bench (helper processes it drives in JSON lines).

`LoadGen` plays the apps: three Play streams per table through a gateway. `ShardLoad` plays the
gateways: ONE multiplexed Connect stream to the shard carrying every table's items, batched into
frames, exactly as the gateway's ShardLink does; it measures what one shard process holds
without a gateway process competing for this machine's two cores (gateways are stateless and
scale out; the shard is the unit whose capacity matters). In both, every player acts about once
a second (open loop, at most MAX_OUTSTANDING actions outstanding): Declare and Undeclare of a
card in turn, and a Draw every CYCLE-th action; a round trip ends when the action's ack AND its
first event are back.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import json
import os
import random
import sys
from typing import Any

import grpc
from bench_common import (
    ACK,
    BATCH,
    CYCLE,
    DRAW,
    EVENT,
    MAX_HELPER_S,
    MAX_OUTSTANDING,
    PLAY,
    REFUSED,
    SHARD,
    action_bytes,
    event_seq,
    internal_channel,
    join_and_draw,
    now_ns,
    pair_actions,
    pct,
    step_of,
    token_for,
)

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.platform.outbox import Outbox

CONNECT = "/machiavelox.v1.TableAuthorityService/Connect"


class Player:
    __slots__ = ("by_seq", "call", "n", "pair", "pending", "table")

    def __init__(self, call: Any, table: int) -> None:
        self.call = call
        self.table = table
        self.pair: tuple[common_pb2.Action, common_pb2.Action] | None = None
        self.n = 0
        self.pending: dict[str, int] = {}  # action id -> send time (until the ack)
        self.by_seq: dict[int, int] = {}  # ack seq -> send time (until its first event)


class LoadGen:
    """Many Play streams in one process; every player acts about once a second."""

    def __init__(self, name: str, gateway: str, shard: str, per_conn: int) -> None:
        self.name = name
        self.gateway = gateway
        self.shard = shard
        self.per_conn = per_conn
        self.channels: list[grpc.aio.Channel] = []
        self.streams = 0
        self.players: list[Player] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.observed: list[tuple[Any, asyncio.Task[None]]] = []
        self.tables = 0
        self.active = 0
        self.period = 1.0
        self.done: list[tuple[int, int]] = []  # (send ns, latency ns) while recording
        self.recording = False
        self.refused = 0
        self.skipped = 0
        self.lags: list[float] = []

    def _channel(self) -> grpc.aio.Channel:
        if self.streams % self.per_conn == 0:  # a new connection of its own
            self.channels.append(grpc.aio.insecure_channel(
                self.gateway, options=[("grpc.use_local_subchannel_pool", 1)]))
        self.streams += 1
        return self.channels[-1]

    async def add(self, count: int) -> None:
        shard = internal_channel(self.shard, "matchmaking")  # tables are matchmaking's
        stub = table_pb2_grpc.TableAuthorityServiceStub(shard)
        try:
            first = self.tables
            for lo in range(first, first + count, 50):
                await asyncio.gather(*(self._table(stub, i)
                                       for i in range(lo, min(first + count, lo + 50))))
            self.tables = first + count
        finally:
            await shard.close()

    async def _table(self, stub: Any, index: int) -> None:
        table_id = f"{SHARD}.{self.name}t{index}"
        names = [f"{self.name}t{index}{s}" for s in ("a", "b", "c")]
        await stub.CreateTable(table_pb2.CreateTableRequest(
            table_id=table_id, player_ids=names, kind=table_pb2.MATCH_KIND_SINGLE), timeout=30)
        seats = (rules.Seat.P1, rules.Seat.P2, rules.Seat.P3)
        players = [Player(self._channel().stream_stream(PLAY)(metadata=token_for(n)), index)
                   for n in names]
        for p in players:  # one after another: each sees the others' draws, which it skips
            await join_and_draw(p.call, table_id, rules.Seat.P1, wait_card=False)
        cards = await asyncio.gather(*(self._drawn(p, seat)
                                       for p, seat in zip(players, seats, strict=True)))
        for p, seat, card in zip(players, seats, cards, strict=True):
            p.pair = pair_actions(seat, card)
            self.players.append(p)
            self.tasks.append(asyncio.create_task(self._read(p)))
            self.tasks.append(asyncio.create_task(self._send(p)))

    @staticmethod
    async def _drawn(p: Player, seat: rules.Seat) -> int:
        own = codec.seat_to_pb(seat)
        while True:
            for ev in step_of(await p.call.read())[2]:
                if ev.kind == "drew" and ev.player == own and ev.cards:
                    return int(ev.cards[0].index)

    async def _read(self, p: Player) -> None:
        call = p.call
        while True:
            message = await call.read()
            if message is grpc.aio.EOF:
                return
            tag = message[0]
            if tag == BATCH:
                self._batch(p, message)
            elif tag == EVENT:
                if p.by_seq:
                    sent = p.by_seq.pop(event_seq(message), None)
                    if sent is not None and self.recording:
                        self.done.append((sent, now_ns() - sent))
            elif tag == ACK:
                ack = gateway_pb2.PlayResponse.FromString(message).ack
                sent = p.pending.pop(ack.client_action_id, None)
                if sent is not None:
                    p.by_seq[ack.seq] = sent
            elif tag == REFUSED:
                refused = gateway_pb2.PlayResponse.FromString(message).refused
                sent = p.pending.pop(refused.client_action_id, None)
                if sent is not None:
                    self.refused += 1
                    if self.recording:
                        self.done.append((sent, now_ns() - sent))

    def _batch(self, p: Player, message: bytes) -> None:
        ack, refused, events = step_of(message)
        if ack is not None:
            sent = p.pending.pop(ack.client_action_id, None)
            if sent is not None:
                p.by_seq[ack.seq] = sent
        elif refused is not None:
            sent = p.pending.pop(refused.client_action_id, None)
            if sent is not None:
                self.refused += 1
                if self.recording:
                    self.done.append((sent, now_ns() - sent))
        if p.by_seq:
            for ev in events:
                sent = p.by_seq.pop(ev.seq, None)
                if sent is not None and self.recording:
                    self.done.append((sent, now_ns() - sent))

    async def _send(self, p: Player) -> None:
        loop = asyncio.get_running_loop()
        at = loop.time() + random.uniform(0, self.period)
        assert p.pair is not None
        while True:
            await asyncio.sleep(max(0.0, at - loop.time()))
            at += self.period * random.uniform(0.9, 1.1)
            if p.table >= self.active:
                continue
            if len(p.pending) + len(p.by_seq) >= MAX_OUTSTANDING:
                self.skipped += 1
                continue
            step = p.n % CYCLE
            p.n += 1
            action_id = str(p.n)
            action = DRAW if step == CYCLE - 1 else p.pair[step % 2]
            data = action_bytes(action_id, action)
            p.pending[action_id] = now_ns()
            await p.call.write(data)

    def outstanding(self) -> int:
        return sum(len(p.pending) + len(p.by_seq) for p in self.players if p.table < self.active)

    async def measure(self, seconds: float, grace: float = 1.0) -> dict[str, Any]:
        return await _measure(self, seconds, grace,
                              [(p.n, [*p.pending.values(), *p.by_seq.values()])
                               for p in self.players if p.table < self.active])

    async def observe(self, table_id: str, players: list[str]) -> None:
        """Join the given seats and only read (the silent players of measurement (b2))."""
        for name in players:
            call = self._channel().stream_stream(PLAY)(metadata=token_for(name))
            await join_and_draw(call, table_id, rules.Seat.P1, draw=False)
            self.observed.append((call, asyncio.create_task(self._drain(call))))

    async def unobserve(self) -> None:
        for call, task in self.observed:
            task.cancel()
            call.cancel()
        self.observed.clear()

    @staticmethod
    async def _drain(call: Any) -> None:
        while await call.read() is not grpc.aio.EOF:
            pass

    async def close(self) -> None:
        await self.unobserve()
        for task in self.tasks:
            task.cancel()
        for p in self.players:
            p.call.cancel()
        for ch in self.channels:
            await ch.close(grace=None)


class Actor:
    """One seat of a table, as a gateway sees it."""

    __slots__ = ("key", "n", "pair", "pending", "seat", "table")

    def __init__(self, table: int, table_id: str, player: str, seat: rules.Seat) -> None:
        self.table = table
        self.key = (table_id, player)
        self.seat = seat
        self.pair: tuple[common_pb2.Action, common_pb2.Action] | None = None
        self.n = 0
        self.pending: dict[str, int] = {}  # action id -> send time (until its ack + events)


def _item(key: tuple[str, str], **kind: Any) -> bytes:
    """A GatewayItem as a field of a ConnectRequest frame (frames are concatenations)."""
    data = table_pb2.GatewayItem(table_id=key[0], player_id=key[1], **kind).SerializeToString()
    size, head = len(data), bytearray(b"\x0a")
    while size > 0x7F:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + data


class ShardLoad:
    """Many tables' seats on ONE Connect stream to the shard: a gateway's worth of load."""

    def __init__(self, name: str, shard: str) -> None:
        self.name = name
        self.shard = shard
        self.channel = internal_channel(shard, "gateway")  # as a gateway: the Connect stream
        self.tables_channel = internal_channel(shard, "matchmaking")  # and CreateTable
        self.call: Any = None
        self.outbox: Outbox[list[bytes]] = Outbox(list)  # the gateway's flush policy
        self.actors: dict[tuple[str, str], Actor] = {}
        self.setup: dict[tuple[str, str], asyncio.Future[int]] = {}
        self.heap: list[tuple[float, int, tuple[str, str]]] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.tables = 0
        self.active = 0
        self.period = 1.0
        self.done: list[tuple[int, int]] = []
        self.recording = False
        self.refused = 0
        self.skipped = 0
        self.lags: list[float] = []
        self._ids = 0

    async def open(self) -> None:
        self.call = self.channel.stream_stream(CONNECT)()
        self.tasks += [asyncio.create_task(self._write()), asyncio.create_task(self._read()),
                       asyncio.create_task(self._schedule())]

    def _send(self, item: bytes) -> None:
        self.outbox.frame().append(item)

    async def _write(self) -> None:
        async def write(items: list[bytes]) -> None:
            await self.call.write(b"".join(items))

        await self.outbox.pump(write)

    async def _read(self) -> None:
        while True:
            data = await self.call.read()
            if data is grpc.aio.EOF:
                return
            arrived = now_ns()
            for item in table_pb2.ConnectResponse.FromString(data).items:
                if item.WhichOneof("kind") != "batch":
                    continue
                b = item.batch
                has_ack = b.HasField("ack")
                if not has_ack and not b.HasField("refused"):
                    continue  # another seat's step
                actor = self.actors[(item.table_id, item.player_id)]
                outcome = b.ack if has_ack else b.refused
                sent = actor.pending.pop(outcome.client_action_id, None)
                waiting = self.setup.pop(actor.key, None)
                if waiting is not None:
                    own = codec.seat_to_pb(actor.seat)
                    waiting.set_result(next(int(ev.cards[0].index) for ev in b.events
                                            if ev.kind == "drew" and ev.player == own))
                    continue
                if sent is None:
                    continue
                if not has_ack:
                    self.refused += 1
                if self.recording:
                    self.done.append((sent, arrived - sent))

    async def add(self, count: int) -> None:
        stub = table_pb2_grpc.TableAuthorityServiceStub(self.tables_channel)
        first = self.tables
        for lo in range(first, first + count, 100):
            await asyncio.gather(*(self._table(stub, i)
                                   for i in range(lo, min(first + count, lo + 100))))
        self.tables = first + count

    async def _table(self, stub: Any, index: int) -> None:
        table_id = f"{SHARD}.{self.name}t{index}"
        names = [f"{self.name}t{index}{s}" for s in ("a", "b", "c")]
        await stub.CreateTable(table_pb2.CreateTableRequest(
            table_id=table_id, player_ids=names, kind=table_pb2.MATCH_KIND_SINGLE), timeout=30)
        loop = asyncio.get_running_loop()
        actors = [Actor(index, table_id, n, seat) for n, seat in zip(names, rules.SEATS,
                                                                     strict=True)]
        for a in actors:
            self.actors[a.key] = a
            self._send(_item(a.key, subscribe=table_pb2.Subscribe(from_seq=0)))
        for a in actors:  # one after another, as the apps of LoadGen do
            drawn: asyncio.Future[int] = loop.create_future()
            self.setup[a.key] = drawn
            self._send(_item(a.key, action=table_pb2.ActionRequestItem(
                client_action_id="draw", action=DRAW)))
            a.pair = pair_actions(a.seat, await asyncio.wait_for(drawn, 60))
            heapq.heappush(self.heap, (loop.time() + random.uniform(0, self.period),
                                       id(a), a.key))

    async def _schedule(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            while self.heap and self.heap[0][0] <= now:
                at, ident, key = heapq.heappop(self.heap)
                heapq.heappush(self.heap, (at + self.period * random.uniform(0.9, 1.1),
                                           ident, key))
                a = self.actors[key]
                if a.table >= self.active or a.pair is None:
                    continue
                if len(a.pending) >= MAX_OUTSTANDING:
                    self.skipped += 1
                    continue
                step = a.n % CYCLE
                a.n += 1
                self._ids += 1
                action_id = str(self._ids)
                action = DRAW if step == CYCLE - 1 else a.pair[step % 2]
                a.pending[action_id] = now_ns()
                self._send(_item(key, action=table_pb2.ActionRequestItem(
                    client_action_id=action_id, action=action)))
            delay = self.heap[0][0] - loop.time() if self.heap else 0.05
            await asyncio.sleep(max(0.0, min(delay, 0.05)))

    def outstanding(self) -> int:
        return sum(len(a.pending) for a in self.actors.values() if a.table < self.active)

    async def measure(self, seconds: float, grace: float = 1.0) -> dict[str, Any]:
        return await _measure(self, seconds, grace,
                              [(a.n, a.pending.values()) for a in self.actors.values()
                               if a.table < self.active])

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        if self.call is not None:
            self.call.cancel()
        await self.channel.close(grace=None)
        await self.tables_channel.close(grace=None)


async def _lag(gen: Any, seconds: float) -> None:
    """The event loop's lateness: how much later than asked a 10 ms sleep wakes up."""
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        t0 = loop.time()
        await asyncio.sleep(0.01)
        gen.lags.append((loop.time() - t0 - 0.01) * 1000)


async def _measure(gen: Any, seconds: float, grace: float,
                   seats: Any = None) -> dict[str, Any]:
    """One measurement window: every round trip of an action sent in it (an action still
    unanswered `grace` s after the window counts at its age)."""
    gen.done.clear()
    gen.lags.clear()
    refused0, skipped0 = gen.refused, gen.skipped
    gen.recording = True
    begin = now_ns()
    lag_task = asyncio.create_task(_lag(gen, seconds))
    await asyncio.sleep(seconds)
    end = now_ns()
    await asyncio.sleep(grace)
    gen.recording = False
    await lag_task
    if seats is None:
        seats = gen.seats()
    late = [now_ns() - sent for _, pending in seats for sent in pending if begin <= sent < end]
    lat = [d for sent, d in gen.done if begin <= sent < end]
    counts = [n for n, _ in seats]
    calate = sum(n // CYCLE * (CYCLE // 2) + (n % CYCLE + 1) // 2
                 for n in counts) / max(1, len(counts) // 3)
    return {"lat": [round(d / 1e6, 3) for d in lat + late], "done": len(lat),
            "calate": calate, "tables": len(counts) // 3,
            "late": len(late), "refused": gen.refused - refused0,
            "skipped": gen.skipped - skipped0, "lag_p99": pct(gen.lags, 99)}


async def loadgen_main(args: argparse.Namespace) -> None:
    gen: LoadGen | ShardLoad
    if args.via == "shard":
        gen = ShardLoad(args.name, args.shard)
        await gen.open()
    else:
        gen = LoadGen(args.name, args.gateway, args.shard, args.per_conn)

    async def watchdog() -> None:
        await asyncio.sleep(MAX_HELPER_S)
        os._exit(3)

    guard = asyncio.create_task(watchdog())

    def reply(value: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(value) + "\n")
        sys.stdout.flush()

    print("ready", flush=True)
    try:
        while True:
            line = await asyncio.to_thread(sys.stdin.readline)
            if not line:
                break
            command = json.loads(line)
            cmd = command["cmd"]
            if cmd == "add":
                await gen.add(command["tables"])
                reply({"ok": True, "tables": gen.tables})
            elif cmd == "active":
                gen.active = command["tables"]
                reply({"ok": True})
            elif cmd == "status":
                reply({"outstanding": gen.outstanding(), "tables": gen.tables})
            elif cmd == "measure":
                reply(await gen.measure(command["seconds"]))
            elif cmd == "observe":
                assert isinstance(gen, LoadGen), "observers play through the gateway"
                await gen.observe(command["table"], command["players"])
                reply({"ok": True})
            elif cmd == "unobserve":
                if isinstance(gen, LoadGen):
                    await gen.unobserve()
                reply({"ok": True})
            elif cmd == "stop":
                break
    finally:
        guard.cancel()
        await gen.close()

