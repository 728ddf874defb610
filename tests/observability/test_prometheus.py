"""A real Prometheus (Debian's package) scrapes the whole local cluster, with the project's
rules loaded, while bots play a match; the test then asks Prometheus' HTTP API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest

from machiavelox.bots.player import Bot, BotOutcome
from machiavelox.local.processes import Proc, aio_channel
from machiavelox.local.up import launch, metrics_port, stop_all

from .conftest import DEPLOY, PrometheusServer, PrometheusTools

pytestmark = pytest.mark.timeout(180)

JOBS = {"gateway": "machiavelox-gateway", "shard-0": "machiavelox-table",
        "shard-1": "machiavelox-table", "matchmaking": "machiavelox-matchmaking",
        "scoring": "machiavelox-scoring", "presence": "machiavelox-presence",
        "bot-host": "machiavelox-bot-host"}
PLAYERS = ("ann", "bob", "cy")


@dataclass
class Played:
    prometheus: PrometheusServer
    procs: dict[str, Proc]
    outcomes: list[BotOutcome]

    @property
    def actions(self) -> int:
        return sum(o.actions for o in self.outcomes)

    @property
    def refusals(self) -> int:
        return sum(o.refusals for o in self.outcomes)


async def _play(gateway: str, matchmaking: Proc) -> list[BotOutcome]:
    async with grpc.aio.insecure_channel(gateway) as g, \
            aio_channel(matchmaking, "gateway") as m:  # the agorà as the gateway relays it
        bots = [Bot(name, g, m, interval_s=0.05, max_game_s=120) for name in PLAYERS]
        return list(await asyncio.gather(*(b.run() for b in bots)))


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory,
           prometheus_tools: PrometheusTools) -> Iterator[Played]:
    """The cluster, scraped every 500 ms, after three bots played one match to the end."""
    tmp = tmp_path_factory.mktemp("prometheus-cluster")
    procs = launch(0, tmp, tmp, time_scale=40.0)
    prometheus = None
    try:
        targets: dict[str, list[str]] = {}
        for name, proc in procs.items():
            targets.setdefault(JOBS[name], []).append(f"127.0.0.1:{metrics_port(proc)}")
        prometheus = PrometheusServer(
            prometheus_tools.prometheus, tmp / "prometheus", targets,
            rule_files=[DEPLOY / "prometheus" / "machiavelox.rules.yml",
                        DEPLOY / "prometheus" / "machiavelox.alerts.yml"])
        up = prometheus.wait_until('count(up == 1)', lambda v: v == len(procs))
        assert up == len(procs), prometheus.targets()
        outcomes = asyncio.run(_play(procs["gateway"].address, procs["matchmaking"]))
        assert all(o.result is not None for o in outcomes), "the bots played to the end"
        yield Played(prometheus, procs, outcomes)
    finally:
        if prometheus is not None:
            prometheus.stop()
        bad = stop_all(procs)
        assert bad == [], f"not stopped cleanly: {bad}"
        for proc in procs.values():
            errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
            assert not errors, f"{proc.name} logged errors: {errors}"


def test_prometheus_scrapes_every_service_and_evaluates_the_rules(played: Played) -> None:
    prom = played.prometheus
    jobs = {t["labels"]["job"]: t["health"] for t in prom.targets()}
    assert jobs == dict.fromkeys(JOBS.values(), "up")
    # Each bot's Enqueue stream was answered (its ticket assigned, then the bot hung up).
    assigned = prom.wait_until(
        'sum(machiavelox_matchmaking_tickets_total{queue="competitive",outcome="assigned"})',
        lambda v: v == len(PLAYERS))
    assert assigned == len(PLAYERS)
    assert prom.scalar('sum(machiavelox_matchmaking_wait_seconds_count)') == len(PLAYERS)
    enqueues = prom.wait_until(
        'sum(grpc_server_handled_total{job="machiavelox-matchmaking",grpc_method="Enqueue"})',
        lambda v: v == len(PLAYERS))
    assert enqueues == len(PLAYERS)
    # The shard created the table matchmaking asked for, and reported the result to scoring.
    assert prom.scalar('sum(grpc_server_handled_total{job="machiavelox-table",'
                       'grpc_method="CreateTable",grpc_code="OK"})') == 1
    reported = prom.wait_until(
        'sum(grpc_server_handled_total{job="machiavelox-scoring",grpc_method="ReportResult",'
        'grpc_code="OK"})', lambda v: v is not None and v >= 1)
    assert reported is not None and reported >= 1
    # Every bot's Play stream went through the gateway.
    plays = prom.wait_until(
        'sum(grpc_server_started_total{job="machiavelox-gateway",grpc_method="Play"})',
        lambda v: v is not None and v >= len(PLAYERS))
    assert plays is not None and plays >= len(PLAYERS)
    # The recording rules are evaluated by the server.
    rated = prom.wait_until('count(job_method:grpc_server_handled:rate5m)',
                            lambda v: v is not None and v > 0)
    assert rated is not None and rated > 0


def test_action_counters_and_histograms_equal_the_actions_the_bots_sent(played: Played) -> None:
    prom, sent = played.prometheus, played.actions
    assert sent > 0

    def settled(expr: str) -> float | None:
        return prom.wait_until(expr, lambda v: v == sent, timeout_s=10)

    def settled_at(expr: str, want: float) -> float | None:
        return prom.wait_until(expr, lambda v: v == want, timeout_s=10)

    assert settled('sum(machiavelox_gateway_actions_total)') == sent
    assert settled('sum(machiavelox_gateway_action_latency_seconds_count)') == sent
    # the bots act faster than the gateway's pace at times: those actions were refused there
    # (rate/limited) and never reached the shard
    limited = prom.scalar('sum(machiavelox_gateway_rate_limited_total{what="action"})') or 0
    reached = sent - limited
    assert settled_at('sum(machiavelox_shard_actions_total)', reached) == reached
    assert settled_at('sum(machiavelox_shard_queue_wait_seconds_count)', reached) == reached
    assert settled_at('sum(machiavelox_shard_apply_seconds_count)', reached) == reached
    assert prom.scalar('sum(machiavelox_shard_actions_total{outcome="refused"})') == \
        played.refusals - limited
    assert prom.scalar('sum(machiavelox_gateway_actions_total{outcome="refused"})') == \
        played.refusals
    assert prom.scalar('sum(machiavelox_shard_refusals_total)') == played.refusals - limited
    # (the smazzata may end by a timer after the last action: wait for a scrape that saw it)
    assert prom.wait_until('sum(machiavelox_shard_smazzate_ended_total)', lambda v: v == 1,
                           timeout_s=10) == 1
    # Gauges: both shards report their load; every bot has hung up its Play stream.
    assert prom.scalar('count(machiavelox_shard_tables)') == 2
    assert prom.scalar('count(machiavelox_shard_players)') == 2
    assert prom.wait_until('sum(machiavelox_gateway_open_streams)', lambda v: v == 0,
                           timeout_s=10) == 0
    p99 = prom.wait_until('count(shard:machiavelox_gateway_action_latency_seconds:p99_5m >= 0)',
                          lambda v: v == 1, timeout_s=10)
    assert p99 == 1, "one shard played, and its p99 is recorded"

