"""A classic Machiavelli bot on the network: it takes its seat at a friendly classic table with
the invite code (`invite.InviteBot`'s login and JoinFriendlyTable, unchanged) and plays it to
its end through the gateway's Play stream as an app does (docs/protocol.md, "Playing a classic
table through the gateway"), with a `ClassicBot` brain on the view the gateway sent.

- Every `classic_snapshot` is read back into the engine's `ClassicView`
  (`classic_codec.view_from_pb`): the bot sees exactly the player's view. On its turn it
  decides (the solver in a worker thread: the heartbeats go on), waits `think_s` (table
  pace: divided by `time_scale`), sends the `classic_action`; on its `Ack` or
  `ActionRefused` it tells the brain and asks for a fresh snapshot (`Resync`). Not its
  turn: it waits for the next `turn` event, or looks again after `idle_s`.
- Heartbeats every second (the sign of life that keeps absence away, A1).
- A dropped stream is resumed: a new Play stream with `Join{last_seq}` (exactly the events
  missed), a `Resync` for a view, and an action in flight sent again with the same
  `client_action_id` (idempotent: answered as the first time). At most `MAX_RESUMES`.
- A refusal is *predictable* when no event came between the snapshot the action was decided
  on and its refusal (the view held the reason: a bot bug); the gateway's own refusals
  (`player.GATEWAY_CODES`) never reached the table and are neither.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, gateway_pb2

from .classic_mind import ClassicBot
from .invite import InviteBot
from .player import GATEWAY_CODES
from .responses import unbatch

log = logging.getLogger(__name__)

MAX_RESUMES = 20
RESUME_PAUSE_S = 0.5
HEARTBEAT_S = 1.0
RETRIED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                     grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL})


# ---------------------------------------------------------------------------- the shell
@dataclass
class ClassicOutcome:
    player: str
    table_id: str
    seat: classic.Seat | None = None
    result: classic_pb2.ClassicSessionResult | None = None
    last_hand: classic_pb2.ClassicHandResult | None = None
    actions: int = 0
    refusals: int = 0
    races: int = 0  # refusals after something happened at the table (a clock, absence)
    predictable: list[str] = field(default_factory=list)  # refusals the view could predict
    resumes: int = 0
    decisions_ms: list[float] = field(default_factory=list)


class ClassicInviteBot(InviteBot):
    """A classic bot that joins a friendly classic table by code and plays it to its end.
    `drop_after`: cut the Play stream once after that many actions (fault injection for
    tests: the bot must resume)."""

    def __init__(self, name: str, channel: grpc.aio.Channel, code: str, think_s: float = 0.0,
                 time_scale: float = 1.0, max_game_s: float = 1800.0,
                 drop_after: int | None = None) -> None:
        super().__init__(name, channel, code, time_scale=time_scale, max_game_s=max_game_s)
        self.think_s = think_s
        self.drop_after = drop_after
        self._ids = itertools.count(1)

    async def run_classic(self) -> ClassicOutcome:
        metadata = (("authorization", f"Bearer {await self._login()}"),)
        table_id, players = await self._queue(metadata)
        out = ClassicOutcome(self.name, table_id, classic.Seat(players.index(self.name)))
        await asyncio.wait_for(self._play_classic(metadata, table_id, out), self.max_game_s)
        return out

    async def _play_classic(self, metadata: Any, table_id: str, out: ClassicOutcome) -> None:
        """Play streams until the session ends: a dropped one is resumed (bounded)."""
        state = _State()
        for attempt in range(MAX_RESUMES + 1):
            if attempt:
                out.resumes += 1
                await asyncio.sleep(RESUME_PAUSE_S)
            try:
                if await self._stream(metadata, table_id, out, state):
                    return
            except grpc.aio.AioRpcError as err:
                if err.code() not in RETRIED:
                    raise
                log.info("%s: Play stream ended (%s); resuming from seq %d", self.name,
                         err.code().name, state.seq)
        raise RuntimeError(f"{self.name}: the Play stream kept breaking")

    async def _stream(self, metadata: Any, table_id: str, out: ClassicOutcome,
                      state: _State) -> bool:
        """One Play stream; True once the session has ended."""
        requests: asyncio.Queue[gateway_pb2.PlayRequest] = asyncio.Queue()

        async def gen() -> AsyncIterator[gateway_pb2.PlayRequest]:
            while True:
                yield await requests.get()

        def send(**kind: Any) -> None:
            requests.put_nowait(gateway_pb2.PlayRequest(**kind))

        call = self.gateway.Play(gen(), metadata=metadata)
        send(join=gateway_pb2.Join(table_id=table_id, batched=True, last_seq=state.seq))
        if state.seq:
            send(resync=gateway_pb2.Resync())  # (a resume sends events only: a view to act on)
        if state.pending is not None:  # an action in flight: again, with the same id
            send(action=state.pending.request)

        async def heartbeats() -> None:
            while True:
                await asyncio.sleep(HEARTBEAT_S)
                send(heartbeat=gateway_pb2.Heartbeat())

        beating = asyncio.create_task(heartbeats())
        assert out.seat is not None
        brain = state.brain
        try:
            async for message in call:
                for response in unbatch(message):
                    kind = response.WhichOneof("kind")
                    if kind == "classic_snapshot":
                        snap = response.classic_snapshot
                        state.seq = max(state.seq, snap.seq)
                        view = classic_codec.view_from_pb(snap.view)
                        if view.phase == "ended":
                            out.result = snap.view.result
                            out.last_hand = snap.view.last_hand
                            return True
                        if brain is None:
                            variants = classic_codec.variants_from_pb(snap.view.variants)
                            brain = state.brain = ClassicBot(out.seat, variants)
                        if state.pending is not None or view.turn != out.seat:
                            continue
                        seen = time.monotonic()
                        action = await asyncio.to_thread(brain.decide, view)
                        if action is None:
                            continue
                        out.decisions_ms = [d.solve_ms for d in brain.decisions]
                        wait = self.think_s / self.time_scale - (time.monotonic() - seen)
                        await asyncio.sleep(max(0.0, wait))
                        request = gateway_pb2.ActionRequest(
                            client_action_id=f"{self.name}-{next(self._ids)}",
                            classic_action=classic_codec.action_to_pb(action))
                        state.pending = _Pending(request, action, state.seq)
                        out.actions += 1
                        send(action=request)
                        if self.drop_after is not None and out.actions == self.drop_after:
                            self.drop_after = None
                            return False  # (the network lost: resumed by the caller)
                    elif kind in ("ack", "refused"):
                        got = response.ack.client_action_id if kind == "ack" else \
                            response.refused.client_action_id
                        pending = state.pending
                        if not got:  # about the session (paced, table unreachable)
                            await asyncio.sleep(1.0)
                            send(resync=gateway_pb2.Resync())
                        elif pending is not None and got == pending.request.client_action_id:
                            state.pending = None
                            if kind == "ack" and brain is not None:
                                brain.accepted(pending.action)
                            elif brain is not None:
                                self._judge(out, pending, response.refused.refusal.code,
                                            state.seq)
                                brain.refused(pending.action)
                            send(resync=gateway_pb2.Resync())
                    elif kind == "event":
                        ev = response.event
                        state.seq = max(state.seq, ev.seq)
                        ours = ev.kind == "turn" and ev.player == classic_codec.seat_to_pb(
                            out.seat)
                        if ours or ev.kind in ("ended", "interrupted"):
                            send(resync=gateway_pb2.Resync())
        finally:
            beating.cancel()
            call.cancel()
        return False

    def _judge(self, out: ClassicOutcome, pending: _Pending, code: str, seq_now: int) -> None:
        out.refusals += 1
        if code in GATEWAY_CODES:
            return
        if seq_now == pending.seq:
            out.predictable.append(f"{type(pending.action).__name__}: {code}")
            log.warning("%s: refused %s (%s) on an unchanged table", out.player,
                        pending.action, code)
        else:
            out.races += 1


@dataclass
class _Pending:
    request: gateway_pb2.ActionRequest
    action: classic.ClassicAction
    seq: int  # the last event seen when it was decided


@dataclass
class _State:
    """What outlives one Play stream: the last event seen, the action in flight, the brain."""
    seq: int = 0
    pending: _Pending | None = None
    brain: ClassicBot | None = None
