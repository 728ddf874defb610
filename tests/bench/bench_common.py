"""What the cluster bench's processes share: settings, constants, and the wire forms of the
gateway's Play protocol (raw bytes, so the load generators spend as little CPU as an app would)."""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2, table_pb2, table_pb2_grpc
from machiavelox.identity.tokens import HmacTokens
from machiavelox.local.pki import Pki, session_pki
from machiavelox.platform.tls import InternalTls

HERE = Path(__file__).resolve().parent
KEY = "bench-key-0123456789abcdef"
PLAY = "/machiavelox.v1.GatewayService/Play"
ECHO = "/bench.Echo/Stream"
SHARD = "shard-0"
P99_LIMIT_MS = 50.0
RATE_FLOOR = 0.90  # a step holds when it achieves at least this share of its actions/s target
MAX_OUTSTANDING = 5  # per player: past this the generator skips a beat (and counts it)
MAX_HELPER_S = 3600.0  # every helper process exits by itself after this
DISTURBED = 20.0  # CPU% of other processes past which a measurement counts as disturbed
QUIET_WAIT_S = 120.0  # the longest the bench waits for a quiet machine before a measurement
RETRIES = 2  # a capacity step that failed while disturbed is measured again, this many times
REPLY_TIMEOUT_S = 300.0  # the longest a helper may take to answer a command

# The first byte of a serialized PlayResponse names its oneof field (field << 3 | 2).
SNAPSHOT, EVENT, ACK, REFUSED, BATCH = 0x0A, 0x12, 0x1A, 0x22, 0x2A
# set by the command line
OPTIONS: dict[str, Any] = {"batched": True, "via": "shard", "quiet_wait_s": 120.0,
                           "internal_tls": "mtls"}
PKI_DIR = "BENCH_PKI_DIR"  # the bench's PKI, for its helper processes ("off": plaintext)
PER_TABLE = 100  # actions per table in (b): 50 calate, a busy but plausible table
AGING, AGING_QUICK = 6000, 1000  # actions at one table in (b3)
# A load-generator player's actions: Declare and Undeclare of its card in turn, and a Draw
# after every 10 pairs (its pozzetto is empty then), which keeps the table's inactivity
# countdown (M7, 2 min) from firing: the tables of a step all start together and would
# otherwise all get their forced draws at the same instant, a burst real tables do not have.
CYCLE = 21
LAST_KIND = {"declare": "declared", "undeclare": "void"}  # the last event of each action


def bench_pki() -> Pki | None:
    """The PKI whose certificates the services got (None: internal TLS off): a helper process
    gets the bench's through PKI_DIR; the bench itself uses its process's `session_pki`, as
    `machiavelox.local.processes.start` does for the services."""
    given = os.environ.get(PKI_DIR)
    if given is not None:
        return None if given == "off" else Pki(Path(given))
    return None if OPTIONS["internal_tls"] == "off" else session_pki()


def helper_env() -> dict[str, str]:
    pki = bench_pki()
    return {PKI_DIR: "off" if pki is None else str(pki.directory)}


# (b) sends one player's actions back to back (about a thousand a second), far past the pace
# rules' defaults (docs/security.md): the limits are raised so that the path is measured; every
# action still passes the buckets, so their cost is in the figures.
UNPACED = {"MACHIAVELOX_GATEWAY_ACTION_RATE": "1000000",
           "MACHIAVELOX_GATEWAY_ACTION_BURST": "1000000",
           "MACHIAVELOX_GATEWAY_MESSAGE_RATE": "1000000",
           "MACHIAVELOX_GATEWAY_MESSAGE_BURST": "1000000",
           "MACHIAVELOX_TABLE_ACTION_RATE": "1000000", "MACHIAVELOX_TABLE_ACTION_BURST": "1000000"}


