"""Attack: request frames that do not decode (corrupt bytes, a truncated varint or length, bad
UTF-8 in a string field, nesting past protobuf's limit), sent raw with identity serializers to
the unary and streaming RPCs of every service (the controller serves health alone), each
process real and on loopback.

Proves, for each frame: the call ends with INVALID_ARGUMENT `request/malformed` within a
second (not UNKNOWN, not a hang until the client's deadline), no later frame of the stream is
read, the service logs one WARNING for it and no ERROR or traceback, and it stays SERVING and
answers a valid call next. On the gateway's Play stream, a session that joined and then sends
garbage ends that way, its next action never reaches the table, and another player's session
at the same table keeps playing. An id echoed back in a status is cut, so a 100 KB table id
still gets its NOT_FOUND (not a status too big for the trailers); a refusal the gateway relays
from matchmaking carries its reason once; a player name with a final newline is refused.

Without the error interceptor's decoder, a unary call gets UNKNOWN with an ERROR traceback,
and a stream hangs: the gateway's reader task dies on the DecodeError and later actions are
ignored with no status at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import (
    gateway_pb2,
    gateway_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    presence_pb2,
    presence_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    channel,
    check_all_clean,
    free_port,
    start,
)
from machiavelox.platform.errors import MALFORMED_REASON, REASON_KEY
from tests.controller.fake_kube import running
from tests.controller.test_controller_processes import start_controller
from tests.security.malformed_frames import bad_frames
from tests.support.client import PlayClient, hmac_bearer, login

pytestmark = pytest.mark.timeout(240)

KEY = "malformed-test-key-0123456789"
WITHIN_S = 1.0  # the status arrives within this (the call's own deadline)
PLAYERS = ("ann", "bob", "cy")


# ---------------------------------------------------------------------------------- cluster
@pytest.fixture(scope="module")
def procs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    """Every service as a real process: scoring, presence, one shard, matchmaking, gateway,
    and the capacity controller (health only) over a fake Kubernetes API."""
    tmp = tmp_path_factory.mktemp("malformed")
    started: dict[str, Proc] = {}
    kube = contextlib.ExitStack()

    def run(name: str, command: str, env: dict[str, str]) -> Proc:
        started[name] = start(name, command, {"MACHIAVELOX_METRICS_PORT": str(free_port()),
                                              "MACHIAVELOX_GRACE_S": "1", **env}, tmp)
        return started[name]

    try:
        scoring = run("scoring", "scoring", {
            "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{tmp / 'scoring.sqlite3'}"})
        presence = run("presence", "presence", {})
        shard = run("table", "table", {"MACHIAVELOX_SHARD_ID": "shard-0",
                                       "MACHIAVELOX_SCORING_ADDRESS": scoring.address,
                                       "MACHIAVELOX_PRESENCE_ADDRESS": presence.address})
        matchmaking = run("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS":
            f"shard-0={shard.address}", "MACHIAVELOX_SCORING_ADDRESS": scoring.address})
        run("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0={shard.address}",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": matchmaking.address,
            "MACHIAVELOX_PRESENCE_ADDRESS": presence.address})
        api = kube.enter_context(running(namespace="mx", statefulset="shard", replicas=1))
        started["controller"] = start_controller("controller", api, [shard], tmp)
        yield started
    finally:
        try:
            check_all_clean(started.values())
        finally:
            kube.close()


# ---------------------------------------------------------------------------------- targets
@dataclass(frozen=True)
class Target:
    service: str  # the process
    method: str
    request: Descriptor
    style: str  # unary | server_stream | stream (the request is a stream)
    role: str  # the certificate the test presents (plaintext to the gateway)
    token: bool = False  # the call carries a player's bearer token

    @property
    def name(self) -> str:
        return f"{self.service}:{self.method.rsplit('/', 1)[-1]}"


HEALTH = "/grpc.health.v1.Health/Check"
TARGETS = [
    Target("gateway", "/machiavelox.v1.GatewayService/Login",
           gateway_pb2.LoginRequest.DESCRIPTOR, "unary", "app"),
    Target("gateway", "/machiavelox.v1.GatewayService/Play",
           gateway_pb2.PlayRequest.DESCRIPTOR, "stream", "app", token=True),
    Target("gateway", "/machiavelox.v1.MatchmakingService/CancelTicket",
           matchmaking_pb2.CancelTicketRequest.DESCRIPTOR, "unary", "app", token=True),
    Target("gateway", "/machiavelox.v1.MatchmakingService/JoinFriendlyTable",
           matchmaking_pb2.JoinFriendlyTableRequest.DESCRIPTOR, "server_stream", "app",
           token=True),
    Target("table", "/machiavelox.v1.TableAuthorityService/CreateTable",
           table_pb2.CreateTableRequest.DESCRIPTOR, "unary", "matchmaking"),
    Target("table", "/machiavelox.v1.TableAuthorityService/Connect",
           table_pb2.ConnectRequest.DESCRIPTOR, "stream", "gateway"),
    Target("matchmaking", "/machiavelox.v1.MatchmakingService/CancelTicket",
           matchmaking_pb2.CancelTicketRequest.DESCRIPTOR, "unary", "gateway", token=True),
    Target("matchmaking", "/machiavelox.v1.MatchmakingService/JoinFriendlyTable",
           matchmaking_pb2.JoinFriendlyTableRequest.DESCRIPTOR, "server_stream", "gateway",
           token=True),
    Target("scoring", "/machiavelox.v1.ScoringService/ReportResult",
           scoring_pb2.ReportResultRequest.DESCRIPTOR, "unary", "table"),
    Target("scoring", "/machiavelox.v1.ScoringService/SubscribeResults",
           scoring_pb2.SubscribeResultsRequest.DESCRIPTOR, "server_stream", "matchmaking"),
    Target("presence", "/machiavelox.v1.PresenceService/Heartbeat",
           presence_pb2.HeartbeatRequest.DESCRIPTOR, "unary", "gateway"),
    Target("presence", "/machiavelox.v1.PresenceService/WatchLiveness",
           presence_pb2.WatchLivenessRequest.DESCRIPTOR, "server_stream", "table"),
    *(Target(service, HEALTH, health_pb2.HealthCheckRequest.DESCRIPTOR, "unary", "gateway")
      for service in ("gateway", "table", "matchmaking", "scoring", "presence", "controller")),
]
CASES = [pytest.param(target, kind, frame, id=f"{target.name}-{kind}")
         for target in TARGETS for kind, frame in bad_frames(target.request).items()]

# A valid frame sent after the bad one on a request stream: it must never be read.
NEXT_FRAME: dict[str, Message] = {
    "/machiavelox.v1.GatewayService/Play": gateway_pb2.PlayRequest(
        join=gateway_pb2.Join(table_id="shard-0.none")),
    "/machiavelox.v1.TableAuthorityService/Connect": table_pb2.ConnectRequest(items=[
        table_pb2.GatewayItem(table_id="shard-0.none", player_id="ann",
                              subscribe=table_pb2.Subscribe(from_seq=0))]),
}


def channel_to(proc: Proc, role: str) -> grpc.Channel:
    """A blocking channel (the asyncio client reports INTERNAL "Internal error from Core",
    not the server's status, when a write races the end of the call: grpc/grpc#36066)."""
    return channel(proc, role)


def valid_call(procs: dict[str, Proc], service: str) -> None:
    """One ordinary call the service must still answer."""
    proc = procs[service]
    if service == "gateway":
        with channel_to(proc, "app") as ch:
            reply = gateway_pb2_grpc.GatewayServiceStub(ch).Login(
                gateway_pb2.LoginRequest(player="ann"), timeout=5)
            assert reply.player_id == "ann"
    elif service == "table":
        with channel_to(proc, "matchmaking") as ch:
            load = table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(
                table_pb2.GetLoadRequest(), timeout=5)
            assert load.shard_id == "shard-0"
    elif service == "matchmaking":
        with channel_to(proc, "gateway") as ch:
            cancelled = matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CancelTicket(
                matchmaking_pb2.CancelTicketRequest(ticket_id="none"),
                metadata=hmac_bearer(KEY, "ann"), timeout=5)
            assert not cancelled.cancelled
    elif service == "scoring":
        with channel_to(proc, "results-reader") as ch:
            scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
                scoring_pb2.GetLeaderboardRequest(), timeout=5)
    elif service == "presence":
        with channel_to(proc, "gateway") as ch:
            presence_pb2_grpc.PresenceServiceStub(ch).GetPresence(
                presence_pb2.GetPresenceRequest(player_ids=["ann"]), timeout=5)
    else:  # the controller serves health alone
        assert serving(proc)


