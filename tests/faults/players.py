"""An app's session in the fault tests: a PlayClient whose stream a task of its own reads,
keeping every event, sequence number and refusal it gets."""

from __future__ import annotations

import asyncio

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2
from tests.support.client import PlayClient

STEP_S = 20.0  # the longest any one expected message may take (reconnects included)
CLOSE_S = 5.0  # the longest a closed call's reader may take to end


class Player:
    """One app's session at one table: every event it got, in order. Its stream is read by a
    task of its own (a timed-out read would cancel the whole call)."""

    def __init__(self, client: PlayClient, table_id: str, seat: rules.Seat) -> None:
        self.client = client
        self.table_id = table_id
        self.seat = seat
        self.seqs: list[int] = []
        self.events: list[common_pb2.Event] = []
        self.refusals: list[str] = []
        self._inbox: asyncio.Queue[gateway_pb2.PlayResponse] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            self._inbox.put_nowait(await self.client.next(timeout=3_600))

    def take(self, response: gateway_pb2.PlayResponse) -> None:
        kind = response.WhichOneof("kind")
        if kind == "event":
            self.seqs.append(response.event.seq)
            self.events.append(response.event)
        elif kind == "refused":
            self.refusals.append(response.refused.refusal.code)

    async def next(self, timeout_s: float = STEP_S) -> gateway_pb2.PlayResponse:
        response = await asyncio.wait_for(self._inbox.get(), timeout_s)
        self.take(response)
        return response

    async def act(self, action: rules.Action, action_id: str = "",
                  timeout_s: float = STEP_S) -> gateway_pb2.PlayResponse:
        """Send `action` (with `action_id`: a resend); its ack or refusal (events meanwhile
        are kept)."""
        action_id = self.client.act(action, action_id)
        for _ in range(1_000):
            response = await self.next(timeout_s)
            kind = response.WhichOneof("kind")
            if kind == "ack" and response.ack.client_action_id == action_id:
                return response
            if kind == "refused" and response.refused.client_action_id == action_id:
                return response
        raise AssertionError(f"no answer to {action}")

    async def until_event(self, kind: str) -> common_pb2.Event:
        for _ in range(1_000):
            response = await self.next()
            if response.WhichOneof("kind") == "event" and response.event.kind == kind:
                return response.event
        raise AssertionError(f"no {kind} event")

    async def drain(self, quiet_s: float = 0.3) -> None:
        """Take what has come, until nothing comes for `quiet_s`."""
        for _ in range(1_000):
            try:
                await self.next(quiet_s)
            except TimeoutError:
                return

    async def close(self) -> None:
        """End the call first: its pending read then ends with it. (Cancelling the reader
        task while a message is arriving can leave grpc.aio's read, and so the cancellation,
        pending until another message comes: a test hung on that once in a few loaded runs.)"""
        await self.client.close()
        _, pending = await asyncio.wait({self._reader}, timeout=CLOSE_S)
        for task in pending:  # (bounded: the read did not end with its call)
            task.cancel()
        if not self._reader.done():
            await asyncio.wait({self._reader}, timeout=CLOSE_S)


async def acked(player: Player, action: rules.Action) -> None:
    response = await player.act(action)
    assert response.WhichOneof("kind") == "ack", response
