"""The client's side of the protocol (docs/protocol.md), with no screen in it.

`Gateway` is one channel to the one public endpoint: the development Login, the agorà (which the
gateway relays to matchmaking) and `TableSession`s. A `TableSession` is one batched Play stream
kept alive the way an app must keep it:
- `Join{table_id, last_seq, batched}`; when the stream breaks it reconnects (backoff 0.25 s to
  4 s) and resumes from the last event it passed on, so nothing is missed or seen twice (an
  event at or below that number is dropped all the same);
- a `Heartbeat` every 2 s while the stream is open: the sign of life of M11.1;
- each action gets a fresh `client_action_id`; one still unanswered when the stream broke is
  sent again after the resume with the same id (the table answers an id it knows with its first
  answer and applies one it never got once); one refused `table/unavailable` or `table/journal`
  (it never reached the table) is sent again a little later, same id, a few times at most;
- `Resync` on demand, coalesced and paced: at most one in flight, `resync_gap_s` apart, and
  after the gateway's `rate/limited` (one every 2 s, 3 at once) once its bucket has refilled; and
  one after `refresh_s` without a snapshot, for what no event tells (a player gone dormant).
What it receives goes to `sink` in order, a `Batch` read as the messages it stands for
(`bots.responses.unbatch`), with `Link` notes about the stream in between. The same session
plays either ruleset: `act` sends a Machiavelox action, `act_classic` a classic Machiavelli one
(`ActionRequest.classic_action`, docs/protocol.md "Playing a classic table through the
gateway"), and a `classic_snapshot` counts as a snapshot; the rest is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from machiavelox import classic, classic_codec, codec, rules
from machiavelox._gen.v1 import (
    bots_pb2,
    classic_pb2,
    gateway_pb2,
    gateway_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
)
from machiavelox.bots.responses import unbatch
from machiavelox.platform import keepalive
from machiavelox.platform.errors import REASON_KEY

log = logging.getLogger(__name__)

HEARTBEAT_S = 2.0  # docs/protocol.md: "Heartbeat{} every ~2 s is a sign of life (M11)"
RESYNC_GAP_S = 0.25
RESYNC_REFILL_S = 2.0  # the gateway's Resync bucket refills one every 2 s
REFRESH_S = 5.0
RETRY_CODES = frozenset({"table/unavailable", "table/journal"})  # never reached the table
RETRIES = 5
MAX_FAILURES = 60  # consecutive broken streams before the session gives up (minutes)
# Stream endings that no reconnect can mend: the session stops and says why.
FINAL_REASONS = frozenset({"session/replaced", "table/not-seated", "table/unknown",
                           "table/bad-id", "request/malformed", "request/join-first"})
FINAL_CODES = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED,
                         grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT,
                         grpc.StatusCode.UNIMPLEMENTED})

Metadata = tuple[tuple[str, str], ...]
# A practice table's bots (bots.proto): the levels of docs/bots.md by name
PRACTICE_LEVELS = {"basic": bots_pb2.BOT_LEVEL_BASIC, "easy": bots_pb2.BOT_LEVEL_EASY,
                   "medium": bots_pb2.BOT_LEVEL_MEDIUM, "hard": bots_pb2.BOT_LEVEL_HARD}


@dataclass(frozen=True)
class Refused(Exception):
    """A call or stream the server ended with an error: its status, stable reason, message."""

    status: str
    reason: str
    message: str

    def __str__(self) -> str:
        return self.message or self.reason or self.status


def explain(err: grpc.aio.AioRpcError, address: str = "the gateway") -> Refused:
    """A gRPC error as the person should read it (reason from `machiavelox-reason`)."""
    reason = ""
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            reason = value.decode() if isinstance(value, bytes) else str(value)
    message = (err.details() or "").removeprefix(f"{reason}: ") if reason else ""
    if not reason and err.code() in (grpc.StatusCode.UNAVAILABLE,
                                     grpc.StatusCode.DEADLINE_EXCEEDED):
        message = f"{address} cannot be reached ({err.details() or err.code().name})"
    return Refused(err.code().name, reason, message or err.details() or err.code().name)


def format_code(code: str) -> str:
    """An invite code as people read it: two groups of five (docs/protocol.md)."""
    plain = normalize_code(code)
    return f"{plain[:5]}-{plain[5:]}" if len(plain) == 10 else plain


def normalize_code(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isalnum())


@dataclass(frozen=True)
class Link:
    """A note about the Play stream: `state` is connecting, live, reconnecting or closed."""

    state: str
    detail: str = ""


Incoming = gateway_pb2.PlayResponse | Link


class Ticket:
    """A wait in the agorà (the queue or a friendly lobby): its updates, then an Assignment."""

    def __init__(self, call: Any, address: str) -> None:
        self._call = call
        self._address = address
        self.ticket_id = ""

    async def updates(self) -> AsyncIterator[matchmaking_pb2.TicketUpdate]:
        try:
            async for response in self._call:
                update: matchmaking_pb2.TicketUpdate = response.update
                self.ticket_id = update.ticket_id or self.ticket_id
                yield update
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.CANCELLED:
                return
            raise explain(err, self._address) from None

    def cancel(self) -> None:
        self._call.cancel()


class Gateway:
    """The app's one endpoint (docs/protocol.md): Login, the agorà, Play."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.channel = grpc.aio.insecure_channel(address, options=keepalive.CLIENT)
        self.stub = gateway_pb2_grpc.GatewayServiceStub(self.channel)
        self.agora = matchmaking_pb2_grpc.MatchmakingServiceStub(self.channel)
        self.player = ""
        self.metadata: Metadata = ()

    async def login(self, name: str, timeout_s: float = 10.0) -> str:
        """The development Login (a cluster with MACHIAVELOX_GATEWAY_DEV_LOGIN): the player id."""
        try:
            reply = await self.stub.Login(gateway_pb2.LoginRequest(player=name),
                                          timeout=timeout_s)
        except grpc.aio.AioRpcError as err:
            raise explain(err, self.address) from None
        self.player = reply.player_id or name
        self.metadata = (("authorization", f"Bearer {reply.token}"),)
        return self.player

    def enqueue(self) -> Ticket:
        return Ticket(self.agora.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                         metadata=self.metadata), self.address)

    async def cancel_ticket(self, ticket_id: str) -> bool:
        try:
            reply = await self.agora.CancelTicket(
                matchmaking_pb2.CancelTicketRequest(ticket_id=ticket_id),
                metadata=self.metadata, timeout=10)
        except grpc.aio.AioRpcError as err:
            raise explain(err, self.address) from None
        return bool(reply.cancelled)

    async def create_friendly(self, long_match: bool = False, practice_level: str = "",
                              classic_variants: classic.Variants | None = None) -> str:
        """A friendly table's invite code; with `practice_level` (a name of PRACTICE_LEVELS)
        a practice table: matchmaking seats server-side bots of that level at it (two, or
        `players - 1` classic bots). With `classic_variants`, a classic Machiavelli table
        (`ruleset` classic; matchmaking checks the variants: `variant/...`)."""
        kind = table_pb2.MATCH_KIND_LONG if long_match else table_pb2.MATCH_KIND_SINGLE
        level = (PRACTICE_LEVELS[practice_level] if practice_level
                 else bots_pb2.BOT_LEVEL_UNSPECIFIED)
        request = matchmaking_pb2.CreateFriendlyTableRequest(kind=kind, practice_level=level)
        if classic_variants is not None:
            request.ruleset = classic_pb2.RULESET_CLASSIC
            request.classic.CopyFrom(classic_codec.variants_to_pb(classic_variants))
        try:
            reply = await self.agora.CreateFriendlyTable(request, metadata=self.metadata,
                                                         timeout=15)
        except grpc.aio.AioRpcError as err:
            raise explain(err, self.address) from None
        return str(reply.invite_code)

    def join_friendly(self, code: str) -> Ticket:
        return Ticket(self.agora.JoinFriendlyTable(
            matchmaking_pb2.JoinFriendlyTableRequest(invite_code=normalize_code(code)),
            metadata=self.metadata), self.address)

    def session(self, table_id: str, sink: Callable[[Incoming], None],
                **options: Any) -> TableSession:
        return TableSession(self.stub, self.metadata, table_id, self.player, sink, **options)

    async def close(self) -> None:
        await self.channel.close()


