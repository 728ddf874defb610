"""Who may call what between services: every internal RPC authorized by the caller's role.

The caller's role is the one its client certificate names (`spiffe://machiavelox/<role>`,
platform/tls.py), verified by the TLS handshake against the cluster's CA. `POLICY` maps every
method of every internal service to the roles allowed to call it (a test checks it covers
every method in the protos); `AuthorizationInterceptor` applies it to every call, before the
servicer runs:

- a method not in `POLICY` is refused (a new RPC is closed until someone decides who calls it);
- a call without a verified certificate naming a role of ours: UNAUTHENTICATED
  `auth/no-certificate` (with require_client_auth such a call cannot even complete the
  handshake on an mTLS port; this covers anything that would reach a server otherwise);
- a role not allowed for the method: PERMISSION_DENIED `auth/role`.

Either refusal happens before the servicer sees the request: nothing changes; it is logged
at WARNING (with the caller's address; at most once a minute per role and method) and counted
by `grpc_server_handled_total` like any status. The standard health service needs no role
(`OPEN`: kubelet, load balancers); reflection any of our roles.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from .errors import ServiceError, abort, permission_denied, unauthenticated
from .ratelimit import Rate, RateLimits
from .tls import ROLES, role_of_uris

log = logging.getLogger(__name__)

ANYONE = "*"
OPEN = frozenset({ANYONE})
"""No identity needed (the health service)."""
ANY_ROLE = frozenset(ROLES)

_TABLE = "/machiavelox.v1.TableAuthorityService/"
_MATCHMAKING = "/machiavelox.v1.MatchmakingService/"
_SCORING = "/machiavelox.v1.ScoringService/"
_PRESENCE = "/machiavelox.v1.PresenceService/"
_BOT_HOST = "/machiavelox.v1.BotHostService/"

POLICY: Mapping[str, frozenset[str]] = {
    # A shard trusts the player_id of every item on this stream: gateways alone, which
    # authenticated the player's token, may open it.
    _TABLE + "Connect": frozenset({"gateway"}),
    _TABLE + "CreateTable": frozenset({"matchmaking"}),
    _TABLE + "CreateTables": frozenset({"matchmaking"}),
    _TABLE + "GetLoad": frozenset({"matchmaking", "controller"}),
    _TABLE + "SetDraining": frozenset({"controller"}),
    # Which seated tables a shard lost: matchmaking frees their seats.
    _TABLE + "CheckTables": frozenset({"matchmaking"}),
    _TABLE + "CancelTable": frozenset({"matchmaking"}),
    # The agorà's own server: apps reach it through the gateway's relay (which checked the
    # token; matchmaking checks it again).
    _MATCHMAKING + "Enqueue": frozenset({"gateway"}),
    _MATCHMAKING + "CancelTicket": frozenset({"gateway"}),
    _MATCHMAKING + "CreateFriendlyTable": frozenset({"gateway"}),
    _MATCHMAKING + "JoinFriendlyTable": frozenset({"gateway"}),
    # The gateways' Enqueues multiplexed (matchmaking/link.py): each stream's token is checked.
    "/machiavelox.v1.AgoraLinkService/Relay": frozenset({"gateway"}),
    # Results come from the shards that played them; reading them is the read-only role's.
    _SCORING + "ReportResult": frozenset({"table"}),
    _SCORING + "GetLeaderboard": frozenset({"results-reader"}),
    _SCORING + "GetStandings": frozenset({"results-reader"}),
    _SCORING + "SubscribeResults": frozenset({"matchmaking", "results-reader"}),
    # Signs of life come from the gateways that hold the sessions; the shards watch them.
    _PRESENCE + "Heartbeat": frozenset({"gateway"}),
    _PRESENCE + "SetConnected": frozenset({"gateway"}),
    _PRESENCE + "GetPresence": frozenset({"gateway", "table"}),
    _PRESENCE + "WatchLiveness": frozenset({"table"}),
    # Practice tables: matchmaking asks for the bots of a lobby it made (bots/service.py).
    _BOT_HOST + "SeatBots": frozenset({"matchmaking"}),
    "/grpc.health.v1.Health/Check": OPEN,
    "/grpc.health.v1.Health/Watch": OPEN,
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": ANY_ROLE,
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo": ANY_ROLE,
}

INTERNAL_SERVICES = ("machiavelox.v1.TableAuthorityService", "machiavelox.v1.MatchmakingService",
                     "machiavelox.v1.AgoraLinkService",
                     "machiavelox.v1.ScoringService", "machiavelox.v1.PresenceService",
                     "machiavelox.v1.BotHostService")
"""The services whose every method POLICY must name (the gateway's own is public)."""


def peer_role(context: Any) -> str | None:
    """The role of the caller's verified certificate, or None (no certificate, none of our
    roles, or more than one)."""
    auth = context.auth_context()
    if auth.get("transport_security_type") != [b"ssl"]:
        return None
    return role_of_uris(uri.decode(errors="replace") for uri in auth.get("peer_uri", ()))


def refusal(method: str, role: str | None,
            policy: Mapping[str, frozenset[str]] = POLICY) -> ServiceError | None:
    """Why a caller of `role` may not call `method` (None: it may)."""
    allowed = policy.get(method)
    if allowed is not None and ANYONE in allowed:
        return None
    if role is None:
        return unauthenticated("auth/no-certificate",
                               "internal services need a client certificate of the cluster")
    if allowed is None or role not in allowed:
        return permission_denied("auth/role", f"the role {role} may not call {method}")
    return None


Handler = Callable[..., Any]
_LOGGED = RateLimits(Rate(per_s=1 / 60, burst=1), max_keys=1000)


async def _refuse(context: Any, method: str, role: str | None, err: ServiceError) -> None:
    if _LOGGED.allow(f"{role}:{method}", time.monotonic()):
        log.warning("internal call refused: %s", err.message,
                    extra={"reason": err.reason, "peer": context.peer(), "method": method})
    await abort(context, err)


def _guarded(inner: Handler, method: str, policy: Mapping[str, frozenset[str]]) -> Handler:
    """`inner` with the check first, in the same style (coroutine or async generator: gRPC
    serves each its way), so a refused call never runs the servicer."""
    if inspect.isasyncgenfunction(inner):
        async def responses(request: Any, context: Any) -> Any:
            role = peer_role(context)
            err = refusal(method, role, policy)
            if err is not None:
                await _refuse(context, method, role, err)
            async for item in inner(request, context):
                yield item

        return responses

    async def call(request: Any, context: Any) -> Any:
        role = peer_role(context)
        err = refusal(method, role, policy)
        if err is not None:
            await _refuse(context, method, role, err)
        return await inner(request, context)

    return call


_MAKERS = (("unary_unary", grpc.unary_unary_rpc_method_handler),
           ("unary_stream", grpc.unary_stream_rpc_method_handler),
           ("stream_unary", grpc.stream_unary_rpc_method_handler),
           ("stream_stream", grpc.stream_stream_rpc_method_handler))


class AuthorizationInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Applies `policy` to every call (put it after the error and observability interceptors:
    they then count and trace the refusals like any other status)."""

    def __init__(self, policy: Mapping[str, frozenset[str]] = POLICY) -> None:
        self.policy = policy
        self._guarded: dict[str, tuple[Any, Any]] = {}  # method -> (handler, guarded handler)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or ANYONE in self.policy.get(method, ()):
            return handler
        cached = self._guarded.get(method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        guarded = handler
        for attribute, make in _MAKERS:
            inner = getattr(handler, attribute)
            if inner is not None:
                guarded = make(_guarded(inner, method, self.policy),
                               handler.request_deserializer, handler.response_serializer)
                break
        self._guarded[method] = (handler, guarded)
        return guarded
