"""A gateway's Connect stream to a shard, as the classic cluster tests drive it: items in,
and each player's snapshots, events and outcomes out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import grpc

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, table_pb2, table_pb2_grpc

STEP_S = 10.0  # the longest one read waits
MAX_READS = 400  # the most frames one `until` reads


@dataclass
class Seen:
    """What one player's session has received."""

    snapshots: list[classic_pb2.ClassicSnapshot] = field(default_factory=list)
    events: list[common_pb2.Event] = field(default_factory=list)
    acks: list[common_pb2.Ack] = field(default_factory=list)
    refusals: list[common_pb2.Refusal] = field(default_factory=list)
    plain: list[table_pb2.ShardItem] = field(default_factory=list)  # Machiavelox snapshots

    @property
    def seqs(self) -> list[int]:
        return [ev.seq for ev in self.events]


class ShardStream:
    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._out: asyncio.Queue[table_pb2.ConnectRequest | None] = asyncio.Queue()
        self._call = table_pb2_grpc.TableAuthorityServiceStub(channel).Connect(self._frames())
        self.seen: dict[str, Seen] = {}
        self._ids = 0

    async def _frames(self) -> AsyncIterator[table_pb2.ConnectRequest]:
        while (frame := await self._out.get()) is not None:
            yield frame

    def send(self, *items: table_pb2.GatewayItem) -> None:
        self._out.put_nowait(table_pb2.ConnectRequest(items=items))

    def subscribe(self, table_id: str, player: str, from_seq: int = 0) -> None:
        self.send(table_pb2.GatewayItem(table_id=table_id, player_id=player,
                                        subscribe=table_pb2.Subscribe(from_seq=from_seq)))

    def act(self, table_id: str, player: str, action: classic.ClassicAction) -> str:
        self._ids += 1
        action_id = f"{player}-{self._ids}"
        self.send(table_pb2.GatewayItem(
            table_id=table_id, player_id=player, action=table_pb2.ActionRequestItem(
                client_action_id=action_id, classic_action=classic_codec.action_to_pb(action))))
        return action_id

    def of(self, player: str) -> Seen:
        return self.seen.setdefault(player, Seen())

    def _take(self, item: table_pb2.ShardItem) -> None:
        seen = self.of(item.player_id)
        kind = item.WhichOneof("kind")
        if kind == "classic_snapshot":
            seen.snapshots.append(item.classic_snapshot)
        elif kind == "events":
            seen.events.extend(item.events.events)
        elif kind == "batch":
            if item.batch.HasField("ack"):
                seen.acks.append(item.batch.ack)
            if item.batch.HasField("refused"):
                seen.refusals.append(item.batch.refused.refusal)
            seen.events.extend(item.batch.events)
        elif kind == "refused":
            seen.refusals.append(item.refused.refusal)
        elif kind == "ack":
            seen.acks.append(item.ack)
        else:
            seen.plain.append(item)

    async def until(self, done: Callable[[], bool]) -> None:
        """Read frames until `done()` (bounded: MAX_READS frames, STEP_S each)."""
        for _ in range(MAX_READS):
            if done():
                return
            response = await asyncio.wait_for(self._call.read(), STEP_S)
            assert response is not grpc.aio.EOF, "the shard ended the stream"
            for item in response.items:
                self._take(item)
        raise AssertionError("the shard did not send what was awaited")

    async def outcome(self, player: str, action_id: str) -> common_pb2.Ack | common_pb2.Refusal:
        """The ack or refusal of `player`'s action `action_id`."""
        seen = self.of(player)
        acks, refusals = len(seen.acks), len(seen.refusals)
        await self.until(lambda: len(seen.acks) > acks or len(seen.refusals) > refusals)
        if len(seen.refusals) > refusals:
            return seen.refusals[-1]
        ack = seen.acks[-1]
        assert ack.client_action_id == action_id
        return ack

    async def snapshot(self, table_id: str, player: str) -> classic_pb2.ClassicView:
        """A fresh view for `player` (a subscription from nothing)."""
        seen = self.of(player)
        count = len(seen.snapshots)
        self.subscribe(table_id, player)
        await self.until(lambda: len(seen.snapshots) > count)
        return seen.snapshots[-1].view

    async def close(self) -> None:
        self._out.put_nowait(None)
        self._call.cancel()
