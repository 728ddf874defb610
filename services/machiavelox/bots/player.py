"""One bot: logs in through the gateway, queues in the agorà, plays its table to the end."""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import Any

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import (
    common_pb2,
    gateway_pb2,
    gateway_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)

from .responses import unbatch
from .strategy import next_action

log = logging.getLogger(__name__)


@dataclass
class BotOutcome:
    player: str
    table_id: str
    seat: rules.Seat
    result: common_pb2.SmazzataResult | None
    actions: int
    refusals: int


class Bot:
    def __init__(self, name: str, gateway: grpc.aio.Channel, matchmaking: grpc.aio.Channel,
                 interval_s: float = 0.2, max_game_s: float = 1800.0,
                 record: list[gateway_pb2.PlayResponse] | None = None) -> None:
        self.name = name
        self.gateway = gateway_pb2_grpc.GatewayServiceStub(gateway)
        self.matchmaking = matchmaking_pb2_grpc.MatchmakingServiceStub(matchmaking)
        self.interval_s = interval_s
        self.max_game_s = max_game_s
        self._ids = itertools.count(1)
        self.record = record  # every message received, when given (tests)

    async def run(self) -> BotOutcome:
        login = await self.gateway.Login(gateway_pb2.LoginRequest(player=self.name), timeout=10)
        metadata = (("authorization", f"Bearer {login.token}"),)
        table_id, players = await self._queue(metadata)
        seat = rules.Seat(players.index(self.name))
        return await asyncio.wait_for(self._play(metadata, table_id, seat), self.max_game_s)

    async def _queue(self, metadata: Any) -> tuple[str, list[str]]:
        stream = self.matchmaking.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=metadata)
        async for update in stream:
            if update.update.WhichOneof("kind") == "assignment":
                a = update.update.assignment
                stream.cancel()
                return a.table_id, list(a.player_ids)
        raise RuntimeError("the queue closed without an assignment")

    async def _play(self, metadata: Any, table_id: str, seat: rules.Seat) -> BotOutcome:
        requests: asyncio.Queue[gateway_pb2.PlayRequest] = asyncio.Queue()

        async def gen() -> Any:
            while True:
                yield await requests.get()

        call = self.gateway.Play(gen(), metadata=metadata)
        requests.put_nowait(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id,
                                                                         batched=True)))

        async def heartbeats() -> None:  # signs of life (M11.1), as an app sends them
            while True:
                await asyncio.sleep(1.0)
                requests.put_nowait(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))

        beating = asyncio.create_task(heartbeats())
        actions = refusals = 0
        drew = direct = False
        pending: tuple[str, rules.Action] | None = None
        try:
            async for message in call:
                for response in unbatch(message):
                    if self.record is not None:
                        self.record.append(response)
                    kind = response.WhichOneof("kind")
                    if kind == "snapshot":
                        view = response.snapshot.view
                        if view.phase == common_pb2.PHASE_ENDED:
                            return BotOutcome(self.name, table_id, seat, view.result, actions,
                                              refusals)
                        if pending is not None:
                            continue
                        action = next_action(view, seat, can_close=drew and direct)
                        if action is None:
                            await asyncio.sleep(self.interval_s * 5)
                            requests.put_nowait(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
                            continue
                        await asyncio.sleep(self.interval_s)
                        action_id = f"{self.name}-{next(self._ids)}"
                        pending = (action_id, action)
                        actions += 1
                        requests.put_nowait(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
                            client_action_id=action_id, action=codec.action_to_pb(action))))
                    elif kind == "refused" and not response.refused.client_action_id:
                        # about the session: paced (rate/limited) or the table unreachable for
                        # a while (table/unavailable): look again a little later; an action in
                        # flight may never be answered (its shard died: docs/protocol.md,
                        # "Outages"), the next snapshot says what became of it
                        if response.refused.refusal.code == "table/unavailable":
                            pending = None
                        await asyncio.sleep(1.0)
                        requests.put_nowait(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
                    elif kind in ("ack", "refused"):
                        got = response.ack.client_action_id if kind == "ack" else \
                            response.refused.client_action_id
                        if pending is not None and got == pending[0]:
                            if kind == "ack":
                                drew = drew or isinstance(pending[1], rules.Draw)
                                direct = direct or isinstance(pending[1], rules.Direct)
                            else:
                                refusals += 1
                            pending = None
                            requests.put_nowait(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
                    elif kind == "event" and response.event.kind in ("ended", "match-ended",
                                                                     "interrupted"):
                        requests.put_nowait(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
        finally:
            beating.cancel()
            call.cancel()
        return BotOutcome(self.name, table_id, seat, None, actions, refusals)
