"""Service identity between services (issue 11, item 8): a compromised pod inside the cluster.

The attacker reaches every internal service's port; it has no certificate of the cluster's CA
(or one of another CA it made itself, or it holds the certificate of one service role and uses
it for what another role does). Over a real local cluster (`launch`: every service its own
process, mutual TLS on, each with its role's certificate of this test process's throwaway CA),
every method of every internal service is attacked with a forged request that would hurt if
served: subscribe to another player's hand on a shard (Connect), create tables, drain a shard,
put a player at +100,000 on the leaderboard (ReportResult), queue or open lobbies as a victim,
forge presence. Each test proves:

- plaintext, TLS without a client certificate, and a certificate of another CA: the handshake
  fails, the call gets UNAVAILABLE, no response arrives, and nothing changed (leaderboard,
  draining, presence, no forged table, no RPC even started on the server);
- a certificate of our CA whose role may not call the method (a gateway's ReportResult or
  CreateTable, a results-reader's ReportResult, a table's Connect, ...): PERMISSION_DENIED
  `auth/role`, no response, and nothing changed (the servicer never ran: no OK call counted);
- the roles allowed do get served; a shard sends a player's snapshot only to a gateway;
- the authorization table covers every method of every internal service in the protos.

Without the defence (plaintext servers, no authorization interceptor) every forged call is
served: the states compared here change and the refusals asserted do not come.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from machiavelox._gen.v1 import (
    bots_pb2,
    common_pb2,
    matchmaking_pb2,
    presence_pb2,
    presence_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.pki import Pki, make_pki, session_pki
from machiavelox.local.processes import Proc, aio_channel, free_port, start
from machiavelox.local.up import KEY, launch, metrics_port, stop_all
from machiavelox.platform.authz import (
    ANYONE,
    INTERNAL_SERVICES,
    POLICY,
    AuthorizationInterceptor,
)
from machiavelox.platform.errors import REASON_KEY, ErrorInterceptor
from machiavelox.platform.tls import ROLES, server_name
from tests.observability.conftest import scrape, value
from tests.support.client import hmac_bearer

PROTOS = Path(__file__).resolve().parents[2] / "proto" / "machiavelox" / "v1"
LIVE = "shard-0.live"  # a table in play: VICTIM is seated at it
VICTIM = "alice"
RIGHTFUL = "rhea"  # the player of the calls made by the roles allowed
SERVER_ROLE = {"TableAuthorityService": "table", "MatchmakingService": "matchmaking",
               "AgoraLinkService": "matchmaking",
               "ScoringService": "scoring", "PresenceService": "presence",
               "BotHostService": "bot-host"}
PROCESS = {"TableAuthorityService": "shard-0", "MatchmakingService": "matchmaking",
           "AgoraLinkService": "matchmaking",
           "ScoringService": "scoring", "PresenceService": "presence",
           "BotHostService": "bot-host"}
REFUSED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED,
           grpc.StatusCode.PERMISSION_DENIED)
_ids = itertools.count(1)


@dataclass(frozen=True)
class Method:
    path: str  # /machiavelox.v1.ScoringService/ReportResult
    service: str  # ScoringService
    name: str  # ReportResult
    client_streaming: bool
    server_streaming: bool

    def __str__(self) -> str:
        return f"{self.service}/{self.name}"


def proto_services() -> dict[str, list[Method]]:
    """Every service of every proto file, with its methods (from the compiled descriptors of
    each file in proto/machiavelox/v1: a new file or method shows up here)."""
    out: dict[str, list[Method]] = {}
    for proto in sorted(PROTOS.glob("*.proto")):
        module = import_module(f"machiavelox._gen.v1.{proto.stem}_pb2")
        for service in module.DESCRIPTOR.services_by_name.values():
            out[service.full_name] = [
                Method(f"/{service.full_name}/{m.name}", service.name, m.name,
                       m.client_streaming, m.server_streaming) for m in service.methods]
    return out


INTERNAL = [m for name in INTERNAL_SERVICES for m in proto_services()[name]]


def forged(method: Method, player: str = VICTIM) -> tuple[Message, tuple[tuple[str, str], ...]]:
    """A request that hurts when served (fresh ids each time: a success always shows), and its
    metadata (a valid token of `player` where the service checks one)."""
    n = next(_ids)
    requests: dict[str, Message] = {
        "Connect": table_pb2.ConnectRequest(items=[table_pb2.GatewayItem(
            table_id=LIVE, player_id=player, subscribe=table_pb2.Subscribe(from_seq=0))]),
        "CreateTable": table_pb2.CreateTableRequest(
            table_id=f"shard-0.forged{n}", player_ids=["m1", "m2", "m3"],
            kind=table_pb2.MATCH_KIND_SINGLE, competitive=True),
        "CreateTables": table_pb2.CreateTablesRequest(tables=[table_pb2.CreateTableRequest(
            table_id=f"shard-0.forged-many{n}", player_ids=["m1", "m2", "m3"],
            kind=table_pb2.MATCH_KIND_SINGLE, competitive=True)]),
        "GetLoad": table_pb2.GetLoadRequest(),
        "CheckTables": table_pb2.CheckTablesRequest(table_ids=[LIVE]),
        "CancelTable": table_pb2.CancelTableRequest(table_id=LIVE),
        "SetDraining": table_pb2.SetDrainingRequest(draining=player == VICTIM),
        "Enqueue": matchmaking_pb2.EnqueueRequest(),
        "CancelTicket": matchmaking_pb2.CancelTicketRequest(ticket_id=f"t{n}"),
        "CreateFriendlyTable": matchmaking_pb2.CreateFriendlyTableRequest(
            kind=table_pb2.MATCH_KIND_SINGLE),
        "JoinFriendlyTable": matchmaking_pb2.JoinFriendlyTableRequest(invite_code="ABCDEFGHJK"),
        # the victim queued by whoever may open the gateways' link (the token travels inside)
        "Relay": matchmaking_pb2.RelayRequest(calls=[matchmaking_pb2.AgoraLinkCall(
            stream_id=n, open=matchmaking_pb2.AgoraLinkOpen(
                authorization=dict(hmac_bearer(KEY, player))["authorization"],
                request=matchmaking_pb2.EnqueueRequest()))]),
        "ReportResult": scoring_pb2.ReportResultRequest(
            table_id=f"{LIVE}{n}" if player == VICTIM else f"shard-1.rightful{n}",
            smazzata=1, kind=table_pb2.MATCH_KIND_SINGLE, competitive=True,
            player_ids=["mallory", VICTIM, "bob"] if player == VICTIM else ["r1", "r2", "r3"],
            result=common_pb2.SmazzataResult(winner=common_pb2.SEAT_P1,
                                             scores=[100_000, -50_000, -50_000],
                                             ending="closing"),
            match_ended=True),
        "GetLeaderboard": scoring_pb2.GetLeaderboardRequest(limit=100),
        "GetStandings": scoring_pb2.GetStandingsRequest(table_id=LIVE),
        "SubscribeResults": scoring_pb2.SubscribeResultsRequest(from_offset=0),
        "Heartbeat": presence_pb2.HeartbeatRequest(player_id=player),
        "SetConnected": presence_pb2.SetConnectedRequest(player_id=player, gateway_id="evil",
                                                         connected=True),
        "GetPresence": presence_pb2.GetPresenceRequest(player_ids=[player]),
        "WatchLiveness": presence_pb2.WatchLivenessRequest(player_ids=[player]),
        # bots that would take seats at a lobby of the attacker's (here: of no lobby)
        "SeatBots": bots_pb2.SeatBotsRequest(invite_code="ABCDEFGHJK", count=2,
                                             level=bots_pb2.BOT_LEVEL_BASIC, for_player=player),
    }
    metadata = hmac_bearer(KEY, player) if method.service == "MatchmakingService" else ()
    return requests[method.name], metadata


@dataclass(frozen=True)
class Outcome:
    code: grpc.StatusCode | None  # None: a stream still open after its first wait
    reason: str
    responses: int


async def invoke(channel: grpc.aio.Channel, method: Method, request: Message,
                 metadata: tuple[tuple[str, str], ...] = (), wait_s: float = 3.0) -> Outcome:
    """Call `method` with `request` (raw bytes on the wire); what came back.

    A bidi stream the server ends before reading anything is, about once in a few hundred
    tries over TLS, reported by grpc-aio's client as INTERNAL "Internal error from Core"
    instead of its status (seen with a bare handler that only aborts, too): such a try, which
    got no response either, is made again (at most three tries), so the status is asserted."""
    for _ in range(3):
        outcome = await _invoke_once(channel, method, request, metadata, wait_s)
        if not (method.client_streaming and outcome.code == grpc.StatusCode.INTERNAL
                and outcome.responses == 0 and not outcome.reason):
            return outcome
    return outcome


async def _invoke_once(channel: grpc.aio.Channel, method: Method, request: Message,
                       metadata: tuple[tuple[str, str], ...], wait_s: float) -> Outcome:
    data = request.SerializeToString()
    call: Any = None
    try:
        if not method.server_streaming:
            await channel.unary_unary(method.path)(data, metadata=metadata, timeout=10)
            return Outcome(grpc.StatusCode.OK, "", 1)
        if method.client_streaming:  # requests from an iterator, as a gateway's stream
            call = channel.stream_stream(method.path)(_then_hold(data), metadata=metadata,
                                                      timeout=10)
        else:
            call = channel.unary_stream(method.path)(data, metadata=metadata, timeout=10)
        try:
            reply = await asyncio.wait_for(call.read(), wait_s)
        except TimeoutError:
            return Outcome(None, "", 0)  # accepted: open, nothing to say yet
        if reply is grpc.aio.EOF:
            return Outcome(await call.code(), _reason(await call.trailing_metadata()), 0)
        return Outcome(grpc.StatusCode.OK, "", 1)
    except grpc.aio.AioRpcError as err:
        return Outcome(err.code(), _reason(err.trailing_metadata()), 0)
    finally:
        if call is not None:
            call.cancel()


async def _then_hold(data: bytes) -> AsyncIterator[bytes]:
    yield data
    await asyncio.sleep(30)  # the stream stays open, as a gateway's does


def _reason(metadata: Any) -> str:
    for key, val in metadata or ():
        if key == REASON_KEY:
            return val.decode() if isinstance(val, bytes) else str(val)
    return ""


# ---------------------------------------------------------------------------------- the cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("identity")
    procs = launch(0, tmp, tmp, time_scale=0.01)  # the live table's timers never fire here
    try:
        asyncio.run(_create_live_table(procs["shard-0"]))
        yield procs
    finally:
        bad = stop_all(procs)
    assert bad == [], f"not stopped cleanly: {bad}"
    for proc in procs.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"


async def _create_live_table(shard: Proc) -> None:
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(table_pb2.CreateTableRequest(
            table_id=LIVE, player_ids=[VICTIM, "bob", "cy"], kind=table_pb2.MATCH_KIND_SINGLE,
            competitive=True), timeout=10)


@pytest.fixture(scope="module")
def rogue(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    """The attacker's own CA, with certificates for every role name."""
    return make_pki(tmp_path_factory.mktemp("rogue"), ca_name="machiavelox local CA")


