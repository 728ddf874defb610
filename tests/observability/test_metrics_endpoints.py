"""Every service serves /metrics on its own port, with the gRPC server metrics of the calls it
handled (per method and status code), over real processes on loopback."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import grpc
import pytest

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
    MACHIAVELOX,
    aio_channel,
    free_port,
    start,
    with_certificate,
)
from tests.support.client import hmac_bearer

from .conftest import KEY, Services, scrape, value

pytestmark = pytest.mark.timeout(120)

HANDLED = "grpc_server_handled_total"


async def test_every_service_serves_grpc_server_metrics(services: Services) -> None:
    scoring = services.scoring()
    presence = services.presence()
    shard = services.shard("shard-0")
    matchmaking = services.matchmaking({"shard-0": shard})
    gateway = services.gateway({"shard-0": shard})

    async with aio_channel(scoring, "results-reader") as ch:
        stub = scoring_pb2_grpc.ScoringServiceStub(ch)
        await stub.GetLeaderboard(scoring_pb2.GetLeaderboardRequest(), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetStandings(scoring_pb2.GetStandingsRequest(), timeout=5)
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    async with aio_channel(presence, "gateway") as ch:
        await presence_pb2_grpc.PresenceServiceStub(ch).Heartbeat(
            presence_pb2.HeartbeatRequest(player_id="ann"), timeout=5)
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(
            table_pb2.GetLoadRequest(), timeout=5)
    async with aio_channel(matchmaking, "gateway") as ch:
        stub_mm = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        await stub_mm.CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE),
            metadata=hmac_bearer(KEY, "ann"), timeout=5)
        with pytest.raises(grpc.aio.AioRpcError) as unauthenticated:
            await stub_mm.CreateFriendlyTable(
                matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE),
                timeout=5)
        assert unauthenticated.value.code() is grpc.StatusCode.UNAUTHENTICATED
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        await gateway_pb2_grpc.GatewayServiceStub(ch).Login(
            gateway_pb2.LoginRequest(player="ann"), timeout=5)

    expected = {
        "scoring": ("machiavelox.v1.ScoringService", "GetLeaderboard"),
        "presence": ("machiavelox.v1.PresenceService", "Heartbeat"),
        "shard-0": ("machiavelox.v1.TableAuthorityService", "GetLoad"),
        "matchmaking": ("machiavelox.v1.MatchmakingService", "CreateFriendlyTable"),
        "gateway": ("machiavelox.v1.GatewayService", "Login"),
    }
    for name, (service, method) in expected.items():
        samples = await asyncio.to_thread(scrape, services.metrics[name])
        labels = {"grpc_service": service, "grpc_method": method, "grpc_type": "unary"}
        assert value(samples, "grpc_server_started_total", **labels) == (
            2 if name == "matchmaking" else 1), name
        assert value(samples, HANDLED, **labels, grpc_code="OK") == 1, name
        assert value(samples, "grpc_server_handling_seconds_count", **labels) == (
            2 if name == "matchmaking" else 1), name
        # the health checks of the start-up are counted too (and the game's calls apart)
        assert value(samples, HANDLED, grpc_service="grpc.health.v1.Health",
                     grpc_method="Check") >= 1, name
        assert value(samples, "process_cpu_seconds_total") > 0, name
        logged = [r.get("metrics_port") for r in services.procs[name].logs()
                  if "metrics_port" in r]
        assert logged == [services.metrics[name]], name

    scoring_samples = scrape(services.metrics["scoring"])
    assert value(scoring_samples, HANDLED, grpc_method="GetStandings",
                 grpc_code="INVALID_ARGUMENT") == 1
    mm_samples = scrape(services.metrics["matchmaking"])
    assert value(mm_samples, HANDLED, grpc_method="CreateFriendlyTable",
                 grpc_code="UNAUTHENTICATED") == 1
    assert ("machiavelox_matchmaking_tickets_waiting",
            frozenset({("queue", "competitive")})) in mm_samples


async def test_a_stream_the_client_leaves_is_counted_cancelled(services: Services) -> None:
    shard = services.shard("shard-0")
    matchmaking = services.matchmaking({"shard-0": shard})
    async with aio_channel(matchmaking, "gateway") as ch:
        call = matchmaking_pb2_grpc.MatchmakingServiceStub(ch).Enqueue(
            matchmaking_pb2.EnqueueRequest(), metadata=hmac_bearer(KEY, "ann"))
        first = await call.read()
        assert first.update.WhichOneof("kind") == "waiting"
        waiting = scrape(services.metrics["matchmaking"])
        assert value(waiting, "machiavelox_matchmaking_tickets_waiting", queue="competitive") == 1
        call.cancel()

    def left() -> bool:
        samples = scrape(services.metrics["matchmaking"])
        return value(samples, HANDLED, grpc_method="Enqueue", grpc_type="server_stream",
                     grpc_code="CANCELLED") == 1

    for _ in range(100):  # the server learns of the cancellation asynchronously
        if await asyncio.to_thread(left):
            break
        await asyncio.sleep(0.05)
    samples = scrape(services.metrics["matchmaking"])
    assert value(samples, HANDLED, grpc_method="Enqueue", grpc_code="CANCELLED") == 1
    assert value(samples, "machiavelox_matchmaking_tickets_total", queue="competitive",
                 outcome="left") == 1
    assert value(samples, "machiavelox_matchmaking_tickets_waiting", queue="competitive") == 0
    assert value(samples, "machiavelox_matchmaking_wait_seconds_count") == 0  # not assigned


def test_an_unset_metrics_port_falls_back_when_the_default_is_taken(tmp_path: Path) -> None:
    """Two services on one machine without MACHIAVELOX_METRICS_PORT: both serve /metrics."""
    procs = []
    try:
        for i in range(2):  # "" is unset, whatever the test's environment says
            procs.append(start(f"presence-{i}", "presence", {"MACHIAVELOX_METRICS_PORT": ""},
                               tmp_path))
        ports = []
        for proc in procs:
            [port] = [r["metrics_port"] for r in proc.logs() if "metrics_port" in r]
            assert isinstance(port, int)
            assert value(scrape(port), "process_cpu_seconds_total") > 0
            ports.append(port)
        assert len(set(ports)) == 2
    finally:
        for proc in procs:
            proc.check_clean()


def test_a_metrics_port_that_was_set_and_is_taken_refuses_to_start(tmp_path: Path) -> None:
    port = free_port()
    first = start("presence-a", "presence", {"MACHIAVELOX_METRICS_PORT": str(port)}, tmp_path)
    try:
        env, _ = with_certificate({**os.environ, "MACHIAVELOX_METRICS_PORT": str(port),
                                   "MACHIAVELOX_PRESENCE_PORT": str(free_port())}, "presence")
        done = subprocess.run([*MACHIAVELOX, "presence"], env=env, capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 1
        assert f"cannot serve /metrics on 127.0.0.1:{port}" in done.stderr
    finally:
        first.check_clean()


def test_malformed_tracing_settings_refuse_to_start() -> None:
    env = {**os.environ, "OTEL_TRACES_SAMPLER": "sometimes",
           "MACHIAVELOX_PRESENCE_PORT": str(free_port())}
    done = subprocess.run([*MACHIAVELOX, "presence"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert "OTEL_TRACES_SAMPLER must be one of" in done.stderr
