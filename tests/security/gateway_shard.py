"""A gateway and a shard as real processes on loopback, for the attacks on the shared link, the
pace rules and the session bounds (test_shard_link.py, test_pace.py, test_slow_reader.py)."""

from __future__ import annotations

import contextlib
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.local.pki import session_pki
from machiavelox.local.processes import Proc, check_all_clean, free_port, start
from tests.support.client import PlayClient, login

KEY = "security-test-key-0123456789"
PLAYERS = ("ann", "bob", "cy")


@dataclass
class Cluster:
    tmp: Path
    shard: Proc
    gateway: Proc
    procs: list[Proc] = field(default_factory=list)

    def metric(self, proc: Proc, name: str, labels: str = "") -> float | None:
        """The value of one series of `proc`'s /metrics (None: no such series)."""
        port = proc.env["MACHIAVELOX_METRICS_PORT"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        for line in text.splitlines():
            head, _, value = line.rpartition(" ")
            if head == name + (f"{{{labels}}}" if labels else ""):
                return float(value)
        return None

    def series(self, proc: Proc, name: str) -> list[str]:
        port = proc.env["MACHIAVELOX_METRICS_PORT"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        return [line for line in text.splitlines() if line.startswith(name + "{")]


def shard_env(port: int, **extra: str) -> dict[str, str]:
    return {"MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(port),
            "MACHIAVELOX_METRICS_PORT": str(free_port()), **extra}


@contextlib.contextmanager
def cluster(tmp: Path, gateway: dict[str, str] | None = None,
            shard: dict[str, str] | None = None) -> Iterator[Cluster]:
    """One shard (`shard-0`) and one gateway routing to it; extra settings per process."""
    shard_port = free_port()
    procs: list[Proc] = []
    try:
        shard_proc = start("shard", "table", shard_env(shard_port, **(shard or {})), tmp)
        procs.append(shard_proc)
        gateway_proc = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_METRICS_PORT": str(free_port()),
            "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0=127.0.0.1:{shard_port}",
            **(gateway or {})}, tmp)
        procs.append(gateway_proc)
        yield Cluster(tmp, shard_proc, gateway_proc, procs)
    finally:
        check_all_clean(procs)


async def create_table(shard: Proc, table_id: str, players: tuple[str, ...] = PLAYERS,
                       **fields: Any) -> None:
    """As matchmaking does (its certificate); `fields`: more of the request (a classic
    table's `ruleset` and `classic` variants)."""
    async with session_pki().tls("matchmaking").channel(shard.address, "table") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table_id, player_ids=list(players),
                                         kind=table_pb2.MATCH_KIND_SINGLE, **fields),
            timeout=5)


@contextlib.asynccontextmanager
async def app(address: str) -> AsyncIterator[grpc.aio.Channel]:
    """An app's channel to the gateway (each test's own)."""
    async with grpc.aio.insecure_channel(address) as channel:
        yield channel


async def seated(channel: grpc.aio.Channel, player: str, table_id: str,
                 last_seq: int = 0, batched: bool = False) -> PlayClient:
    """A logged-in player's Play stream at `table_id`, past its snapshot (or resume)."""
    client = PlayClient(channel, await login(channel, player))
    client.open(table_id, last_seq=last_seq, batched=batched)
    if not last_seq:
        first = await client.next()
        assert first.WhichOneof("kind") == "snapshot", first
    return client


def refusal_code(response: gateway_pb2.PlayResponse) -> str:
    return response.refused.refusal.code if response.WhichOneof("kind") == "refused" else ""


async def draw_index(client: PlayClient, seat: rules.Seat) -> int:
    """Draw, and the arrival index of its ack (1: the table's first action, so the table
    still plays)."""
    client.act(rules.Draw(seat))
    ack = await client.until(lambda r: r.WhichOneof("kind") == "ack")
    return int(ack.ack.arrival_index)


async def drawn_card(client: PlayClient, seat: rules.Seat) -> rules.Card:
    """Draw, and the card drawn (from the player's own `drew` event)."""
    client.act(rules.Draw(seat))
    own = codec.seat_to_pb(seat)
    event = await client.until(lambda r: r.WhichOneof("kind") == "event"
                               and r.event.kind == "drew" and r.event.player == own)
    return rules.ALL_CARDS[event.event.cards[0].index]


async def churn(client: PlayClient, seat: rules.Seat, card: rules.Card, actions: int) -> int:
    """Declare and undeclare `card` in turn, `actions` times, each answered before the next;
    the last sequence number seen."""
    last = acked = 0
    for i in range(actions):
        action: rules.Action = (rules.Declare(seat, (card,)) if i % 2 == 0
                                else rules.Undeclare(seat, (card,)))
        action_id = client.act(action)
        while acked == 0 or last < acked:  # its ack, and its events (ack.seq: the first)
            response = await client.next(10)
            kind = response.WhichOneof("kind")
            if kind == "event":
                last = response.event.seq
            if kind in ("ack", "refused") and (
                    response.ack.client_action_id == action_id
                    or response.refused.client_action_id == action_id):
                assert kind == "ack", response
                acked = response.ack.seq
        acked = 0
    return last


def conclude_request(action_id: str) -> gateway_pb2.PlayRequest:
    """An action the rules refuse at once (no calata to conclude): it still takes an arrival."""
    return gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
        client_action_id=action_id, action=common_pb2.Action(conclude=common_pb2.Empty())))


def rss_kb(proc: Proc) -> int:
    for line in Path(f"/proc/{proc.popen.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")