def serving(proc: Proc) -> bool:
    with channel_to(proc, "gateway") as ch:
        reply = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                      timeout=5)
    return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)


def send_bad(ch: grpc.Channel, target: Target, frame: bytes) -> tuple[
        grpc.StatusCode, str, list[bytes]]:
    """Send `frame` as `target`'s request (on a request stream, a valid frame after it); the
    final status, its reason, what was received."""
    metadata = hmac_bearer(KEY, "ann") if target.token else ()
    received: list[bytes] = []
    if target.style == "unary":
        call = ch.unary_unary(target.method).with_call
        try:
            response, _ = call(frame, metadata=metadata, timeout=WITHIN_S)
            received.append(response)
        except grpc.RpcError as err:
            return status_of(err)
        return grpc.StatusCode.OK, "", received
    if target.style == "server_stream":
        replies = ch.unary_stream(target.method)(frame, metadata=metadata, timeout=WITHIN_S)
    else:
        frames = iter([frame, NEXT_FRAME[target.method].SerializeToString()])
        replies = ch.stream_stream(target.method)(frames, metadata=metadata, timeout=WITHIN_S)
    try:
        received.extend(replies)
    except grpc.RpcError as err:
        code, reason, _ = status_of(err)
        return code, reason, received
    return grpc.StatusCode.OK, "", received


