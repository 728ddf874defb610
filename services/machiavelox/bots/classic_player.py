"""A classic Machiavelli bot on the network: it takes its seat at a friendly classic table with
the invite code (`invite.InviteBot`'s login and JoinFriendlyTable, unchanged) and plays it to
its end through the gateway's Play stream as an app does (docs/protocol.md, "Playing a classic
table through the gateway"), with a `ClassicBot` brain on the view the gateway sent.

The stream is the Machiavelox bot's shell (`stream.PlayStream`: the Join, heartbeats every
second, the action in flight and its answer, the session's own refusals, a dropped stream
resumed with `Join{last_seq}` and the action in flight sent again with the same
`client_action_id`, at most `stream.MAX_RESUMES` times); what is classic's is `_Classic` here:

- Every `classic_snapshot` is read back into the engine's `ClassicView`
  (`classic_codec.view_from_pb`): the bot sees exactly the player's view. On its turn it
  decides (the solver in a worker thread: the heartbeats go on), waits `think_s` (table
  pace: divided by `time_scale`), sends the `classic_action`; on its `Ack` or
  `ActionRefused` it tells the brain and asks for a fresh snapshot (`Resync`). Not its
  turn: it waits for its next `turn` event, which asks for one too (as do the session's end,
  `interrupted`, and a resume: it sends events only).
- A refusal is *predictable* when no event came between the snapshot the action was decided
  on and its refusal (the view held the reason: a bot bug); the gateway's own refusals
  (`stream.GATEWAY_CODES`) never reached the table and are neither (`stream.judge`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import grpc

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, gateway_pb2

from .classic_mind import ClassicBot
from .invite import InviteBot
from .stream import PlayStream, Step


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
    resyncs: int = 0  # snapshots asked for
    events: int = 0


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

    async def run_classic(self) -> ClassicOutcome:
        metadata = (("authorization", f"Bearer {await self._login()}"),)
        table_id, players = await self._queue(metadata)
        out = ClassicOutcome(self.name, table_id, classic.Seat(players.index(self.name)))
        stream = PlayStream(self, metadata, table_id, _Classic(self, out), out)
        await asyncio.wait_for(stream.play(), self.max_game_s)
        return out


class _Classic:
    """The classic part of the bot's Play stream (`stream.Ruleset`): the last snapshot, current
    until the bot's own action is answered, its own turn begins, the session ends or is
    interrupted, or the stream is resumed; the brain, made from the first snapshot's
    variants."""
    snapshot_kind = "classic_snapshot"

    def __init__(self, bot: ClassicInviteBot, out: ClassicOutcome) -> None:
        assert out.seat is not None
        self.bot, self.out, self.seat = bot, out, out.seat
        self.brain: ClassicBot | None = None
        self.current = False
        self._view: classic.ClassicView | None = None

    def snapshot(self, response: gateway_pb2.PlayResponse) -> bool:
        snap = response.classic_snapshot
        view = classic_codec.view_from_pb(snap.view)
        if view.phase == "ended":
            self.out.result = snap.view.result
            self.out.last_hand = snap.view.last_hand
            return True
        if self.brain is None:
            variants = classic_codec.variants_from_pb(snap.view.variants)
            self.brain = ClassicBot.named(self.seat, variants, self.bot.level)
        self._view, self.current = view, True
        return False

    def event(self, event: common_pb2.Event) -> None:
        ours = event.kind == "turn" and event.player == classic_codec.seat_to_pb(self.seat)
        if ours or event.kind in ("ended", "interrupted"):
            self.current = False

    def answered(self) -> None:
        self.current = False  # a fresh snapshot after each outcome

    def resumed(self) -> None:
        self.current = False

    def view(self) -> classic.ClassicView:
        assert self._view is not None
        return self._view

    def decide(self, view: classic.ClassicView) -> Step[classic.ClassicAction] | None:
        if self.brain is None or view.turn != self.seat:
            return None
        action = self.brain.decide(view)
        return None if action is None else Step(action, self.bot.think_s / self.bot.time_scale)

    async def decided(self, action: classic.ClassicAction, view: classic.ClassicView) -> None:
        if self.brain is not None:
            self.out.decisions_ms = [d.solve_ms for d in self.brain.decisions]

    def accepted(self, action: classic.ClassicAction) -> None:
        if self.brain is not None:
            self.brain.accepted(action)

    def refused(self, action: classic.ClassicAction) -> None:
        if self.brain is not None:
            self.brain.refused(action)

    def request(self, action_id: str, action: classic.ClassicAction
                ) -> gateway_pb2.ActionRequest:
        return gateway_pb2.ActionRequest(client_action_id=action_id,
                                         classic_action=classic_codec.action_to_pb(action))

    def idle_s(self) -> None:
        return None  # (the next look: the snapshot its own turn asks for)
