"""One bot: logs in through the gateway, queues in the agorà, plays its table to the end.

A bot plays at a level: `basic` (today's bots: `strategy.next_action` on the wire view, an
action `interval_s` after each look) or `easy` / `medium` / `hard` (`mind.SolverBot` on the
same view read back with `codec.view_from_pb`, at the level's human-like pace, `levels.py`).
The brains are pure; this shell does the waiting (asyncio: the level's delay counted from when
the view was read; the solver runs in a worker thread, so the heartbeats go on), sends the
action, and tells the brain what became of it: an ack, or a refusal, after which it plans
again from the view as it is then (a race lost to a faster player, M6.4, is a normal outcome,
M5.0.1). The view is the last snapshot's kept current by the events (`viewkeeper.py`); the
shell asks for a snapshot (`Resync`, paced at the gateway) only when the keeper cannot apply
an event (a gap, a chain, an ending, `interrupted`, ...).

The levels' delays are table time: `time_scale` is the tables' rules clock speed
(MACHIAVELOX_TABLE_TIME_SCALE; 1 in production), so a bot keeps its pace in table time.

A refusal is *predictable* (`BotOutcome.predictable`) when nothing happened at the table
between the view the action was decided on and its refusal (no event at all: the view already
held the reason, a bot bug), a *race* (`BotOutcome.races`) otherwise; the gateway's own
refusals (pace, outages) never reached the table and are neither.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import (
    common_pb2,
    gateway_pb2,
    gateway_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
)

from .levels import BASIC, LEVEL_NAMES, LEVELS, Level
from .mind import SolverBot
from .responses import unbatch
from .strategy import Closing, next_action
from .viewkeeper import ViewKeeper

log = logging.getLogger(__name__)

MIN_LOOK_S = 0.1  # a leveled bot looks again no sooner
# refusals by the gateway itself (docs/protocol.md): the action never reached the table
GATEWAY_CODES = frozenset({"rate/limited", "table/unavailable", "table/journal"})
CALATA_ENDS = frozenset({"confirmed", "failed", "void", "cancelled"})


@dataclass
class BotOutcome:
    player: str
    table_id: str
    seat: rules.Seat
    result: common_pb2.SmazzataResult | None
    actions: int
    refusals: int
    level: str = BASIC
    races: int = 0  # refusals after the table moved under the decision (M6.4)
    predictable: list[str] = field(default_factory=list)  # refusals the view could predict
    resyncs: int = 0  # snapshots asked for (the keeper could not apply an event)
    events: int = 0


# ---------------------------------------------------------------------------- what events add
@dataclass
class TableNotes:
    """What the events said that the wire view does not carry: the tied players of a
    tiebreak (M10.2) and the ping-pong reservations (M6.5, held until the owner's calata
    ends); and the last event seen (`seq`)."""
    seq: int = 0
    tiebreak: tuple[rules.Seat, ...] | None = None  # None: not seen (view_from_pb infers it)
    reserved: dict[rules.Card, rules.Seat] = field(default_factory=dict)

    def event(self, ev: common_pb2.Event) -> None:
        self.seq = max(self.seq, ev.seq)
        if ev.kind == "tiebreak":
            self.tiebreak = tuple(rules.Seat(int(w[1]) - 1) for w in ev.detail.split()
                                  if w in ("p1", "p2", "p3"))
        elif ev.kind == "smazzata":  # a new deal (M13): nothing carries over
            self.tiebreak = None
            self.reserved.clear()
        elif ev.kind == "reserved" and ev.cards and ev.player:
            self.reserved[codec.card_from_pb(ev.cards[0])] = codec.seat_from_pb(ev.player)
        elif ev.kind in CALATA_ENDS and ev.player:
            owner = codec.seat_from_pb(ev.player)
            for card in [c for c, o in self.reserved.items() if o == owner]:
                del self.reserved[card]

    def view(self, msg: common_pb2.PlayerView) -> rules.PlayerView:
        """The engine's view of `msg` with what the events added."""
        owners = {codec.seat_from_pb(s.seat) for s in msg.seats if s.calata_open}
        reserved = tuple(sorted(((c, o) for c, o in self.reserved.items() if o in owners),
                                key=lambda kv: kv[0].index))  # (they end with its calata)
        return codec.view_from_pb(msg, self.tiebreak, reserved)


# ---------------------------------------------------------------------------- brains
@dataclass(frozen=True, slots=True)
class Step:
    action: rules.Action
    delay_s: float  # wall seconds after the view arrived


class Brain(Protocol):
    level: str

    def decide(self, view: rules.PlayerView) -> Step | None: ...
    def accepted(self, action: rules.Action) -> None: ...
    def refused(self, action: rules.Action) -> None: ...
    def idle_s(self) -> float: ...


