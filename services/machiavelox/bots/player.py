"""One bot: logs in through the gateway, queues in the agorà, plays its table to the end.

A bot plays at a level: `basic` (today's bots: `strategy.next_action` on the wire view, an
action `interval_s` after each look) or `easy` / `medium` / `hard` (`mind.SolverBot` on the
same view read back with `codec.view_from_pb`, at the level's human-like pace, `levels.py`).
The brains are pure; the Play stream's shell (`stream.PlayStream`, shared with the classic
bot) does the waiting (asyncio: the level's delay counted from when the view was read; the
solver runs in a worker thread, so the heartbeats go on), sends the action, tells the brain what
became of it: an ack, or a refusal, after which it plans again from the view as it is then (a
race lost to a faster player, M6.4, is a normal outcome, M5.0.1), and resumes a dropped stream
(`Join{last_seq}`, the action in flight resent with its id). The view is the last snapshot's
kept current by the events (`viewkeeper.py`, `_Machiavelox` here); a snapshot (`Resync`, paced
at the gateway) is asked for only when the keeper cannot apply an event (a gap, a chain, an
ending, `interrupted`, ...).

The levels' delays are table time: `time_scale` is the tables' rules clock speed
(MACHIAVELOX_TABLE_TIME_SCALE; 1 in production), so a bot keeps its pace in table time.

A refusal is *predictable* (`BotOutcome.predictable`) when nothing happened at the table
between the view the action was decided on and its refusal (no event at all: the view already
held the reason, a bot bug), a *race* (`BotOutcome.races`) otherwise; the gateway's own
refusals (pace, outages) never reached the table and are neither (`stream.judge`).
"""

from __future__ import annotations

import asyncio
import logging
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
from .strategy import Closing, next_action
from .stream import PlayStream, Step, StreamLost
from .viewkeeper import ViewKeeper

log = logging.getLogger(__name__)

MIN_LOOK_S = 0.1  # a leveled bot looks again no sooner
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
    resumes: int = 0  # Play streams resumed after a drop (`stream.PlayStream`)


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
class Brain(Protocol):
    level: str

    def decide(self, view: rules.PlayerView) -> Step[rules.Action] | None: ...
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

    def decide(self, view: rules.PlayerView) -> Step[rules.Action] | None:
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

    def decide(self, view: rules.PlayerView) -> Step[rules.Action] | None:
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


# ---------------------------------------------------------------------------- the bot
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
        self.record = record  # every message received, when given (tests)
        self.drop_after: int | None = None  # tests: cut the stream once after that many actions
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
        out = BotOutcome(self.name, table_id, seat, None, 0, 0, level=brain.level)
        try:
            await PlayStream(self, metadata, table_id, _Machiavelox(self, brain, out),
                             out).play()
        except (grpc.aio.AioRpcError, StreamLost) as err:  # (unfinished: `result` None)
            log.warning("%s: its Play stream ended: %s", self.name, err)
        return out


class _Machiavelox:
    """The Machiavelox part of the bot's Play stream (`stream.Ruleset`): the last snapshot kept
    current by the events (`ViewKeeper`, with what the events add: `TableNotes`) and the
    brain."""
    snapshot_kind = "snapshot"

    def __init__(self, bot: Bot, brain: Brain, out: BotOutcome) -> None:
        self.bot, self.brain, self.out = bot, brain, out
        self.notes = TableNotes()
        self.keeper = ViewKeeper()

    @property
    def current(self) -> bool:
        return self.keeper.current

    def snapshot(self, response: gateway_pb2.PlayResponse) -> bool:
        view = response.snapshot.view
        if view.phase == common_pb2.PHASE_ENDED:
            self.out.result = view.result
            return True
        self.notes.seq = response.snapshot.seq
        self.keeper.reset(self.notes.view(view), response.snapshot.seq)
        return False

    def event(self, event: common_pb2.Event) -> None:
        self.notes.event(event)
        self.keeper.apply(event)  # (False: stale, `current` says so)

    def answered(self) -> None:
        """The kept view stays current: the step's events follow (or came) on the stream."""

    def resumed(self) -> None:
        """The keeper applies the missed events as they come (a gap makes it stale)."""

    def view(self) -> rules.PlayerView:
        return self.keeper.view()

    def decide(self, view: rules.PlayerView) -> Step[rules.Action] | None:
        return self.brain.decide(view)

    async def decided(self, action: rules.Action, view: rules.PlayerView) -> None:
        if self.bot.on_decided is not None:
            await self.bot.on_decided(action, view)

    def accepted(self, action: rules.Action) -> None:
        self.brain.accepted(action)

    def refused(self, action: rules.Action) -> None:
        self.brain.refused(action)

    def request(self, action_id: str, action: rules.Action) -> gateway_pb2.ActionRequest:
        return gateway_pb2.ActionRequest(client_action_id=action_id,
                                         action=codec.action_to_pb(action))

    def idle_s(self) -> float:
        return self.brain.idle_s()
