"""A network bot's Play stream, one shell for both rulesets (docs/protocol.md: "Play", "Batched
sessions", "Resuming after a dropped connection", "Resending an unanswered action", "Outages";
docs/bots.md, "On the network").

`PlayStream` does what every app does on the stream; what belongs to the ruleset (a snapshot
read into the brain's view, the events applied to the kept view, deciding, an action encoded)
is a `Ruleset`'s: `player.py`'s for Machiavelox, `classic_player.py`'s for classic Machiavelli.

- One stream at a time: `Join{table_id, last_seq, batched}`, a heartbeat every second (the sign
  of life, M11.1, A1), every `Batch` read as the single messages it stands for (`unbatch`).
- A snapshot is asked for (`Resync`, paced at the gateway) only when the ruleset's view is not
  `current`, one at a time.
- The bot looks when its view is current: after a snapshot, after the answer to its action, or
  `idle_s` after a look with nothing to do. It decides in a worker thread (a solve takes up to
  its time limit: the heartbeats and the reading go on), sleeps what is left of the reaction
  delay (counted from the look), and sends the action with a fresh `client_action_id`.
- One action in flight (`Pending`); its `Ack` or `ActionRefused` is told to the brain, and a
  refusal is judged after the whole step (`judge`).
- The session's own refusals (no action id: `rate/limited`, `table/unavailable`): a pause, then
  a `Resync`. With the table unreachable the action in flight is given up (its shard may have
  died with it, "Outages"): the next snapshot says what became of it.
- A dropped stream is resumed, at most `MAX_RESUMES` times (after `RESUME_PAUSE_S`, doubled
  while the new streams get nothing, up to `RESUME_MAX_PAUSE_S`): a new stream with
  `Join{last_seq}` (exactly the events after the last one processed: no gap, none twice), a
  `Resync` when the ruleset's view needs one, and the action in flight sent again with the same
  `client_action_id` (idempotent: answered as the first time, or applied now if it never
  arrived). `Owner.drop_after` cuts the stream once after that many actions (tests).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import grpc

from machiavelox._gen.v1 import common_pb2, gateway_pb2

from .responses import unbatch

log = logging.getLogger(__name__)

MAX_RESUMES = 20  # streams resumed per table at most
RESUME_PAUSE_S = 0.5  # before a resume; doubled, up to the next, while new streams get nothing
RESUME_MAX_PAUSE_S = 4.0  # (a gateway restarting, the channel's reconnection backoff)
HEARTBEAT_S = 1.0
SESSION_PAUSE_S = 1.0  # after a refusal of the session's (paced, table unreachable)
# refusals by the gateway itself (docs/protocol.md): the action never reached the table
GATEWAY_CODES = frozenset({"rate/limited", "table/unavailable", "table/journal"})
# a stream that ended so is resumed (the network, the gateway going away)
RETRIED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED,
                     grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL})
SLOW = "session/slow"  # RESOURCE_EXHAUSTED: the app fell behind; it resumes (docs/protocol.md)

V = TypeVar("V")  # the ruleset's view
A = TypeVar("A")  # the ruleset's action


class StreamLost(RuntimeError):
    """The Play stream kept breaking: `MAX_RESUMES` resumes were not enough."""


@dataclass(frozen=True, slots=True)
class Step(Generic[A]):
    action: A
    delay_s: float  # wall seconds after the view was read


@dataclass(frozen=True, slots=True)
class Pending(Generic[A]):
    """The action in flight: its request (resent as it is after a resume), the action, and the
    last event seen when it was decided (`judge`)."""
    request: gateway_pb2.ActionRequest
    action: A
    seq: int


class Tally(Protocol):
    """What the shell counts in a bot's outcome (`player.BotOutcome`, `ClassicOutcome`)."""
    player: str
    actions: int
    refusals: int
    races: int  # refusals after the table moved under the decision (M6.4)
    predictable: list[str]  # refusals the view could predict
    resyncs: int  # snapshots asked for
    events: int
    resumes: int  # streams resumed


class Owner(Protocol):
    """The bot whose stream it is (`player.Bot`; `ClassicInviteBot` is one)."""
    name: str
    gateway: Any  # gateway_pb2_grpc.GatewayServiceStub
    record: list[gateway_pb2.PlayResponse] | None  # every message received, when given
    drop_after: int | None