def status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode, str, list[bytes]]:
    trailers = dict(err.trailing_metadata() or ())
    return err.code(), str(trailers.get(REASON_KEY, "")), []


def new_log_lines(proc: Proc, offset: int) -> list[dict[str, Any]]:
    text = proc.log_path.read_bytes()[offset:].decode(errors="replace")
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append({"level": "RAW", "msg": line})
    return out


# ---------------------------------------------------------------------------------- attacks
@pytest.mark.parametrize(("target", "kind", "frame"), CASES)
def test_a_frame_that_does_not_decode_gets_invalid_argument_at_once(
        procs: dict[str, Proc], target: Target, kind: str, frame: bytes) -> None:
    proc = procs[target.service]
    offset = proc.log_path.stat().st_size
    with channel_to(proc, target.role) as ch:
        code, reason, received = send_bad(ch, target, frame)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, MALFORMED_REASON), (
        f"{target.name} answered a {kind} frame with {code.name} {reason!r}")
    assert received == [], "nothing is answered, and no frame after the bad one is read"

    assert serving(proc)
    valid_call(procs, target.service)
    lines = new_log_lines(proc, offset)
    warned = [r for r in lines if r.get("level") == "WARNING"
              and r.get("method") == target.method and "malformed" in str(r.get("msg"))]
    assert len(warned) == 1, f"one WARNING per bad frame: {lines}"
    assert not [r for r in lines if r.get("level") in ("ERROR", "CRITICAL", "RAW")
                or "exc" in r], f"no error, no traceback: {lines}"


def create_table(shard: Proc, table_id: str) -> None:
    with channel_to(shard, "matchmaking") as ch:
        table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table_id, player_ids=list(PLAYERS),
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)


def play_request(**fields: Any) -> bytes:
    return gateway_pb2.PlayRequest(**fields).SerializeToString()


async def test_garbage_after_a_join_ends_that_session_only(procs: dict[str, Proc]) -> None:
    """ann joins, then sends a corrupt frame and a valid draw on the same Play stream: her
    stream ends INVALID_ARGUMENT `request/malformed` within a second of the garbage and the
    draw never reaches the table; bob, at the same table on the same shard, keeps playing
    (his own draw is the table's first event)."""
    table = "shard-0.garbage"
    create_table(procs["table"], table)
    async with aio_channel(procs["gateway"], "app") as app:
        bob = PlayClient(app, await login(app, "bob"))
        bob.open(table, batched=True)
        await bob.until(lambda r: r.WhichOneof("kind") == "snapshot", timeout=10)
        outcome = await asyncio.to_thread(ann_joins_then_sends_garbage, procs["gateway"], table)
        assert outcome == (grpc.StatusCode.INVALID_ARGUMENT, MALFORMED_REASON, "snapshot")
        bob.act(rules.Draw(rules.Seat.P2))
        event = await bob.until(lambda r: r.WhichOneof("kind") == "event", timeout=10)
        assert event.event.kind == "drew" and event.event.seq == 1, (
            "ann's draw after the garbage was never applied; bob plays on")
        await bob.close()