class TableSession:
    """One player's Play stream at one table, resumed and resent as docs/protocol.md says."""

    def __init__(self, stub: gateway_pb2_grpc.GatewayServiceStub, metadata: Metadata,
                 table_id: str, player: str, sink: Callable[[Incoming], None],
                 heartbeat_s: float = HEARTBEAT_S, resync_gap_s: float = RESYNC_GAP_S,
                 refresh_s: float = REFRESH_S, max_failures: int = MAX_FAILURES) -> None:
        self.stub = stub
        self.metadata = metadata
        self.table_id = table_id
        self.sink = sink
        self.heartbeat_s = heartbeat_s
        self.resync_gap_s = resync_gap_s
        self.refresh_s = refresh_s
        self.max_failures = max_failures
        # ids unique per (table, player) across runs of the client: a restarted client must not
        # reuse an id the table already answered (it would get that old answer back)
        self._ids = (f"{player[:32]}-{secrets.token_hex(4)}-{n}" for n in itertools.count(1))
        self.last_seq = 0
        self.pending: dict[str, gateway_pb2.ActionRequest] = {}  # sent, not yet answered
        self._retries: dict[str, int] = {}
        self._queue: asyncio.Queue[gateway_pb2.PlayRequest | None] | None = None
        self._call: Any = None
        self._want_view = False
        self._resync_in_flight = False
        self._resync_not_before = 0.0
        self._resync_timer: asyncio.TimerHandle | None = None
        self._last_snapshot = 0.0
        self._stopped = False
        self.connects = 0  # streams opened (the first Join, then each resume)
        self.final: Refused | None = None  # why the session ended, when it did on its own

    # -------------------------------------------------------------- what the screen calls
    def act(self, action: rules.Action, action_id: str = "") -> str:
        """Send `action` (a fresh id unless `action_id`, a resend); its answer comes to the
        sink as an Ack or an ActionRefused with that id."""
        return self._submit(gateway_pb2.ActionRequest(action=codec.action_to_pb(action)),
                            action_id)

    def act_classic(self, action: classic.ClassicAction, action_id: str = "") -> str:
        """`act` at a classic Machiavelli table: the action goes as `classic_action`."""
        return self._submit(gateway_pb2.ActionRequest(
            classic_action=classic_codec.action_to_pb(action)), action_id)

    def _submit(self, request: gateway_pb2.ActionRequest, action_id: str) -> str:
        """Either game's action, given its id and time, kept until answered (resends)."""
        action_id = request.client_action_id = action_id or next(self._ids)
        request.client_sent_ms = int(time.time() * 1000)
        self.pending[action_id] = request
        self._send(gateway_pb2.PlayRequest(action=request))
        return action_id

    def want_view(self) -> None:
        """Ask for a fresh snapshot, as soon as the pace allows (coalesced)."""
        self._want_view = True
        self._pump_resync()

    def stop(self) -> None:
        """Leave the table: end the stream (the table goes on; a Join resumes it later)."""
        self._stopped = True
        self._send(None)
        if self._call is not None:
            self._call.cancel()

    async def run(self) -> None:
        """Keep the stream up until `stop()`, or an ending no reconnect mends (`final`)."""
        failures = 0
        delay = 0.25
        while not self._stopped and failures < self.max_failures:
            self.sink(Link("connecting" if self.connects == 0 else "reconnecting",
                           f"joining {self.table_id}" if self.connects == 0 else
                           f"resuming after event {self.last_seq}"))
            try:
                live = await self._stream()
            except grpc.aio.AioRpcError as err:
                refused = explain(err)
                if err.code() == grpc.StatusCode.CANCELLED and self._stopped:
                    break
                if refused.reason in FINAL_REASONS or err.code() in FINAL_CODES:
                    self.final = refused
                    break
                live = False
                self.sink(Link("reconnecting", str(refused)))
            if self._stopped:
                break
            failures = 0 if live else failures + 1
            delay = 0.25 if live else min(delay * 2, 4.0)
            await asyncio.sleep(delay)
        if self.final is None and not self._stopped:
            self.final = Refused("UNAVAILABLE", "client/gave-up",
                                 f"gave up after {failures} failed reconnections")
        self.sink(Link("closed", str(self.final) if self.final else "left the table"))

    # -------------------------------------------------------------- the stream
    async def _stream(self) -> bool:
        """One Play stream, to its end; True if it delivered anything (it was live)."""
        queue: asyncio.Queue[gateway_pb2.PlayRequest | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[gateway_pb2.PlayRequest]:
            while True:
                item = await queue.get()
                if item is None:
                    return
                yield item

        call = self._call = self.stub.Play(requests(), metadata=self.metadata)
        self.connects += 1
        self._resync_in_flight = False
        queue.put_nowait(gateway_pb2.PlayRequest(join=gateway_pb2.Join(
            table_id=self.table_id, last_seq=self.last_seq, batched=True)))
        for request in self.pending.values():  # resends after a resume: the same ids
            queue.put_nowait(gateway_pb2.PlayRequest(action=request))
        self._queue = queue
        beating = asyncio.create_task(self._beat(queue))
        live = False
        try:
            async for response in call:
                if not live:
                    live = True
                    self.sink(Link("live", f"at {self.table_id}"))
                for single in unbatch(response):
                    if self._stopped:  # (a screen that left mid-batch gets no more of it)
                        break
                    self._take(single)
        except asyncio.CancelledError:
            if not self._stopped:
                raise  # (the call cancelled by `stop` ends the session; anything else is ours)
        finally:
            self._queue = None
            self._call = None
            beating.cancel()
            queue.put_nowait(None)
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        return live

    async def _beat(self, queue: asyncio.Queue[gateway_pb2.PlayRequest | None]) -> None:
        while True:
            await asyncio.sleep(self.heartbeat_s)
            queue.put_nowait(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat(
                client_ms=int(time.time() * 1000))))
            if time.monotonic() - self._last_snapshot >= self.refresh_s:
                self.want_view()

    def _send(self, request: gateway_pb2.PlayRequest | None) -> None:
        if self._queue is not None:
            self._queue.put_nowait(request)

    def _take(self, response: gateway_pb2.PlayResponse) -> None:
        kind = response.WhichOneof("kind")
        if kind in ("snapshot", "classic_snapshot"):
            self.last_seq = (response.snapshot.seq if kind == "snapshot"
                             else response.classic_snapshot.seq)
            self._last_snapshot = time.monotonic()
            self._resync_in_flight = False
            self._pump_resync()
        elif kind == "event":
            seq = response.event.seq
            if seq <= self.last_seq:
                return  # seen already (the gateway never sends it twice: belt and braces)
            if seq != self.last_seq + 1:
                log.warning("event %d after %d: asking for a snapshot", seq, self.last_seq)
                self.want_view()
            self.last_seq = seq
        elif kind == "ack":
            self.pending.pop(response.ack.client_action_id, None)
            self._retries.pop(response.ack.client_action_id, None)
        elif kind == "refused":
            refused = response.refused
            action_id = refused.client_action_id
            code = refused.refusal.code
            if not action_id:  # about the session (docs/protocol.md)
                if code == "rate/limited":  # our Resync, over its pace: later
                    self._resync_in_flight = False
                    self._want_view = True
                    self._resync_not_before = time.monotonic() + RESYNC_REFILL_S
                    self._pump_resync()
                    return
            elif code in RETRY_CODES and self._retries.get(action_id, 0) < RETRIES \
                    and action_id in self.pending:
                tries = self._retries[action_id] = self._retries.get(action_id, 0) + 1
                asyncio.get_running_loop().call_later(0.5 * tries, self._resend, action_id)
                self.sink(Link("live", f"{code}: sending the action again ({tries})"))
                return
            else:
                self.pending.pop(action_id, None)
                self._retries.pop(action_id, None)
        self.sink(response)

    def _resend(self, action_id: str) -> None:
        request = self.pending.get(action_id)
        if request is not None:
            self._send(gateway_pb2.PlayRequest(action=request))

    def _pump_resync(self) -> None:
        if not self._want_view or self._resync_in_flight or self._queue is None:
            return
        wait = self._resync_not_before - time.monotonic()
        if wait > 0:
            if self._resync_timer is None:
                self._resync_timer = asyncio.get_running_loop().call_later(wait, self._timer)
            return
        self._want_view = False
        self._resync_in_flight = True
        self._resync_not_before = time.monotonic() + self.resync_gap_s
        self._send(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))

    def _timer(self) -> None:
        self._resync_timer = None
        self._pump_resync()