def services_env() -> dict[str, str]:
    """The services' settings for --internal-tls (mtls: `start` gives each its certificate)."""
    return {"MACHIAVELOX_INTERNAL_TLS": "off"} if OPTIONS["internal_tls"] == "off" else {}


@functools.cache
def _credentials(pki: Pki | None, role: str) -> InternalTls:
    return InternalTls.off() if pki is None else pki.tls(role)


def internal_tls(role: str) -> InternalTls:
    """The credentials of `role` in the bench's transport (off: plaintext)."""
    return _credentials(bench_pki(), role)


def internal_channel(address: str, role: str,
                     options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """A channel to the shard at `address` as `role` (matchmaking creates tables, a gateway
    holds the Connect stream)."""
    return internal_tls(role).channel(address, "table", options=options)


def now_ns() -> int:
    return time.perf_counter_ns()


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = data[i]
        value |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            return value, i
        shift += 7


def event_seq(message: bytes) -> int:
    """The seq of a serialized PlayResponse{event}: its first field (upb writes in field order)."""
    _, i = _varint(message, 1)  # the length of the Event
    if message[i] != 0x08:  # seq is field 1, varint
        return gateway_pb2.PlayResponse.FromString(message).event.seq
    return _varint(message, i + 1)[0]


def token_for(player: str) -> tuple[tuple[str, str], ...]:
    token, _ = HmacTokens(KEY.encode()).issue(player)
    return (("authorization", f"Bearer {token}"),)


def join_bytes(table_id: str) -> bytes:
    return gateway_pb2.PlayRequest(join=gateway_pb2.Join(
        table_id=table_id, batched=OPTIONS["batched"])).SerializeToString()


def step_of(message: bytes) -> tuple[common_pb2.Ack | None, common_pb2.ActionRefused | None,
                                     list[common_pb2.Event]]:
    """(ack, refusal, events) of one serialized PlayResponse, in either protocol."""
    response = gateway_pb2.PlayResponse.FromString(message)
    kind = response.WhichOneof("kind")
    if kind == "batch":
        b = response.batch
        return (b.ack if b.HasField("ack") else None,
                b.refused if b.HasField("refused") else None, list(b.events))
    if kind == "ack":
        return response.ack, None, []
    if kind == "refused":
        return None, response.refused, []
    if kind == "event":
        return None, None, [response.event]
    return None, None, []


def action_bytes(action_id: str, action: common_pb2.Action) -> bytes:
    return gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
        client_action_id=action_id, action=action)).SerializeToString()


def pair_actions(seat: rules.Seat, card_index: int) -> tuple[common_pb2.Action, common_pb2.Action]:
    card = rules.ALL_CARDS[card_index]
    return (codec.action_to_pb(rules.Declare(seat, (card,))),
            codec.action_to_pb(rules.Undeclare(seat, (card,))))


DRAW = codec.action_to_pb(rules.Draw(rules.Seat.P1))  # the wire form has no seat


async def create_table(shard: str, table_id: str, players: list[str]) -> None:
    async with internal_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table_id, player_ids=players,
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=10)


async def join_and_draw(call: Any, table_id: str, seat: rules.Seat, draw: bool = True,
                        wait_card: bool = True) -> int:
    """Join, take the snapshot, draw one card; the drawn card's index (-1: not waited for)."""
    await call.write(join_bytes(table_id))
    while (await call.read())[0] != SNAPSHOT:
        pass
    if draw:
        await call.write(action_bytes("draw", DRAW))
    if not (draw and wait_card):
        return -1
    own = codec.seat_to_pb(seat)
    while True:
        message = await call.read()
        if message is grpc.aio.EOF:
            raise EOFError(f"{table_id}: the stream ended during setup")
        _, refused, events = step_of(message)
        if refused is not None:
            raise RuntimeError(f"{table_id}: draw refused: {refused.refusal.code}")
        for ev in events:
            if ev.kind == "drew" and ev.player == own and ev.cards:
                return int(ev.cards[0].index)
