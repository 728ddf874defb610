"""ScoringService: decode the request, call the results store, encode the answer.

SubscribeResults streams every stored record with offset >= `from_offset`, then new records as
they are stored. Delivery is at-least-once and resumable: a subscriber that comes back with the
offset of the last record it processed + 1 loses nothing, because offsets become visible only
in order (see `store`). New records reach a live stream by wake-ups, not by a tight poll:

- on any backend, an append wakes the followers of its own process at once;
- on PostgreSQL, the append also sends NOTIFY on commit; every replica LISTENs on one dedicated
  connection and wakes its followers, so a result reported to replica A reaches a subscriber of
  replica B within milliseconds;
- a follower re-reads anyway every `poll_s` (MACHIAVELOX_SCORING_POLL_S), which bounds the
  delay if a notification is lost while the listener reconnects.

On shutdown, open streams end with UNAVAILABLE `scoring/stopping`: subscribe again (to any
replica) from the next offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeAlias

import grpc

from machiavelox._gen.v1 import classic_pb2, common_pb2, scoring_pb2, scoring_pb2_grpc, table_pb2
from machiavelox.platform.errors import invalid_argument, not_found, shown, unavailable

from .classic import decode_classic, is_classic, standings_to_pb
from .store import Report, Result, ResultStore, StoredResult, StoreUnavailableError

log = logging.getLogger(__name__)

SERVICE_NAME: str = scoring_pb2.DESCRIPTOR.services_by_name["ScoringService"].full_name
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
SEATS = frozenset(common_pb2.Seat.values())
PLAYING_SEATS = SEATS - {common_pb2.SEAT_UNSPECIFIED}
KINDS = (table_pb2.MATCH_KIND_SINGLE, table_pb2.MATCH_KIND_LONG)

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"


class ScoringServicer(scoring_pb2_grpc.ScoringServiceServicer):
    def __init__(self, store: ResultStore) -> None:
        self._store = store
        self._stopping = asyncio.Event()

    async def stop_streams(self) -> None:
        """End every open SubscribeResults stream (on shutdown, before the grace period)."""
        self._stopping.set()

    async def ReportResult(self, request: scoring_pb2.ReportResultRequest,
                           context: Context) -> scoring_pb2.ReportResultResponse:
        result: Report
        if is_classic(request):
            result = decode_classic(request)
            what = f"classic report {result.report}"
        else:
            result = decode_result(request)
            what = f"smazzata {result.smazzata}"
        with _store_errors():
            appended = await self._store.append(result)
        extra = {"table_id": result.table_id, "offset": appended.offset}
        if appended.differs:
            log.warning("%s was already stored with a different result: the first "
                        "report is kept", what, extra=extra)
        else:
            log.info("%s %s", what,
                     "stored" if appended.created else "already stored (a retry)", extra=extra)
        return scoring_pb2.ReportResultResponse(offset=appended.offset)

    async def GetLeaderboard(self, request: scoring_pb2.GetLeaderboardRequest,
                             context: Context) -> scoring_pb2.GetLeaderboardResponse:
        limit = min(request.limit or DEFAULT_LIMIT, MAX_LIMIT)
        classic = request.ruleset == classic_pb2.RULESET_CLASSIC
        if not classic and request.ruleset not in (classic_pb2.RULESET_UNSPECIFIED,
                                                   classic_pb2.RULESET_MACHIAVELOX):
            raise invalid_argument("table/bad-ruleset", f"unknown ruleset {request.ruleset}")
        with _store_errors():  # (classic: the ranked classic leaderboard, issue 16)
            rows = await (self._store.classic_leaderboard(limit) if classic
                          else self._store.leaderboard(limit))
        return scoring_pb2.GetLeaderboardResponse(rows=[
            scoring_pb2.LeaderboardRow(player_id=r.player_id, points=r.points, played=r.played,
                                       rating=r.rating)
            for r in rows])

    async def GetStandings(self, request: scoring_pb2.GetStandingsRequest,
                           context: Context) -> scoring_pb2.GetStandingsResponse:
        if not request.table_id:
            raise invalid_argument("standings/invalid", "table_id is required")
        with _store_errors():
            standings = await self._store.standings(request.table_id)
            if standings is None:
                session = await self._store.classic_standings(request.table_id)
                if session is not None:
                    return standings_to_pb(session)
        if standings is None:
            raise not_found("standings/unknown-table", "no long match nor classic session has "
                            f"results at table {shown(request.table_id)!r}")
        return scoring_pb2.GetStandingsResponse(
            totals=standings.totals, player_ids=standings.player_ids,
            smazzate=standings.smazzate)

    async def SubscribeResults(
            self, request: scoring_pb2.SubscribeResultsRequest,
            context: Context) -> AsyncIterator[scoring_pb2.SubscribeResultsResponse]:
        log.info("subscriber joined", extra={"offset": request.from_offset,
                                             "peer": context.peer()})
        with _store_errors():
            async for record in self._store.follow(request.from_offset, self._stopping):
                yield scoring_pb2.SubscribeResultsResponse(record=encode_record(record))
        raise unavailable("scoring/stopping",
                          "the service is stopping: subscribe again from your next offset")


def decode_result(request: scoring_pb2.ReportResultRequest) -> Result:
    """The store's view of a report, or INVALID_ARGUMENT `result/invalid`."""
    problem = _problem(request)
    if problem is not None:
        raise invalid_argument("result/invalid", problem)
    p1, p2, p3 = request.player_ids
    s1, s2, s3 = request.result.scores
    return Result(table_id=request.table_id, smazzata=request.smazzata,
                  long_match=request.kind == table_pb2.MATCH_KIND_LONG,
                  competitive=request.competitive, player_ids=(p1, p2, p3), scores=(s1, s2, s3),
                  payload=request.SerializeToString(deterministic=True))


def _problem(request: scoring_pb2.ReportResultRequest) -> str | None:
    if not request.table_id:
        return "table_id is required"
    if request.smazzata < 1:
        return "smazzata counts from 1"
    if request.kind not in KINDS:
        return "kind must be single or long"
    if request.kind == table_pb2.MATCH_KIND_LONG and request.competitive:
        return "a long match is never competitive (M13)"
    players = list(request.player_ids)
    if len(players) != 3 or not all(players) or len(set(players)) != 3:
        return f"three distinct player ids are required, not {shown(players, 200)}"
    if not request.HasField("result"):
        return "result is required"
    if len(request.result.scores) != 3:
        return f"three scores (p1, p2, p3) are required, not {len(request.result.scores)}"
    if request.result.winner not in SEATS:
        return f"unknown winner seat {request.result.winner}"
    if any(seat not in PLAYING_SEATS for seat in request.result.draw):
        return "a draw lists seats p1..p3 only"
    return None


def encode_record(record: StoredResult) -> scoring_pb2.ResultRecord:
    return scoring_pb2.ResultRecord(
        offset=record.offset, stored_at_ms=record.stored_at_ms,
        result=scoring_pb2.ReportResultRequest.FromString(record.payload))


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    try:
        yield
    except StoreUnavailableError as exc:
        log.warning("results store unavailable: %s", exc)
        raise unavailable("store/unavailable", "the results store is unavailable; retry") from exc