class Observer:
    """What the attacks must not change, seen as the services that may see it."""

    def __init__(self, cluster: dict[str, Proc]) -> None:
        self.cluster = cluster
        self.channels = {"scoring": aio_channel(cluster["scoring"], "results-reader"),
                         "presence": aio_channel(cluster["presence"], "gateway"),
                         "gateway": aio_channel(cluster["shard-0"], "gateway"),
                         **{sid: aio_channel(cluster[sid], "controller")
                            for sid in ("shard-0", "shard-1")}}

    async def state(self) -> dict[str, Any]:
        board = await scoring_pb2_grpc.ScoringServiceStub(self.channels["scoring"]).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100), timeout=5)
        draining = {}
        for sid in ("shard-0", "shard-1"):
            load = await table_pb2_grpc.TableAuthorityServiceStub(self.channels[sid]).GetLoad(
                table_pb2.GetLoadRequest(), timeout=5)
            draining[sid] = load.draining
        presence = await presence_pb2_grpc.PresenceServiceStub(
            self.channels["presence"]).GetPresence(
            presence_pb2.GetPresenceRequest(player_ids=[VICTIM]), timeout=5)
        return {"leaderboard": [(r.player_id, r.points, r.played) for r in board.rows],
                "draining": draining,
                "presence": [(p.connected, p.gateway_id, p.last_seen_ms)
                             for p in presence.players]}

    def calls(self, method: Method) -> dict[str, float]:
        """The server's count of calls of `method`: started, and ended OK."""
        samples = scrape(metrics_port(self.cluster[PROCESS[method.service]]))
        labels = {"grpc_service": f"machiavelox.v1.{method.service}", "grpc_method": method.name}
        return {"started": value(samples, "grpc_server_started_total", **labels),
                "ok": value(samples, "grpc_server_handled_total", grpc_code="OK", **labels)}

    async def table_exists(self, table_id: str) -> bool:
        """Whether the shard has `table_id` (a gateway subscribing there gets a snapshot)."""
        method = next(m for m in INTERNAL if m.name == "Connect")
        request = table_pb2.ConnectRequest(items=[table_pb2.GatewayItem(
            table_id=table_id, player_id="m1", subscribe=table_pb2.Subscribe(from_seq=0))])
        call = self.channels["gateway"].stream_stream(method.path)(timeout=10)
        try:
            await call.write(request.SerializeToString())
            frame = table_pb2.ConnectResponse.FromString(await call.read())
            return any(item.WhichOneof("kind") == "snapshot" for item in frame.items)
        finally:
            call.cancel()

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()