def ann_joins_then_sends_garbage(gateway: Proc, table: str) -> tuple[grpc.StatusCode, str, str]:
    """ann's Play stream (blocking API): join; once the snapshot is read, a truncated varint
    and a draw. The status, its reason, the first reply. The whole call has a deadline of
    twice WITHIN_S, the join and its snapshot included: a hang is DEADLINE_EXCEEDED."""
    snapshot_read = threading.Event()
    draw = gateway_pb2.ActionRequest(client_action_id="after-garbage",
                                     action=codec.action_to_pb(rules.Draw(rules.Seat.P1)))

    def frames() -> Iterator[bytes]:
        yield play_request(join=gateway_pb2.Join(table_id=table))
        if snapshot_read.wait(10):
            yield bad_frames(gateway_pb2.PlayRequest.DESCRIPTOR)["truncated-varint"]
            yield play_request(action=draw)

    first = ""
    with channel_to(gateway, "app") as ch:
        replies = ch.stream_stream("/machiavelox.v1.GatewayService/Play")(
            frames(), metadata=hmac_bearer(KEY, "ann"), timeout=2 * WITHIN_S)
        try:
            for raw in replies:
                if not first:
                    first = gateway_pb2.PlayResponse.FromString(raw).WhichOneof("kind") or ""
                    snapshot_read.set()
        except grpc.RpcError as err:
            code, reason, _ = status_of(err)
            return code, reason, first
        finally:
            snapshot_read.set()
    return grpc.StatusCode.OK, "", first


def test_a_long_id_is_echoed_cut(procs: dict[str, Proc]) -> None:
    """A 100 KB table id asked of scoring: NOT_FOUND `standings/unknown-table`, its message
    showing the id cut (a status message that size would not fit the trailers, 8 KiB)."""
    with channel_to(procs["scoring"], "results-reader") as ch, \
            pytest.raises(grpc.RpcError) as raised:
        scoring_pb2_grpc.ScoringServiceStub(ch).GetStandings(
            scoring_pb2.GetStandingsRequest(table_id="shard-0." + "x" * 100_000), timeout=5)
    code, reason, _ = status_of(raised.value)
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "standings/unknown-table")
    details = raised.value.details() or ""
    assert "shard-0.xxx" in details and len(details) <= 512, len(details)


def test_a_relayed_refusal_carries_one_prefix(procs: dict[str, Proc]) -> None:
    """Matchmaking's refusal relayed by the gateway reads `reason: message` once, as it does
    straight from matchmaking (it read `table/bad-kind: table/bad-kind: ...`)."""
    request = matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_UNSPECIFIED)
    answers = []
    for proc, role in ((procs["matchmaking"], "gateway"), (procs["gateway"], "app")):
        with channel_to(proc, role) as ch, pytest.raises(grpc.RpcError) as raised:
            matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
                request, metadata=hmac_bearer(KEY, "cy"), timeout=5)
        answers.append((status_of(raised.value)[:2], raised.value.details()))
    direct, relayed = answers
    assert direct == relayed
    assert relayed[1] == "table/bad-kind: kind must be single or long"


def test_a_name_with_a_newline_is_refused(procs: dict[str, Proc]) -> None:
    """`$` matches before a final newline: Login("alice\\n") was given a token."""
    with channel_to(procs["gateway"], "app") as ch, pytest.raises(grpc.RpcError) as raised:
        gateway_pb2_grpc.GatewayServiceStub(ch).Login(gateway_pb2.LoginRequest(player="alice\n"),
                                                      timeout=5)
    assert status_of(raised.value)[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "auth/bad-name")