class Ruleset(Protocol[V, A]):
    """The ruleset's part: the view kept, the brain, the wire form of an action."""
    snapshot_kind: str  # the PlayResponse field of its snapshots

    @property
    def current(self) -> bool:
        """The view may be decided on (else a snapshot is needed)."""

    def snapshot(self, response: gateway_pb2.PlayResponse) -> bool:
        """A snapshot read into the view; True when the table has ended (the result kept)."""

    def event(self, event: common_pb2.Event) -> None:
        """The next event applied to the view (or the view left not current)."""

    def answered(self) -> None:
        """The action in flight was answered (its ack or refusal, then the brain told)."""

    def resumed(self) -> None:
        """A new stream from the last event processed: events only, no snapshot."""

    def view(self) -> V: ...

    def decide(self, view: V) -> Step[A] | None:
        """The next action and its delay, or None (run in a worker thread)."""

    def decided(self, action: A, view: V) -> Awaitable[None]:
        """After a decision, before its delay."""

    def accepted(self, action: A) -> None: ...

    def refused(self, action: A) -> None: ...

    def request(self, action_id: str, action: A) -> gateway_pb2.ActionRequest: ...

    def idle_s(self) -> float | None:
        """When to look again after a look with nothing to do (None: after a snapshot)."""


def judge(out: Tally, action: object, code: str, decided_seq: int, seq_now: int) -> None:
    """A refusal of ours, after its whole step: the gateway's own never reached the table and
    are neither; *predictable* when no event at all came between the view it was decided on
    and the refusal (the view held the reason: a bot bug), a race otherwise (M6.4, M5.0.1)."""
    if code in GATEWAY_CODES:
        return
    if seq_now == decided_seq:
        out.predictable.append(f"{type(action).__name__}: {code}")
        log.warning("%s: refused %s (%s) on an unchanged table", out.player, action, code)
    else:
        out.races += 1


def resumable(err: grpc.aio.AioRpcError) -> bool:
    """A stream that ended with `err` is resumed (else the error is the bot's end)."""
    return err.code() in RETRIED or (err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                                     and str(err.details() or "").startswith(SLOW))


_LOOK = gateway_pb2.PlayResponse()  # (no message: time to look again)


