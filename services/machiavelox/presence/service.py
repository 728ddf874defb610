"""The PresenceService servicer: checks requests, calls the store, encodes the answers."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc

from machiavelox._gen.v1 import presence_pb2, presence_pb2_grpc
from machiavelox.platform.errors import ServiceError, invalid_argument, unavailable
from machiavelox.platform.server import Register

from .hub import LivenessChange
from .store import Presence, PresenceStore, StoreUnavailableError

log = logging.getLogger(__name__)

SERVICE_NAME: str = presence_pb2.DESCRIPTOR.services_by_name["PresenceService"].full_name
MAX_ID_CHARS = 64
MAX_PLAYERS_PER_CALL = 1000
INVALID = "presence/invalid"

Context = Any  # grpc.aio.ServicerContext (grpc ships no type stubs)


def check_player_id(player_id: str) -> str:
    if not player_id:
        raise invalid_argument(INVALID, "player_id must not be empty")
    if len(player_id) > MAX_ID_CHARS:
        raise invalid_argument(INVALID, f"player_id must be at most {MAX_ID_CHARS} characters, "
                                        f"not {len(player_id)}")
    return player_id


def check_player_ids(player_ids: Iterable[str], *, unique: bool = False) -> list[str]:
    ids = [check_player_id(p) for p in player_ids]
    if len(ids) > MAX_PLAYERS_PER_CALL:
        raise invalid_argument(INVALID, f"at most {MAX_PLAYERS_PER_CALL} players per call, "
                                        f"not {len(ids)}")
    return list(dict.fromkeys(ids)) if unique else ids


def _store_down(exc: StoreUnavailableError) -> ServiceError:
    log.warning("store unavailable: %s", exc)
    return unavailable("presence/store-unavailable", "presence store unavailable, retry")


def encode_presence(p: Presence) -> presence_pb2.PlayerPresence:
    return presence_pb2.PlayerPresence(player_id=p.player_id, connected=p.connected,
                                       gateway_id=p.gateway_id, last_seen_ms=p.last_seen_ms,
                                       alive=p.alive)


def encode_change(c: LivenessChange) -> presence_pb2.WatchLivenessResponse:
    return presence_pb2.WatchLivenessResponse(change=presence_pb2.LivenessChange(
        player_id=c.player_id, alive=c.alive, since_ms=c.since_ms,
        silent_for_ms=c.silent_for_ms, unknown=c.unknown))


class PresenceServicer(presence_pb2_grpc.PresenceServiceServicer):
    def __init__(self, store: PresenceStore) -> None:
        self._store = store

    async def Heartbeat(self, request: presence_pb2.HeartbeatRequest, context: Context
                        ) -> presence_pb2.HeartbeatResponse:
        player = check_player_id(request.player_id)
        try:
            beat = await self._store.heartbeat(player)
        except StoreUnavailableError as exc:
            raise _store_down(exc) from exc
        if beat.revived:
            log.info("player alive", extra={"player": player})
        return presence_pb2.HeartbeatResponse(at_ms=beat.at_ms)

    async def SetConnected(self, request: presence_pb2.SetConnectedRequest, context: Context
                           ) -> presence_pb2.SetConnectedResponse:
        player = check_player_id(request.player_id)
        gateway = request.gateway_id
        if len(gateway) > MAX_ID_CHARS:
            raise invalid_argument(INVALID, f"gateway_id must be at most {MAX_ID_CHARS} "
                                            "characters")
        if request.connected and not gateway:
            raise invalid_argument(INVALID, "a connected player needs a gateway_id")
        try:
            applied = await self._store.set_connected(player, gateway, request.connected)
        except StoreUnavailableError as exc:
            raise _store_down(exc) from exc
        context_fields = {"player": player, "gateway_id": gateway}
        if not applied:
            log.info("late disconnect from a former gateway ignored", extra=context_fields)
        else:
            log.info("player %s", "connected" if request.connected else "disconnected",
                     extra=context_fields)
        return presence_pb2.SetConnectedResponse()

    async def GetPresence(self, request: presence_pb2.GetPresenceRequest, context: Context
                          ) -> presence_pb2.GetPresenceResponse:
        players = check_player_ids(request.player_ids)
        try:
            found = await self._store.presence(players)
        except StoreUnavailableError as exc:
            raise _store_down(exc) from exc
        return presence_pb2.GetPresenceResponse(players=[encode_presence(p) for p in found])

    async def WatchLiveness(self, request: presence_pb2.WatchLivenessRequest, context: Context
                            ) -> AsyncIterator[presence_pb2.WatchLivenessResponse]:
        """The current view of each player, then every change, until the client leaves or
        this replica shuts down (then the stream ends with OK and the shard watches again).
        While this replica cannot use its store every player is `unknown` (issue 13 item 1):
        the stream stays open and is told the truth when the store is back."""
        players = check_player_ids(request.player_ids, unique=True)
        if not players:
            raise invalid_argument(INVALID, "watch at least one player")
        watch = await self._store.watch(players)
        try:
            while (change := await watch.next()) is not None:
                yield encode_change(change)
            if watch.lagging:
                raise unavailable("presence/lagging", "the watcher fell behind; watch again")
        finally:
            self._store.hub.unwatch(watch)


def register(servicer: PresenceServicer) -> Register:
    """A `platform.server.Register` adding `servicer` to a server."""

    def add(server: grpc.aio.Server) -> None:
        presence_pb2_grpc.add_PresenceServiceServicer_to_server(servicer, server)

    return add