@pytest.fixture
async def observer(cluster: dict[str, Proc]) -> AsyncIterator[Observer]:
    seen = Observer(cluster)
    try:
        yield seen
    finally:
        await seen.close()


def target(cluster: dict[str, Proc], method: Method) -> Proc:
    return cluster[PROCESS[method.service]]


async def assert_refused_and_unchanged(observer: Observer, method: Method,
                                       channel: grpc.aio.Channel, expected: grpc.StatusCode,
                                       reason: str | None, handshake: bool) -> None:
    request, metadata = forged(method)
    before = await observer.state()
    calls = observer.calls(method)
    outcome = await invoke(channel, method, request, metadata)
    after = observer.calls(method)  # (before the observer's own calls)
    assert outcome.code == expected, outcome
    assert outcome.responses == 0, "the attacker got an answer"
    if reason is not None:
        assert outcome.reason == reason, outcome
    assert await observer.state() == before
    assert after["ok"] == calls["ok"], "the servicer served it"
    if handshake:  # not even an RPC reached the server
        assert after["started"] == calls["started"]
    if method.name == "CreateTable":
        assert isinstance(request, table_pb2.CreateTableRequest)
        assert not await observer.table_exists(request.table_id)


# ---------------------------------------------------------------------------------- attacks
@pytest.mark.parametrize("method", INTERNAL, ids=str)
async def test_a_plaintext_call_is_refused_and_changes_nothing(
        cluster: dict[str, Proc], observer: Observer, method: Method) -> None:
    async with grpc.aio.insecure_channel(target(cluster, method).address) as channel:
        await assert_refused_and_unchanged(observer, method, channel,
                                           grpc.StatusCode.UNAVAILABLE, None, handshake=True)


