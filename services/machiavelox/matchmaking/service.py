"""The MatchmakingService servicer: thin. It authenticates the player, decodes each request,
calls the agorà's use case (`agora.Agora`) and encodes what it yields; the agorà's refusals
become status codes with their reasons here (`refusals`), and nowhere else.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any, TypeVar

import grpc

from machiavelox import rules
from machiavelox._gen.v1 import (
    bots_pb2,
    classic_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
)
from machiavelox.identity.tokens import TokenVerifier, authenticate
from machiavelox.platform.errors import (
    ServiceError,
    failed_precondition,
    invalid_argument,
    not_found,
    permission_denied,
    resource_exhausted,
    unavailable,
)

from .agora import Agora, Expired, Replaced, Stopping, Update, Waiting
from .classic_rules import rules_of
from .limits import Limited
from .practice import BotsRefused, BotsUnavailable, Practice
from .queue import Refused, UnknownCode, WaitError
from .store import NotYours, StoreUnavailableError, UnknownTicket

SERVICE_NAME = "machiavelox.v1.MatchmakingService"
MAX_TICKET_ID = 64  # (ours have 16 characters)

_KIND_FROM_PB = {table_pb2.MATCH_KIND_SINGLE: rules.MatchKind.SINGLE,
                 table_pb2.MATCH_KIND_LONG: rules.MatchKind.LONG}

# A practice table's bots (bots.proto); UNSPECIFIED: an ordinary friendly table.
_PRACTICE_FROM_PB = {bots_pb2.BOT_LEVEL_BASIC: "basic", bots_pb2.BOT_LEVEL_EASY: "easy",
                     bots_pb2.BOT_LEVEL_MEDIUM: "medium", bots_pb2.BOT_LEVEL_HARD: "hard"}

# Enqueue's ruleset: the ranked classic queue (issue 16), or Machiavelox's (True: classic).
_QUEUES = {classic_pb2.RULESET_UNSPECIFIED: False, classic_pb2.RULESET_MACHIAVELOX: False,
           classic_pb2.RULESET_CLASSIC: True}

U = TypeVar("U")


@contextlib.contextmanager
def refusals() -> Iterator[None]:
    """The agorà's refusals as service errors (status code and reason)."""
    try:
        yield
    except (UnknownCode, UnknownTicket, Expired) as err:
        raise not_found(err.reason, err.message) from None
    except NotYours as err:
        raise permission_denied(err.reason, err.message) from None
    except Limited as err:
        raise resource_exhausted(err.reason, err.message) from None
    except (Stopping, BotsUnavailable) as err:
        raise unavailable(err.reason, err.message) from None
    except BotsRefused as err:  # the bot host's own status and reason, passed on
        status = getattr(grpc.StatusCode, err.status, grpc.StatusCode.FAILED_PRECONDITION)
        raise ServiceError(status, err.reason, err.message) from None
    except (Refused, Replaced) as err:
        raise failed_precondition(err.reason, err.message) from None
    except WaitError as err:  # pragma: no cover - every WaitError is one of the above
        raise failed_precondition(err.reason, err.message) from None
    except StoreUnavailableError as err:
        raise unavailable("agora/store", f"the agorà's store is unreachable ({err}); "
                                         "try again") from None


async def relayed(updates: AsyncGenerator[U, None]) -> AsyncIterator[U]:
    """A use case's stream, its refusals as service errors."""
    try:
        while True:
            with refusals():
                try:
                    update = await anext(updates)
                except StopAsyncIteration:
                    return
            yield update
    finally:
        await updates.aclose()


def update_pb(update: Update) -> matchmaking_pb2.TicketUpdate:
    if isinstance(update, Waiting):
        return matchmaking_pb2.TicketUpdate(
            ticket_id=update.ticket_id,
            waiting=matchmaking_pb2.Waiting(waited_s=update.waited_s, window=update.window))
    return matchmaking_pb2.TicketUpdate(
        ticket_id=update.ticket_id,
        assignment=matchmaking_pb2.Assignment(table_id=update.table_id,
                                              shard_id=update.shard_id,
                                              player_ids=list(update.players)))


