"""The cluster the classic end-to-end tests play on (test_session_e2e, test_ranked_e2e): scoring
on PostgreSQL (a throwaway schema, as deployed), one shard (rules clock x10, seeded deals),
matchmaking reading scoring's results log, and the gateway, as real processes; and scoring's
results log as a subscriber reads it, followed for each test (`followed`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from machiavelox._gen.v1 import scoring_pb2, scoring_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, free_port, start
from tests.support.pg import pg_schema

KEY = "test-key-0123456789abcdef"
SCALE = 10  # the rules clock
SEED = 3  # the shard's deals
WAIT_S = 30.0  # the most the results may lag the game's end
POLL_S = 0.1


@contextlib.contextmanager
def classic_cluster(tmp: Path, schema: str, matchmaking: dict[str, str]
                    ) -> Iterator[dict[str, Proc]]:
    """The processes (by name); `matchmaking`: its own further settings."""
    procs: dict[str, Proc] = {}
    with pg_schema(schema) as (url, _):
        try:
            procs["scoring"] = start("scoring", "scoring", {
                "MACHIAVELOX_SCORING_DATABASE_URL": url, "MACHIAVELOX_METRICS_PORT": "0"}, tmp)
            scoring = procs["scoring"].address
            shard_port = free_port()
            shards = f"shard-0=127.0.0.1:{shard_port}"
            procs["shard"] = start("shard", "table", {
                "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(shard_port),
                "MACHIAVELOX_SCORING_ADDRESS": scoring, "MACHIAVELOX_PRESENCE_ADDRESS": "",
                "MACHIAVELOX_METRICS_PORT": "0", "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE),
                "MACHIAVELOX_TABLE_DEAL_SEED": str(SEED)}, tmp)
            procs["matchmaking"] = start("matchmaking", "matchmaking", {
                "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
                "MACHIAVELOX_SCORING_ADDRESS": scoring, "MACHIAVELOX_METRICS_PORT": "0",
                "MACHIAVELOX_MATCHMAKING_TICK_MS": "50", **matchmaking}, tmp)
            procs["gateway"] = start("gateway", "gateway", {
                "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
                "MACHIAVELOX_GATEWAY_SHARDS": shards, "MACHIAVELOX_PRESENCE_ADDRESS": "",
                "MACHIAVELOX_METRICS_PORT": "0",
                "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": procs["matchmaking"].address,
                # the bots act at the sped-up clock's pace; the buckets count real seconds
                "MACHIAVELOX_GATEWAY_ACTION_RATE": "50", "MACHIAVELOX_GATEWAY_ACTION_BURST": "100",
                "MACHIAVELOX_GATEWAY_RESYNC_RATE": "50",
                "MACHIAVELOX_GATEWAY_RESYNC_BURST": "100"}, tmp)
            yield procs
        finally:  # the gateway first, then matchmaking, the shard, scoring
            check_all_clean(reversed(list(procs.values())))


class Subscriber:
    """Scoring's results log as a subscriber reads it: from offset 0, kept open."""

    def __init__(self) -> None:
        self.records: list[scoring_pb2.ResultRecord] = []

    async def follow(self, scoring: Proc) -> None:
        async with aio_channel(scoring, "results-reader") as channel:
            stream = scoring_pb2_grpc.ScoringServiceStub(channel).SubscribeResults(
                scoring_pb2.SubscribeResultsRequest(from_offset=0))
            async for item in stream:
                self.records.append(item.record)

    def of(self, players: list[str]) -> list[scoring_pb2.ReportResultRequest]:
        return [r.result for r in self.records if list(r.result.player_ids) == players]

    async def until_ended(self, players: list[str]) -> list[scoring_pb2.ReportResultRequest]:
        """The records of the table of `players`, once one says its session ended."""
        for _ in range(int(WAIT_S / POLL_S)):
            if any(r.match_ended for r in self.of(players)):
                return self.of(players)
            await asyncio.sleep(POLL_S)
        raise AssertionError(f"no session end of {players} in the log: {self.of(players)}")


@dataclass
class Cluster:
    procs: dict[str, Proc]
    results: Subscriber = field(default_factory=Subscriber)

    @property
    def gateway(self) -> Proc:
        return self.procs["gateway"]


@contextlib.asynccontextmanager
async def followed(procs: dict[str, Proc]) -> AsyncIterator[Cluster]:
    """The processes, and a subscriber following scoring's log (from offset 0) meanwhile."""
    out = Cluster(procs)
    task = asyncio.create_task(out.results.follow(procs["scoring"]))
    try:
        yield out
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
