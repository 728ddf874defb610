"""Attack: an app sends a `traceparent` with the sampled flag set (to force sampling, or to join
its own trace id to ours), and ids long enough to bloat every span they reach; reflection
lists the public endpoint's methods to anyone. Real processes export their spans over OTLP
to a real receiver.

Proves: a gateway that does not trust incoming trace context (the default) neither samples a
call because the app said so (sampler ratio 0: no span at all) nor adopts the app's trace id,
on its own calls and on the agorà calls it relays to matchmaking (which trusts the gateway);
with MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT=true it does both (the control, so the test can
fail). A gateway that samples starts a new trace for each call. The attributes an app chose
(a table id, an action id) are cut to 64 characters. MACHIAVELOX_REFLECTION=false turns
reflection off, and the chart's production values do that on the gateway.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from machiavelox import codec, rules
from machiavelox._gen.v1 import gateway_pb2 as gw
from machiavelox._gen.v1 import (
    gateway_pb2_grpc,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, free_port, start
from machiavelox.platform.errors import SHOWN_CHARS
from machiavelox.platform.telemetry import Attr, SpanName
from tests.deploy.chart import container_env, full, one, pod_spec, render, value_set
from tests.support.client import PlayClient, hmac_bearer, login
from tests.support.otlp_receiver import Receiver, Span

pytestmark = pytest.mark.timeout(180)

KEY = "edge-tracing-test-key-0123456789"
LOGIN = "machiavelox.v1.GatewayService/Login"
CREATE_FRIENDLY = "machiavelox.v1.MatchmakingService/CreateFriendlyTable"
NEVER = {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}


@dataclass
class Edge:
    receiver: Receiver
    shard: Proc
    matchmaking: Proc
    untrusting: Proc  # samples nothing of its own (ratio 0), trusts no app; no reflection
    sampling: Proc  # samples everything of its own, trusts no app
    trusting: Proc  # samples nothing of its own, trusts the app's traceparent (the control)


@pytest.fixture(scope="module")
def edge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Edge]:
    tmp = tmp_path_factory.mktemp("edge")
    (tmp / "otlp").mkdir()
    receiver = Receiver(tmp / "otlp")
    procs: list[Proc] = []

    def run(name: str, command: str, env: dict[str, str]) -> Proc:
        proc = start(name, command, {"MACHIAVELOX_METRICS_PORT": str(free_port()),
                                     "MACHIAVELOX_GRACE_S": "1", **env}, tmp)
        procs.append(proc)
        return proc

    try:
        shard = run("shard", "table", {"MACHIAVELOX_SHARD_ID": "shard-0"})
        matchmaking = run("matchmaking", "matchmaking", {
            **receiver.env(), **NEVER, "MACHIAVELOX_TOKEN_KEY": KEY,
            "MACHIAVELOX_MATCHMAKING_SHARDS": f"shard-0={shard.address}"})

        def gateway(name: str, tracing: dict[str, str], **env: str) -> Proc:
            return run(name, "gateway", {
                **receiver.env(), **tracing, "MACHIAVELOX_GATEWAY_ID": name,
                "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
                "MACHIAVELOX_GATEWAY_SHARDS": f"shard-0={shard.address}",
                "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": matchmaking.address, **env})

        yield Edge(receiver, shard, matchmaking,
                   gateway("edge-untrusting", NEVER, MACHIAVELOX_REFLECTION="false"),
                   gateway("edge-sampling", {}),
                   gateway("edge-trusting", NEVER, MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT="true"))
    finally:
        try:
            check_all_clean(procs)
        finally:
            receiver.stop()


def client_trace() -> tuple[tuple[tuple[str, str], ...], str, str]:
    """Metadata with a sampled traceparent the app made up; its trace id and span id."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return (("traceparent", f"00-{trace_id}-{span_id}-01"),
            ("tracestate", "app=forced")), trace_id, span_id


def instance(span: Span) -> str:
    return str(span["resource"].get("service.instance.id", ""))


async def login_and_create(gateway: Proc) -> tuple[str, str]:
    """A Login and a relayed CreateFriendlyTable, each with its own forced traceparent; the
    two trace ids the app made up."""
    login_md, login_trace, _ = client_trace()
    create_md, create_trace, _ = client_trace()
    async with aio_channel(gateway, "app") as ch:
        await gateway_pb2_grpc.GatewayServiceStub(ch).Login(
            gw.LoginRequest(player="ann"), metadata=login_md, timeout=5)
        await matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE),
            metadata=(*hmac_bearer(KEY, "ann"), *create_md), timeout=5)
    return login_trace, create_trace


