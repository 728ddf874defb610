"""The GatewayService servicer: login, and one Play stream per player session.

A Play stream's requests are read by a task of their own (`_read`); each action (a
Machiavelox `action` or, at a classic table, a `classic_action`) passes the player's pace
(`pace.py`) and goes to the shard link, which writes it without the reader ever
awaiting a write on the shared stream (links.py: no session can break the link).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from machiavelox import classic, classic_codec, codec, rules
from machiavelox._gen.v1 import gateway_pb2, gateway_pb2_grpc
from machiavelox.identity.tokens import TokenVerifier, authenticate
from machiavelox.platform.errors import ServiceError, invalid_argument, resource_exhausted

from .links import ShardLink, ShardLinks
from .login import DevLogin
from .observe import GatewayObserver
from .pace import GatewayPace
from .presence import PresenceReporter
from .session import Session, SessionLimits

log = logging.getLogger(__name__)

MAX_ACTION_ID = 64
JOIN_WAIT_S = 10.0  # a Play stream's first message (its Join) must come within this
LAST_WRITE_S = 0.5  # at a session's end, the most its write in flight is waited for


class Gateway(gateway_pb2_grpc.GatewayServiceServicer):
    def __init__(self, tokens: TokenVerifier, links: ShardLinks,
                 presence: PresenceReporter | None = None,
                 observer: GatewayObserver | None = None, pace: GatewayPace | None = None,
                 limits: SessionLimits | None = None, login: DevLogin | None = None) -> None:
        self.tokens = tokens
        self.login = login or DevLogin()  # the development Login: off unless given
        self.links = links
        self.pace = pace or GatewayPace()
        self.limits = limits or SessionLimits()
        self.presence = presence or PresenceReporter("", "")
        self.observer = observer or GatewayObserver()

    async def Login(self, request: gateway_pb2.LoginRequest,
                    context: Any) -> gateway_pb2.LoginResponse:
        """The development Login (login.py): UNIMPLEMENTED `auth/login-disabled` unless
        MACHIAVELOX_GATEWAY_DEV_LOGIN, throttled per source address when on."""
        token, expires = self.login.issue(request.player, context.peer())
        return gateway_pb2.LoginResponse(token=token, player_id=request.player,
                                         expires_at=expires)

    async def Play(  # type: ignore[override]  # (the stubs know only the generator style)
            self, request_iterator: AsyncIterator[gateway_pb2.PlayRequest], context: Any) -> None:
        """One player session. Requests are read by a task of their own; responses are written
        as they come (`Session.serve`), and after each write what need not delay it (metrics,
        spans)."""
        # The first message is read before the token is checked: a grpc-aio client whose Join
        # is still being written when the call ends reports INTERNAL instead of our status
        # (grpc/grpc#36066). It is one message of at most 64 KiB, and it must come soon.
        try:
            first = await asyncio.wait_for(anext(aiter(request_iterator)), JOIN_WAIT_S)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise invalid_argument("request/join-first",
                                   f"join a table within {JOIN_WAIT_S:.0f} s") from None
        player = authenticate(self.tokens, context.invocation_metadata())
        if first.WhichOneof("kind") != "join" or not first.join.table_id:
            raise invalid_argument("request/join-first", "the first message must join a table")
        link = self.links.for_table(first.join.table_id)  # NOT_FOUND: nothing opened
        session = Session(player, first.join.table_id, first.join.last_seq,
                          batched=first.join.batched, observer=self.observer,
                          limits=self.limits)
        link.subscribe(session)
        self.presence.connected(player, True)
        metrics = self.observer.metrics
        if metrics is not None:
            metrics.stream_opened()
        reader = asyncio.create_task(self._read(request_iterator, session, link))
        try:
            await session.serve(context.write)
            if session.failure is not None:
                if session.failure.reason == "session/slow":
                    if metrics is not None:
                        metrics.slow_session()
                    # gRPC sends a status only after the messages before it: the write in
                    # flight (one message, what waited is gone) must be taken first.
                    await session.written()
                raise session.failure
        finally:
            reader.cancel()  # (safe: it never awaits a write on the shard link)
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            link.unsubscribe(session)
            self.presence.connected(player, False)
            # the write in flight may be the one an action's outcome waits for (the app can
            # read it and hang up before the writer resumes): let it finish, briefly, so the
            # outcome is told as it was, not as "unanswered"
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(session.written(), LAST_WRITE_S)
            self.observer.closed(session)
            if metrics is not None:
                metrics.stream_closed()

    def _limited(self, what: str) -> None:
        if self.observer.metrics is not None:
            self.observer.metrics.rate_limited(what)

    async def _read(self, requests: AsyncIterator[gateway_pb2.PlayRequest], session: Session,
                    link: ShardLink) -> None:
        player = session.player_id
        budget = self.pace.stream()
        try:
            async for request in requests:
                if not budget():
                    self._limited("flood")
                    raise resource_exhausted("rate/flood",
                                       "too many messages on this stream")
                kind = request.WhichOneof("kind")
                if kind == "action":
                    action = request.action
                    if len(action.client_action_id) > MAX_ACTION_ID:
                        raise invalid_argument("request/bad-id", "a client_action_id has at "
                                               f"most {MAX_ACTION_ID} characters")
                    parent = self.observer.action(session, link.shard_id, action)
                    if not self.pace.action(player):  # refused here: counted as refused
                        self._limited("action")
                        session.refuse(action.client_action_id, "rate/limited",
                                       "too many actions: slow down")
                        continue
                    if link.send_action(session, action, parent):
                        # A malformed action ends the stream (INVALID_ARGUMENT). The check
                        # comes after forwarding: the shard checks every action too and
                        # refuses a malformed one without touching the table. Which ruleset
                        # the table plays is the shard's to say (`request/wrong-ruleset`).
                        if action.HasField("classic_action"):
                            classic_codec.action_from_pb(classic.Seat.P1, action.classic_action)
                        else:
                            codec.action_from_pb(rules.Seat.P1, action.action)
                    self.presence.sign_of_life(player)
                elif kind == "heartbeat":
                    self.presence.sign_of_life(player)  # (see the presence service)
                    link.vouch(session)  # first-hand, to the shard
                elif kind == "resync":
                    if self.pace.resync(player):
                        link.resync(session)
                    else:
                        self._limited("resync")
                        session.refuse("", "rate/limited", "too many resyncs: slow down")
                elif kind == "join":
                    raise invalid_argument("request/join-once", "one table per Play stream")
                else:
                    raise invalid_argument("request/unknown", "unknown message kind")
            session.close()  # the app closed its side
        except ServiceError as err:
            session.fail(err)