@pytest.mark.parametrize("method", INTERNAL, ids=str)
async def test_tls_without_a_client_certificate_is_refused_and_changes_nothing(
        cluster: dict[str, Proc], observer: Observer, method: Method) -> None:
    server_role = SERVER_ROLE[method.service]
    credentials = grpc.ssl_channel_credentials(root_certificates=session_pki().ca.read_bytes())
    async with grpc.aio.secure_channel(
            target(cluster, method).address, credentials,
            options=[("grpc.ssl_target_name_override", server_name(server_role))]) as channel:
        await assert_refused_and_unchanged(observer, method, channel,
                                           grpc.StatusCode.UNAVAILABLE, None, handshake=True)


@pytest.mark.parametrize("method", INTERNAL, ids=str)
async def test_a_certificate_of_another_ca_is_refused_and_changes_nothing(
        cluster: dict[str, Proc], observer: Observer, rogue: Pki, method: Method) -> None:
    """The attacker's CA minted a certificate naming an allowed role; it also trusts its own
    CA, so only our server's check of the client certificate stops it."""
    allowed = sorted(POLICY[method.path])[0]
    forged_tls = rogue.tls(allowed)
    own_ca = session_pki().ca.read_bytes()
    credentials = grpc.ssl_channel_credentials(
        root_certificates=own_ca, private_key=rogue.key(allowed).read_bytes(),
        certificate_chain=rogue.cert(allowed).read_bytes())
    assert forged_tls.role == allowed
    async with grpc.aio.secure_channel(
            target(cluster, method).address, credentials,
            options=[("grpc.ssl_target_name_override",
                      server_name(SERVER_ROLE[method.service]))]) as channel:
        await assert_refused_and_unchanged(observer, method, channel,
                                           grpc.StatusCode.UNAVAILABLE, None, handshake=True)


