"""The small clusters most fault tests play on: scoring, one shard (`shard-0`) or two
(`shard-0`, `shard-1`: the agorà's), and a gateway with the development Login, all real
processes on loopback; and three players seated at a table."""

from __future__ import annotations

from pathlib import Path

import grpc

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2, table_pb2_grpc
from machiavelox.local.processes import Proc, aio_channel, free_port, start
from tests.support.client import PlayClient, login

from .players import STEP_S, Player

KEY = "fault-test-key-0123456789abcdef"


def start_table_cluster(tmp: Path, started: dict[str, Proc], *, shard_port: int = 0,
                        gateway_to: int = 0, shard_env: dict[str, str] | None = None,
                        gateway_env: dict[str, str] | None = None) -> None:
    """Start scoring, shard-0 (on `shard_port`, or a free one) and a gateway that reaches the
    shard on `gateway_to` (a proxy's port; default: the shard's own) into `started`, in that
    order; the caller stops them (`check_all_clean`), whatever failed."""
    port = shard_port or free_port()
    started["scoring"] = start("scoring", "scoring", {}, tmp)
    started["shard"] = start("shard", "table", {
        "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(port),
        "MACHIAVELOX_SCORING_ADDRESS": started["scoring"].address, **(shard_env or {})}, tmp)
    started["gateway"] = start("gateway", "gateway", {
        "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
        "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{gateway_to or port}",
        **(gateway_env or {})}, tmp)


def start_two_shards(tmp: Path, started: dict[str, Proc], env: dict[str, str]) -> None:
    """Start scoring, shard-0 and shard-1 (no presence, a 1 s grace) and a gateway reaching
    both into `started`, every one with `env` too, in that order; the caller stops them
    (`check_all_clean`), whatever failed."""
    started["scoring"] = start("scoring", "scoring", {**env}, tmp)
    for sid in ("shard-0", "shard-1"):
        started[sid] = start(sid, "table", {
            **env, "MACHIAVELOX_SHARD_ID": sid,
            "MACHIAVELOX_SCORING_ADDRESS": started["scoring"].address,
            "MACHIAVELOX_PRESENCE_ADDRESS": "", "MACHIAVELOX_GRACE_S": "1"}, tmp)
    started["gateway"] = start("gateway", "gateway", {
        **env, "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
        "MACHIAVELOX_GATEWAY_SHARDS": ",".join(f"{sid}={started[sid].address}"
                                               for sid in ("shard-0", "shard-1")),
        "MACHIAVELOX_PRESENCE_ADDRESS": ""}, tmp)


async def seat_players(procs: dict[str, Proc], table_id: str, names: tuple[str, ...],
                       channel: grpc.aio.Channel,
                       kind: table_pb2.MatchKind.ValueType = table_pb2.MATCH_KIND_SINGLE,
                       ) -> dict[str, Player]:
    """Create the table (as matchmaking does) and open each player's Play stream through the
    gateway `channel`: their first message, the snapshot, is taken."""
    async with aio_channel(procs["shard"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table_id, player_ids=list(names), kind=kind),
            timeout=10)
    out: dict[str, Player] = {}
    for seat, name in zip(rules.SEATS, names, strict=True):
        client = PlayClient(channel, await login(channel, name))
        client.open(table_id)
        assert (await client.next(STEP_S)).WhichOneof("kind") == "snapshot"
        out[name] = Player(client, table_id, seat)
    return out
