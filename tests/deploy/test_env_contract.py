"""The chart and the services agree on their settings: every rendered container's environment
is accepted by that service's own Settings.from_env (as the pod would start), every
MACHIAVELOX_* variable the chart sets is one the code reads, and every setting the code reads
is set by the chart or deliberately left to its default (listed below, with the reason)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import pytest

from machiavelox.bots.host_settings import BotHostSettings
from machiavelox.controller.settings import ControllerSettings
from machiavelox.gateway.settings import GatewaySettings
from machiavelox.matchmaking.settings import MatchmakingSettings
from machiavelox.platform.observability import ObservabilitySettings
from machiavelox.platform.tls import TlsSettings
from machiavelox.presence.settings import PresenceSettings
from machiavelox.scoring.settings import ScoringSettings
from machiavelox.table.settings import TableSettings
from tests.deploy.chart import (
    ROOT,
    VALUE_SETS,
    container_env,
    full,
    one,
    pod_spec,
    render,
    value_set,
    workloads,
)

NAMES = [p.name.removesuffix("-values.yaml") for p in VALUE_SETS]
SETTINGS: dict[str, Callable[[], Any]] = {
    "gateway": GatewaySettings.from_env, "table": TableSettings.from_env,
    "matchmaking": MatchmakingSettings.from_env, "scoring": ScoringSettings.from_env,
    "presence": PresenceSettings.from_env, "controller": ControllerSettings.from_env,
    "bot-host": BotHostSettings.from_env}

# Settings the chart leaves at their defaults on purpose.
NOT_SET = {
    "MACHIAVELOX_TABLE_TIME_SCALE": "speeds up the rules clock for demos; never in production",
    "MACHIAVELOX_TABLE_DEAL_SEED": "a fixed deal, for tests only; never in production",
    "MACHIAVELOX_CONTROLLER_SHARDS": "the controller uses its SHARD_TEMPLATE instead",
    "MACHIAVELOX_CONTROLLER_KUBE_API": "in-cluster service account credentials",
    "MACHIAVELOX_METRICS_HOST": "defaults to the gRPC host, 0.0.0.0 in the chart",
    "MACHIAVELOX_BOT_HOST_TIME_SCALE": "the tables' rules clock speed-up; never in production",
    "MACHIAVELOX_MATCHMAKING_AGORA_LINK": "served by every replica; off only in tests (a replica "
                                          "older than the link); gateway.agoraLink is the knob",
}
# Variables that are not settings: inputs of $(VAR) expansion and libpq's own.
HELPERS = {"POD_NAME", "REDIS_PASSWORD", "PGPASSWORD"}

_READ = re.compile(r"env_(?:str|int|float|bool|map|port)\(\s*\"([A-Z0-9_]+)\"")


_RATE = re.compile(r"env_rate\(\s*\"([A-Z0-9_]+)\"")  # reads <name>_RATE and <name>_BURST


def settings_read_by_the_code() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "services" / "machiavelox").rglob("*.py"):
        if "_gen" not in path.parts:
            text = path.read_text()
            names.update(f"MACHIAVELOX_{n}" for n in _READ.findall(text))
            for n in _RATE.findall(text):
                names.update((f"MACHIAVELOX_{n}_RATE", f"MACHIAVELOX_{n}_BURST"))
    return names


def component(workload: dict[str, Any]) -> str:
    return str(workload["metadata"]["labels"]["app.kubernetes.io/component"])


@pytest.mark.parametrize("name", NAMES)
def test_each_service_accepts_the_environment_the_chart_gives_it(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for workload in workloads(render(value_set(name))):
        [container] = pod_spec(workload)["containers"]
        env = container_env(container, pod_name=f"{workload['metadata']['name']}-0")
        for key in [k for k in os.environ if k.startswith(("MACHIAVELOX_", "OTEL_"))]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        settings = SETTINGS[component(workload)]()
        port = next(p["containerPort"] for p in container["ports"] if p["name"] == "grpc")
        assert (settings.host, settings.port) == ("0.0.0.0", port), workload["metadata"]["name"]
        TlsSettings.from_env()  # the internal TLS settings (platform/tls.py) accepted too
        ObservabilitySettings.from_env(component(workload))  # OTEL_* and metrics accepted


def test_what_the_settings_say_in_the_default_install(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render()

    def parsed(kind: str, component: str) -> Any:
        [container] = pod_spec(one(docs, kind, full(component)))["containers"]
        for key, value in container_env(container, pod_name=f"{full(component)}-3").items():
            monkeypatch.setenv(key, value)
        return SETTINGS[component]()

    table = parsed("StatefulSet", "table")
    assert table.shard_id == f"{full('table')}-3" and table.capacity == 600
    assert table.journal == f"sqlite:////data/journal-{table.shard_id}.sqlite3"
    assert (table.journal_timeout_s, table.resume_grace_s, table.report_wait_s) == (2, 120, 5)
    gateway = parsed("Deployment", "gateway")
    assert gateway.shards[f"{full('table')}-7"] == (
        f"{full('table')}-7.{full('table')}-headless.games.svc.cluster.local:7100")
    assert gateway.pace.actions.per_s == 10 and gateway.session_limits.messages == 1000
    assert table.action_rate.burst == 40
    controller = parsed("Deployment", "controller")
    assert controller.shard_address(7) == gateway.shards[f"{full('table')}-7"]
    assert set(gateway.shards) == {controller.shard_id(i) for i in range(10)}
    assert controller.policy.shard_capacity == table.capacity
    matchmaking = parsed("Deployment", "matchmaking")
    assert set(matchmaking.shards) == {controller.shard_id(i) for i in range(10)}
    assert matchmaking.scoring == "mx-machiavelox-scoring.games.svc.cluster.local:7300"


def test_every_variable_set_is_read_and_every_setting_is_set() -> None:
    read = settings_read_by_the_code()
    assert "MACHIAVELOX_TABLE_CAPACITY" in read and "MACHIAVELOX_CONTROLLER_BUFFER" in read
    set_by_chart: set[str] = set()
    for name in NAMES:
        for workload in workloads(render(value_set(name))):
            [container] = pod_spec(workload)["containers"]
            set_by_chart.update(e["name"] for e in container["env"])
    unknown = {v for v in set_by_chart - read - HELPERS if not v.startswith("OTEL_")}
    assert unknown == set(), "the chart sets variables no service reads"
    assert read - set_by_chart - set(NOT_SET) == set(), (
        "settings the chart never sets: set them (values.yaml, schema, docs) or list them "
        "in NOT_SET with the reason")
    assert set(NOT_SET) <= read  # no stale entry