class MatchmakingService(matchmaking_pb2_grpc.MatchmakingServiceServicer):
    def __init__(self, agora: Agora, verifier: TokenVerifier,
                 practice: Practice | None = None) -> None:
        self.agora = agora
        self.verifier = verifier
        self.practice = practice if practice is not None else Practice(agora, None)

    def _player(self, context: Any) -> str:
        return authenticate(self.verifier, context.invocation_metadata())

    async def Enqueue(self, request: matchmaking_pb2.EnqueueRequest,
                      context: Any) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        async for response in self.enqueue(context.invocation_metadata(), request):
            yield response

    async def enqueue(self, metadata: tuple[tuple[str, str | bytes], ...] | None,
                      request: matchmaking_pb2.EnqueueRequest
                      ) -> AsyncIterator[matchmaking_pb2.EnqueueResponse]:
        """An Enqueue, from the call's metadata (a direct call, or a stream of the gateways'
        link: link.py); its refusals are ServiceErrors."""
        player = authenticate(self.verifier, metadata)
        if len(request.ticket_id) > MAX_TICKET_ID:
            raise invalid_argument("ticket/bad-id", f"a ticket id has at most {MAX_TICKET_ID} "
                                                    "characters")
        if request.ruleset not in _QUEUES:
            raise invalid_argument("table/bad-ruleset", f"unknown ruleset {request.ruleset}")
        async for update in relayed(self.agora.enqueue(player, request.ticket_id,
                                                       _QUEUES[request.ruleset])):
            yield matchmaking_pb2.EnqueueResponse(update=update_pb(update))

    async def CancelTicket(self, request: matchmaking_pb2.CancelTicketRequest,
                           context: Any) -> matchmaking_pb2.CancelTicketResponse:
        player = self._player(context)
        with refusals():
            cancelled = await self.agora.cancel(player, request.ticket_id)
        return matchmaking_pb2.CancelTicketResponse(cancelled=cancelled)

    async def CreateFriendlyTable(self, request: matchmaking_pb2.CreateFriendlyTableRequest,
                                  context: Any) -> matchmaking_pb2.CreateFriendlyTableResponse:
        player = self._player(context)
        if request.ruleset == classic_pb2.RULESET_CLASSIC:
            return await self._create_classic(player, request)
        if request.ruleset != classic_pb2.RULESET_UNSPECIFIED and \
                request.ruleset != classic_pb2.RULESET_MACHIAVELOX:
            raise invalid_argument("table/bad-ruleset", f"unknown ruleset {request.ruleset}")
        if request.HasField("classic"):
            raise invalid_argument("table/bad-ruleset",
                                   "classic variants are for a classic table")
        kind = _KIND_FROM_PB.get(request.kind)
        if kind is None:
            raise invalid_argument("table/bad-kind", "kind must be single or long")
        level = _PRACTICE_FROM_PB.get(request.practice_level)
        if request.practice_level and level is None:
            raise invalid_argument("practice/bad-level", "practice_level is not a level")
        if level is not None and kind is not rules.MatchKind.SINGLE:
            raise invalid_argument("practice/long", "practice tables are single matches")
        with refusals():
            if level is None:
                code = await self.agora.create_friendly(player, kind)
            else:
                code = await self.practice.create(player, level)
        return matchmaking_pb2.CreateFriendlyTableResponse(invite_code=code)

    async def _create_classic(self, player: str,
                              request: matchmaking_pb2.CreateFriendlyTableRequest
                              ) -> matchmaking_pb2.CreateFriendlyTableResponse:
        """A classic Machiavelli friendly table (issue 16): its variants checked now, by the
        engine's rules (INVALID_ARGUMENT `variant/...`), its seats theirs (2..6); with a
        practice level, a classic practice table (the bot host's classic bots in the others)."""
        level = _PRACTICE_FROM_PB.get(request.practice_level)
        if request.practice_level and level is None:
            raise invalid_argument("practice/bad-level", "practice_level is not a level")
        table = rules_of(request.classic)
        with refusals():  # (a classic session is in its variants: `kind` says nothing)
            if level is None:
                code = await self.agora.create_friendly(player, rules.MatchKind.SINGLE, table)
            else:
                code = await self.practice.create(player, level, table)
        return matchmaking_pb2.CreateFriendlyTableResponse(invite_code=code)

    async def JoinFriendlyTable(self, request: matchmaking_pb2.JoinFriendlyTableRequest,
                                context: Any) -> AsyncIterator[
                                    matchmaking_pb2.JoinFriendlyTableResponse]:
        player = self._player(context)
        async for update in relayed(self.agora.join_friendly(player, request.invite_code)):
            yield matchmaking_pb2.JoinFriendlyTableResponse(update=update_pb(update))
