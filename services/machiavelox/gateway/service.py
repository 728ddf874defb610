"""The GatewayService servicer: login, and one Play stream per player session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from machiavelox import codec, rules
from machiavelox._gen.v1 import gateway_pb2, gateway_pb2_grpc, table_pb2
from machiavelox.platform.errors import ServiceError, invalid_argument

from .auth import HmacTokens, authenticate
from .links import Session, ShardLink, ShardLinks
from .observe import GatewayObserver
from .presence import PresenceReporter

log = logging.getLogger(__name__)


class Gateway(gateway_pb2_grpc.GatewayServiceServicer):
    def __init__(self, tokens: HmacTokens, links: ShardLinks,
                 presence: PresenceReporter | None = None,
                 observer: GatewayObserver | None = None) -> None:
        self.tokens = tokens
        self.links = links
        self.presence = presence or PresenceReporter("", "")
        self.observer = observer or GatewayObserver()

    async def Login(self, request: gateway_pb2.LoginRequest,
                    context: Any) -> gateway_pb2.LoginResponse:
        token, expires = self.tokens.issue(request.player)
        return gateway_pb2.LoginResponse(token=token, player_id=request.player,
                                         expires_at=expires)

    async def Play(  # type: ignore[override]  # (the stubs know only the generator style)
            self, request_iterator: AsyncIterator[gateway_pb2.PlayRequest], context: Any) -> None:
        """One player session. Requests are read by a task of their own; responses are written
        as they come (`Session.serve`), and after each write what need not delay it (metrics,
        spans)."""
        player = authenticate(self.tokens, context.invocation_metadata())
        try:
            first = await anext(aiter(request_iterator))
        except StopAsyncIteration:
            return
        if first.WhichOneof("kind") != "join" or not first.join.table_id:
            raise invalid_argument("request/join-first", "the first message must join a table")
        session = Session(player, first.join.table_id, first.join.last_seq,
                          batched=first.join.batched, observer=self.observer)
        link = self.links.for_table(session.table_id)
        link.subscribe(session)
        self.presence.connected(player, True)
        metrics = self.observer.metrics
        if metrics is not None:
            metrics.stream_opened()
        reader = asyncio.create_task(self._read(request_iterator, session, link))
        try:
            await session.serve(context.write)
            if session.failure is not None:
                raise session.failure
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            link.unsubscribe(session)
            self.presence.connected(player, False)
            self.observer.closed(session)
            if metrics is not None:
                metrics.stream_closed()

    async def _read(self, requests: AsyncIterator[gateway_pb2.PlayRequest], session: Session,
                    link: ShardLink) -> None:
        try:
            async for request in requests:
                kind = request.WhichOneof("kind")
                if kind == "action":
                    parent = self.observer.action(session, link.shard_id, request.action)
                    link.hold()
                    item = link.action_item(session, parent)
                    item.client_action_id = request.action.client_action_id
                    item.action.CopyFrom(request.action.action)
                    await link.flush()  # on its way: the rest is off the action's path
                    # A malformed action ends the stream (INVALID_ARGUMENT). The check comes
                    # after forwarding: the shard checks every action too and refuses a
                    # malformed one without touching the table (docs/protocol.md).
                    codec.action_from_pb(rules.Seat.P1, request.action.action)
                    self.presence.sign_of_life(session.player_id)
                elif kind == "heartbeat":
                    self.presence.sign_of_life(session.player_id)  # (see the presence service)
                elif kind == "resync":
                    link.item(session, subscribe=table_pb2.Subscribe(from_seq=0))
                elif kind == "join":
                    raise invalid_argument("request/join-once", "one table per Play stream")
                else:
                    raise invalid_argument("request/unknown", "unknown message kind")
            session.close()  # the app closed its side
        except ServiceError as err:
            session.fail(err)