WRONG_ROLES = [(m, role) for m in INTERNAL for role in ROLES if role not in POLICY[m.path]]


@pytest.mark.parametrize(("method", "role"), WRONG_ROLES,
                         ids=[f"{m}-as-{r}" for m, r in WRONG_ROLES])
async def test_a_role_not_allowed_gets_permission_denied_and_changes_nothing(
        cluster: dict[str, Proc], observer: Observer, method: Method, role: str) -> None:
    async with aio_channel(target(cluster, method), role) as channel:
        await assert_refused_and_unchanged(observer, method, channel,
                                           grpc.StatusCode.PERMISSION_DENIED, "auth/role",
                                           handshake=False)


def test_the_findings_of_the_issue_are_among_the_refused() -> None:
    """The calls the issue's attacker made, each with a certificate it might hold."""
    refused = {(m.name, role) for m, role in WRONG_ROLES}
    assert {("ReportResult", "gateway"), ("CreateTable", "gateway"),
            ("ReportResult", "results-reader"), ("Connect", "table"),
            ("SetDraining", "gateway"), ("SetDraining", "matchmaking"),
            ("Connect", "matchmaking"), ("Heartbeat", "table")} <= refused


ALLOWED = [(m, role) for m in INTERNAL for role in ROLES if role in POLICY[m.path]]


@pytest.mark.parametrize(("method", "role"), ALLOWED, ids=[f"{m}-as-{r}" for m, r in ALLOWED])
async def test_the_roles_allowed_are_served(cluster: dict[str, Proc], method: Method,
                                            role: str) -> None:
    """The servicer runs (it may still refuse the request for what it says: not found, ...)."""
    request, metadata = forged(method, RIGHTFUL)
    async with aio_channel(target(cluster, method), role) as channel:
        outcome = await invoke(channel, method, request, metadata)
    assert outcome.code not in REFUSED, outcome
    assert not outcome.reason.startswith("auth/"), outcome


async def test_a_shard_sends_a_players_hand_only_to_a_gateway(cluster: dict[str, Proc]) -> None:
    """Connect is where a shard trusts the `player_id` of every item: a gateway's stream
    gets the victim's snapshot (the gateway authenticated the player), any other role's
    stream nothing at all."""
    connect = next(m for m in INTERNAL if m.name == "Connect")
    request, _ = forged(connect)
    for role in ROLES:
        async with aio_channel(cluster["shard-0"], role) as channel:
            outcome = await invoke(channel, connect, request)
        if role == "gateway":
            assert (outcome.code, outcome.responses) == (grpc.StatusCode.OK, 1), outcome
        else:
            assert (outcome.code, outcome.responses, outcome.reason) == (
                grpc.StatusCode.PERMISSION_DENIED, 0, "auth/role"), (role, outcome)


async def test_a_client_checks_the_role_of_the_server_it_reached(
        cluster: dict[str, Proc]) -> None:
    """A pod holding a shard's certificate cannot pass for scoring: a client calling scoring
    refuses a server whose certificate names another role (here: a real shard)."""
    tls = session_pki().tls("table")
    async with tls.channel(cluster["shard-0"].address, "scoring") as channel:
        report = next(m for m in INTERNAL if m.name == "ReportResult")
        outcome = await invoke(channel, report, forged(report, RIGHTFUL)[0])
    assert outcome.code == grpc.StatusCode.UNAVAILABLE