class PlayStream(Generic[V, A]):
    """One bot's session at its table over as many Play streams as it takes."""

    def __init__(self, owner: Owner, metadata: Any, table_id: str, ruleset: Ruleset[V, A],
                 out: Tally) -> None:
        self.owner, self.metadata, self.table_id = owner, metadata, table_id
        self.ruleset, self.out = ruleset, out
        self.seq = 0  # the last event processed (a resume's `last_seq`)
        self.pending: Pending[A] | None = None
        self.asked = False  # a snapshot is on its way
        self.look_at: float | None = None  # when to decide next (None: after an answer)
        self._ids = itertools.count(1)
        self._send: Callable[[gateway_pb2.PlayRequest], None] = lambda _: None
        self._cut = False  # `drop_after` reached: this stream ends
        self._heard = False  # this stream brought a message

    async def play(self) -> None:
        """Play streams until the table ends: a dropped one is resumed (bounded)."""
        pause = RESUME_PAUSE_S
        for attempt in range(MAX_RESUMES + 1):
            if attempt:
                self.out.resumes += 1
                await asyncio.sleep(pause)
                log.info("%s: resuming its Play stream from seq %d", self.owner.name, self.seq)
            self._heard = False
            if await self._stream():
                return
            pause = RESUME_PAUSE_S if self._heard else min(2 * pause, RESUME_MAX_PAUSE_S)
        raise StreamLost(f"{self.owner.name}: the Play stream kept breaking")

    async def _stream(self) -> bool:
        """One Play stream; True once the table has ended, False when the stream dropped."""
        requests: asyncio.Queue[gateway_pb2.PlayRequest] = asyncio.Queue()
        inbox: asyncio.Queue[gateway_pb2.PlayResponse | None] = asyncio.Queue()
        failures: list[grpc.aio.AioRpcError] = []

        async def gen() -> AsyncIterator[gateway_pb2.PlayRequest]:
            while True:
                yield await requests.get()

        async def heartbeats() -> None:  # signs of life (M11.1), as an app sends them
            while True:
                await asyncio.sleep(HEARTBEAT_S)
                requests.put_nowait(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))

        call = self.owner.gateway.Play(gen(), metadata=self.metadata)

        async def read() -> None:
            try:
                async for message in call:
                    inbox.put_nowait(message)
            except grpc.aio.AioRpcError as err:
                failures.append(err)
            finally:
                inbox.put_nowait(None)

        self._send = requests.put_nowait
        self._open()
        beating = asyncio.create_task(heartbeats())
        reading = asyncio.create_task(read())
        try:
            while not self._cut:
                try:
                    message = await asyncio.wait_for(inbox.get(), self.wait_s())
                except TimeoutError:
                    message = _LOOK
                if message is None:
                    break
                self._heard = self._heard or message is not _LOOK
                if message is not _LOOK and await self.take(message):
                    return True
                await self.look()
        finally:
            beating.cancel()
            reading.cancel()
            call.cancel()
        self._cut = False
        for err in failures:
            if not resumable(err):
                raise err
            log.info("%s: Play stream ended (%s)", self.owner.name, err.code().name)
        return False

    def _open(self) -> None:
        """A stream's first messages: the Join from the last event processed, a Resync when
        the view needs one (a resume sends events only), the action in flight again."""
        self._send(gateway_pb2.PlayRequest(join=gateway_pb2.Join(
            table_id=self.table_id, last_seq=self.seq, batched=True)))
        self.asked = not self.seq  # (from 0 the Join's answer is a snapshot)
        if self.seq:
            self.ruleset.resumed()
            self._fresh()
        if self.pending is not None:  # the same client_action_id: answered once
            self._send(gateway_pb2.PlayRequest(action=self.pending.request))

    def resync(self) -> None:
        if not self.asked:
            self.asked = True
            self.out.resyncs += 1
            self._send(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))

    def _fresh(self) -> None:
        """A snapshot asked for if the view is not current."""
        if not self.ruleset.current:
            self.resync()

    async def take(self, message: gateway_pb2.PlayResponse) -> bool:
        """One message (a step); True when the table ended."""
        rules, out = self.ruleset, self.out
        refused: tuple[Pending[A], str] | None = None  # a refusal of ours, judged at the end
        for response in unbatch(message):
            if self.owner.record is not None:
                self.owner.record.append(response)
            kind = response.WhichOneof("kind")
            if kind == rules.snapshot_kind:
                self.asked = False
                if rules.snapshot(response):
                    return True
                self.seq = int(getattr(response, kind).seq)
                self._fresh()  # (a snapshot the view cannot read: the next one)
                if self.pending is None:
                    self.look_at = time.monotonic()
            elif kind == "refused" and not response.refused.client_action_id:
                # about the session: paced (rate/limited) or the table unreachable for a
                # while (table/unavailable): look again a little later; an action in flight
                # may never be answered (its shard died: docs/protocol.md, "Outages"), the
                # next snapshot says what became of it
                if response.refused.refusal.code == "table/unavailable":
                    if self.pending is not None:
                        rules.refused(self.pending.action)
                    self.pending = None
                await asyncio.sleep(SESSION_PAUSE_S)
                self.asked = False
                self.resync()
            elif kind in ("ack", "refused"):
                got = response.ack.client_action_id if kind == "ack" else \
                    response.refused.client_action_id
                pending = self.pending
                if pending is not None and got == pending.request.client_action_id:
                    self.pending = None
                    if kind == "ack":
                        rules.accepted(pending.action)
                    else:
                        out.refusals += 1
                        rules.refused(pending.action)
                        refused = (pending, response.refused.refusal.code)
                    rules.answered()
                    self._fresh()
                    self.look_at = time.monotonic()  # the table as it is now (M5.0.1)
            elif kind == "event":
                out.events += 1
                self.seq = max(self.seq, response.event.seq)
                rules.event(response.event)
                self._fresh()  # a gap, a chain, an ending, `interrupted`: a snapshot
        if refused is not None:  # after the whole step: its events came after the outcome
            judge(out, refused[0].action, refused[1], refused[0].seq, self.seq)
        return False

    def wait_s(self) -> float | None:
        """How long to wait for a message before looking again (None: until one comes)."""
        if self.pending is not None or self.look_at is None or not self.ruleset.current:
            return None  # an answer, or a snapshot, is on its way
        return max(0.001, self.look_at - time.monotonic())

    async def look(self) -> None:
        """Decide on the view when it is time, then send after the reaction delay."""
        if self.wait_s() is None or self.look_at is None or time.monotonic() < self.look_at:
            return
        rules = self.ruleset
        view = rules.view()
        seen, decided_seq = time.monotonic(), self.seq
        step = await asyncio.to_thread(rules.decide, view)
        if step is None:
            idle = rules.idle_s()
            self.look_at = None if idle is None else time.monotonic() + idle
            return
        await rules.decided(step.action, view)
        await asyncio.sleep(max(0.0, step.delay_s - (time.monotonic() - seen)))
        request = rules.request(f"{self.owner.name}-{next(self._ids)}", step.action)
        self.pending = Pending(request, step.action, decided_seq)
        self.look_at = None
        self.out.actions += 1
        self._send(gateway_pb2.PlayRequest(action=request))
        if self.owner.drop_after is not None and self.out.actions == self.owner.drop_after:
            self.owner.drop_after = None
            self._cut = True  # (fault injection: the network lost; resumed by `play`)