@dataclass
class BasicBrain:
    """Today's bots: `strategy.next_action`, an action `interval_s` after each look."""
    seat: rules.Seat
    interval_s: float
    level: str = BASIC
    closing: Closing = field(default_factory=Closing)

    def decide(self, view: rules.PlayerView) -> Step | None:
        wire = codec.view_to_pb(view, "", view.phase, [s.status for s in view.seats])
        action = next_action(wire, self.seat, can_close=self.closing.met)  # M8.2
        return None if action is None else Step(action, self.interval_s)

    def accepted(self, action: rules.Action) -> None:
        self.closing.accepted(action)

    def refused(self, action: rules.Action) -> None:
        """Today's bot learns nothing from a refusal: its next look decides afresh."""

    def idle_s(self) -> float:
        return self.interval_s * 5


class LeveledBrain:
    """A `SolverBot` of a level on the view the gateway sent (and nothing else)."""

    def __init__(self, seat: rules.Seat, level: Level, time_scale: float, seed: int) -> None:
        self.level = level.name
        self.time_scale = time_scale
        self.bot = SolverBot(seat, level, seed=seed)

    def decide(self, view: rules.PlayerView) -> Step | None:
        decision = self.bot.decide(view)
        if decision is None:
            return None
        return Step(decision.action, decision.delay_ms / 1000 / self.time_scale)

    def accepted(self, action: rules.Action) -> None:
        self.bot.accepted(action)

    def refused(self, action: rules.Action) -> None:
        self.bot.refused(action)

    def idle_s(self) -> float:
        return max(MIN_LOOK_S, self.bot.level.idle_ms / 1000 / self.time_scale)


def make_brain(level: str, seat: rules.Seat, interval_s: float, time_scale: float,
               seed: int) -> Brain:
    if level == BASIC:
        return BasicBrain(seat, interval_s)
    return LeveledBrain(seat, LEVELS[level], time_scale, seed)


# ---------------------------------------------------------------------------- the shell
class Bot:
    def __init__(self, name: str, gateway: grpc.aio.Channel, matchmaking: grpc.aio.Channel,
                 interval_s: float = 0.2, max_game_s: float = 1800.0,
                 record: list[gateway_pb2.PlayResponse] | None = None, level: str = BASIC,
                 time_scale: float = 1.0) -> None:
        if level not in LEVEL_NAMES:
            raise ValueError(f"unknown level {level!r} (one of {', '.join(LEVEL_NAMES)})")
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.name = name
        self.gateway = gateway_pb2_grpc.GatewayServiceStub(gateway)
        self.matchmaking = matchmaking_pb2_grpc.MatchmakingServiceStub(matchmaking)
        self.interval_s = interval_s
        self.max_game_s = max_game_s
        self.level = level
        self.time_scale = time_scale
        self.brain: Brain | None = None  # made once the seat is known
        self._ids = itertools.count(1)
        self.record = record  # every message received, when given (tests)
        # tests: awaited after each decision, before its reaction delay (the action, the view)
        self.on_decided: Callable[[rules.Action, rules.PlayerView], Awaitable[None]] | None = None

    async def run(self) -> BotOutcome:
        metadata = (("authorization", f"Bearer {await self._login()}"),)
        table_id, players = await self._queue(metadata)
        seat = rules.Seat(players.index(self.name))
        self.brain = make_brain(self.level, seat, self.interval_s, self.time_scale,
                                seed=zlib.crc32(self.name.encode()))
        return await asyncio.wait_for(self._play(metadata, table_id, seat, self.brain),
                                      self.max_game_s)

    async def _login(self) -> str:
        """A token of the bot's player: the gateway's development Login."""
        login = await self.gateway.Login(gateway_pb2.LoginRequest(player=self.name), timeout=10)
        return str(login.token)

    async def _queue(self, metadata: Any) -> tuple[str, list[str]]:
        stream = self.matchmaking.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=metadata)
        async for update in stream:
            if update.update.WhichOneof("kind") == "assignment":
                a = update.update.assignment
                stream.cancel()
                return a.table_id, list(a.player_ids)
        raise RuntimeError("the queue closed without an assignment")

    async def _play(self, metadata: Any, table_id: str, seat: rules.Seat,
                    brain: Brain) -> BotOutcome:
        requests: asyncio.Queue[gateway_pb2.PlayRequest] = asyncio.Queue()
        inbox: asyncio.Queue[gateway_pb2.PlayResponse | None] = asyncio.Queue()

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

        async def read() -> None:
            try:
                async for message in call:
                    inbox.put_nowait(message)
            finally:
                inbox.put_nowait(None)

        beating = asyncio.create_task(heartbeats())
        reading = asyncio.create_task(read())
        out = BotOutcome(self.name, table_id, seat, None, 0, 0, level=brain.level)
        play = _Play(self, brain, out, requests)
        try:
            while True:
                wait = play.wait_s()
                try:
                    message = await asyncio.wait_for(inbox.get(), wait)
                except TimeoutError:
                    message = None if reading.done() and inbox.empty() else _LOOK
                if message is None:
                    break
                if message is not _LOOK and await play.take(message):
                    return out
                await play.look()
        finally:
            beating.cancel()
            reading.cancel()
            call.cancel()
        return out