# ---------------------------------------------------------------------------------- health
def test_the_plaintext_health_port_serves_health_and_nothing_else(tmp_path: Path) -> None:
    """Kubernetes' probes cannot present a certificate: MACHIAVELOX_HEALTH_PORT serves the
    standard health service in plaintext, and no other method at all."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    port = free_port()
    shard = start("shard-h", "table", {"MACHIAVELOX_SHARD_ID": "shard-h",
                                       "MACHIAVELOX_HEALTH_PORT": str(port)}, tmp_path)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                              timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(grpc.RpcError) as refused:
                table_pb2_grpc.TableAuthorityServiceStub(channel).SetDraining(
                    table_pb2.SetDrainingRequest(draining=True), timeout=5)
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
        with grpc.insecure_channel(shard.address) as channel, pytest.raises(grpc.RpcError) as no:
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
        assert no.value.code() == grpc.StatusCode.UNAVAILABLE  # the gRPC port: mTLS only
    finally:
        shard.check_clean()


# ---------------------------------------------------------------------------------- the table
def test_the_authorization_table_covers_every_internal_method_and_nothing_else() -> None:
    services = proto_services()
    public = set(services) - set(INTERNAL_SERVICES)
    assert public == {"machiavelox.v1.GatewayService"}, "a new service: internal or public?"
    internal = {m.path for name in INTERNAL_SERVICES for m in services[name]}
    ours = {path for path in POLICY if path.startswith("/machiavelox.")}
    assert internal - ours == set(), "methods nobody may call: decide who may"
    assert ours - internal == set(), "stale entries"
    for path, roles in POLICY.items():
        assert roles and (roles == {ANYONE} or roles <= set(ROLES)), path
    assert {path for path, roles in POLICY.items() if ANYONE in roles} == {
        "/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"}


async def test_a_certificate_naming_no_role_and_a_method_not_in_the_table_are_refused(
        tmp_path: Path) -> None:
    """The interceptor itself: a client certificate of the server's CA that names no role of
    ours gets UNAUTHENTICATED `auth/no-certificate`; a method missing from the table is refused
    to every role."""
    pki = make_pki(tmp_path / "pki", roles=(*ROLES, "intruder"))
    served: list[str] = []

    async def answer(request: bytes, context: Any) -> bytes:
        served.append("yes")
        return b""

    server = grpc.aio.server(interceptors=[ErrorInterceptor(), AuthorizationInterceptor()])
    handlers = {"GetPresence": grpc.unary_unary_rpc_method_handler(answer),
                "Unlisted": grpc.unary_unary_rpc_method_handler(answer)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "machiavelox.v1.PresenceService", handlers),))
    port = pki.tls("presence").add_port(server, "127.0.0.1:0")
    await server.start()
    try:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=pki.ca.read_bytes(), private_key=pki.key("intruder").read_bytes(),
            certificate_chain=pki.cert("intruder").read_bytes())
        async with grpc.aio.secure_channel(
                f"127.0.0.1:{port}", credentials,
                options=[("grpc.ssl_target_name_override", server_name("presence"))]) as ch:
            with pytest.raises(grpc.aio.AioRpcError) as nobody:
                await ch.unary_unary("/machiavelox.v1.PresenceService/GetPresence")(b"",
                                                                                     timeout=5)
        assert nobody.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert _reason(nobody.value.trailing_metadata()) == "auth/no-certificate"
        async with pki.tls("gateway").channel(f"127.0.0.1:{port}", "presence") as ch:
            await ch.unary_unary("/machiavelox.v1.PresenceService/GetPresence")(b"", timeout=5)
            assert served == ["yes"]
            with pytest.raises(grpc.aio.AioRpcError) as unlisted:
                await ch.unary_unary("/machiavelox.v1.PresenceService/Unlisted")(b"", timeout=5)
        assert unlisted.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert served == ["yes"]
    finally:
        await server.stop(0)