async def test_an_app_cannot_force_sampling_or_its_trace_id(edge: Edge) -> None:
    untrusted = await login_and_create(edge.untrusting)
    trusted = await login_and_create(edge.trusting)
    sampled_md, sampled_trace, _ = client_trace()
    async with aio_channel(edge.sampling, "app") as ch:
        await gateway_pb2_grpc.GatewayServiceStub(ch).Login(
            gw.LoginRequest(player="bob"), metadata=sampled_md, timeout=5)

    def arrived(spans: list[Span]) -> bool:
        return (any(s["trace_id"] == trusted[0] and s["name"] == LOGIN for s in spans)
                and any(s["trace_id"] == trusted[1] and s["name"] == CREATE_FRIENDLY
                        and s["service"] == "machiavelox-matchmaking" for s in spans)
                and any(instance(s) == "edge-sampling" and s["name"] == LOGIN for s in spans))

    spans = edge.receiver.wait_for(arrived, timeout_s=30)
    # the control: trusted, the app's sampled flag decides and its trace id is kept, down to
    # matchmaking through the relay
    [relayed] = [s for s in spans if s["trace_id"] == trusted[1]
                 and s["service"] == "machiavelox-matchmaking"]
    assert relayed["name"] == CREATE_FRIENDLY
    # untrusted: nothing sampled (the gateway's own ratio is 0), anywhere, in the app's traces
    assert [s for s in spans if s["trace_id"] in untrusted] == [], "the app's trace ids"
    assert [s for s in spans if instance(s) == "edge-untrusting"] == [], "forced sampling"
    # a gateway that samples on its own starts a new trace: the app's is not its parent
    [own] = [s for s in spans if instance(s) == "edge-sampling" and s["name"] == LOGIN]
    assert own["trace_id"] != sampled_trace and own["parent_span_id"] == ""


async def test_ids_from_the_app_are_cut_in_span_attributes(edge: Edge) -> None:
    """A 120-character table id (the gateway takes up to 128) and an action id of the most the
    gateway takes, then one of 4 MB: no attribute of any span is longer than 64 characters."""
    table = "shard-0." + "t" * 112
    async with aio_channel(edge.shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table, player_ids=["ann", "bob", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)
    async with aio_channel(edge.sampling, "app") as ch:
        client = PlayClient(ch, await login(ch, "ann"))
        client.open(table, batched=True)
        await client.until(lambda r: r.WhichOneof("kind") == "snapshot", timeout=10)
        for action_id in ("a" * SHOWN_CHARS, "b" * 4_000_000):
            draw = codec.action_to_pb(rules.Draw(rules.Seat.P1))
            client.send_raw(gw.PlayRequest(action=gw.ActionRequest(client_action_id=action_id,
                                                                   action=draw)))
        with pytest.raises((grpc.aio.AioRpcError, EOFError)):
            while True:  # the stream ends: the 4 MB id is refused (or the stream cut)
                await client.next(timeout=10)
        await client.close()

    spans = edge.receiver.wait_for(lambda got: any(
        s["name"] == SpanName.GATEWAY_ACTION and instance(s) == "edge-sampling"
        for s in got), timeout_s=30)
    [action] = [s for s in spans if s["name"] == SpanName.GATEWAY_ACTION
                and instance(s) == "edge-sampling"]
    assert action["attributes"][Attr.CLIENT_ACTION_ID] == "a" * SHOWN_CHARS
    assert action["attributes"][Attr.TABLE].startswith("shard-0.ttt")
    too_long = [(s["name"], key, len(value)) for s in spans
                for key, value in s["attributes"].items()
                if isinstance(value, str) and len(value) > SHOWN_CHARS]
    assert too_long == []


def reflected(gateway: Proc) -> grpc.StatusCode | list[str]:
    """The services reflection lists on `gateway`, or the status of asking."""
    with grpc.insecure_channel(gateway.address) as ch:
        replies = reflection_pb2_grpc.ServerReflectionStub(ch).ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5)
        try:
            return [s.name for r in replies for s in r.list_services_response.service]
        except grpc.RpcError as err:
            return err.code()


def test_reflection_is_a_setting(edge: Edge) -> None:
    assert reflected(edge.untrusting) == grpc.StatusCode.UNIMPLEMENTED
    assert "machiavelox.v1.GatewayService" in reflected(edge.sampling)


@pytest.mark.parametrize("values", ["production", "default"])
def test_the_chart_turns_reflection_and_trust_off_on_the_gateway(values: str) -> None:
    docs = render(value_set(values))
    [container] = pod_spec(one(docs, "Deployment", full("gateway")))["containers"]
    env = container_env(container)
    assert env["MACHIAVELOX_REFLECTION"] == "false"
    assert env["MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT"] == "false"