_LOOK = gateway_pb2.PlayResponse()  # (no message: time to look again)


class _Play:
    """One bot's session at its table: the messages read, the view kept, the actions sent."""

    def __init__(self, bot: Bot, brain: Brain, out: BotOutcome,
                 requests: asyncio.Queue[gateway_pb2.PlayRequest]) -> None:
        self.bot, self.brain, self.out, self.requests = bot, brain, out, requests
        self.notes = TableNotes()
        self.keeper = ViewKeeper()
        self.pending: tuple[str, rules.Action, int] | None = None  # id, action, seq decided on
        self.asked = True  # a snapshot is on its way (the Join's)
        self.look_at: float | None = None  # when to decide next (None: after an answer)

    def resync(self) -> None:
        if not self.asked:
            self.asked = True
            self.out.resyncs += 1
            self.requests.put_nowait(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))

    async def take(self, message: gateway_pb2.PlayResponse) -> bool:
        """One message (a step); True when the table ended."""
        brain, out = self.brain, self.out
        judge: tuple[rules.Action, str, int] | None = None  # a refusal of ours
        for response in unbatch(message):
            if self.bot.record is not None:
                self.bot.record.append(response)
            kind = response.WhichOneof("kind")
            if kind == "snapshot":
                self.asked = False
                view = response.snapshot.view
                if view.phase == common_pb2.PHASE_ENDED:
                    out.result = view.result
                    return True
                self.notes.seq = response.snapshot.seq
                self.keeper.reset(self.notes.view(view), response.snapshot.seq)
                if not self.keeper.current:
                    self.resync()  # (a snapshot the keeper cannot read: the next one)
                if self.pending is None:
                    self.look_at = time.monotonic()
            elif kind == "refused" and not response.refused.client_action_id:
                # about the session: paced (rate/limited) or the table unreachable for a
                # while (table/unavailable): look again a little later; an action in flight
                # may never be answered (its shard died: docs/protocol.md, "Outages"), the
                # next snapshot says what became of it
                if response.refused.refusal.code == "table/unavailable":
                    if self.pending is not None:
                        brain.refused(self.pending[1])
                    self.pending = None
                await asyncio.sleep(1.0)
                self.asked = False
                self.resync()
            elif kind in ("ack", "refused"):
                got = response.ack.client_action_id if kind == "ack" else \
                    response.refused.client_action_id
                if self.pending is not None and got == self.pending[0]:
                    if kind == "ack":
                        brain.accepted(self.pending[1])
                    else:
                        out.refusals += 1
                        brain.refused(self.pending[1])
                        judge = (self.pending[1], response.refused.refusal.code,
                                 self.pending[2])
                    self.pending = None
                    self.look_at = time.monotonic()  # the table as it is now (M5.0.1)
            elif kind == "event":
                out.events += 1
                self.notes.event(response.event)
                if not self.keeper.apply(response.event):
                    self.resync()  # a gap, a chain, an ending, `interrupted`: a snapshot
        if judge is not None:  # after the whole step: its events came after the outcome
            _judge(out, *judge, seq_now=self.notes.seq)
        return False

    def wait_s(self) -> float | None:
        """How long to wait for a message before looking again (None: until one comes)."""
        if self.pending is not None or self.look_at is None or not self.keeper.current:
            return None  # an answer, or a snapshot, is on its way
        return max(0.001, self.look_at - time.monotonic())

    async def look(self) -> None:
        """Decide on the kept view when it is time, then send after the reaction delay."""
        if self.wait_s() is None or self.look_at is None or time.monotonic() < self.look_at:
            return
        view = self.keeper.view()
        seen, decided_seq = time.monotonic(), self.notes.seq
        step = await asyncio.to_thread(self.brain.decide, view)
        if step is None:
            self.look_at = time.monotonic() + self.brain.idle_s()
            return
        if self.bot.on_decided is not None:
            await self.bot.on_decided(step.action, view)
        await asyncio.sleep(max(0.0, step.delay_s - (time.monotonic() - seen)))
        action_id = f"{self.bot.name}-{next(self.bot._ids)}"
        self.pending = (action_id, step.action, decided_seq)
        self.look_at = None
        self.out.actions += 1
        self.requests.put_nowait(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id=action_id, action=codec.action_to_pb(step.action))))


def _judge(out: BotOutcome, action: rules.Action, code: str, decided_seq: int,
           seq_now: int) -> None:
    if code in GATEWAY_CODES:
        return
    if seq_now == decided_seq:
        out.predictable.append(f"{type(action).__name__}: {code}")
        log.warning("%s: refused %s (%s) on an unchanged table", out.player, action, code)
    else:
        out.races += 1
