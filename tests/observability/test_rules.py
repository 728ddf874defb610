"""The shipped Prometheus rules, alerts and Grafana dashboard, checked with Debian's promtool:
syntax (`promtool check rules`), behaviour (`promtool test rules`), and that every metric they
name is one the services define."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from machiavelox.gateway.metrics import GatewayMetrics
from machiavelox.matchmaking.metrics import MatchmakingMetrics
from machiavelox.platform.metrics import GrpcServerMetrics
from machiavelox.table.metrics import JournalMetrics, ShardMetrics

from .conftest import DEPLOY, ROOT, PrometheusTools

pytestmark = pytest.mark.timeout(120)

PROM = DEPLOY / "prometheus"
RULE_FILES = [PROM / "machiavelox.rules.yml", PROM / "machiavelox.alerts.yml"]
DASHBOARD = DEPLOY / "grafana" / "machiavelox-dashboard.json"
OPERATIONS = ROOT / "docs" / "operations.md"
# Series every Prometheus has, not defined by the services.
BUILTIN = {"up", "ALERTS", "ALERTS_FOR_STATE"}
PROMQL_WORDS = {"sum", "by", "rate", "increase", "histogram_quantile", "max", "min", "and",
                "or", "unless", "on", "ignoring", "bool", "label_values", "avg", "count",
                "without", "offset", "topk", "bottomk", "inf", "nan"}


def run(*cmd: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=60)


def rules() -> list[dict[str, Any]]:
    out = []
    for path in RULE_FILES:
        for group in yaml.safe_load(path.read_text())["groups"]:
            out.extend(group["rules"])
    return out


def dashboard_exprs() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [a["expr"] for a in board["annotations"]["list"] if "expr" in a]
    return exprs


def as_promql(expr: str) -> str:
    """A dashboard expression with Grafana's variables replaced by plain values."""
    return (expr.replace("$__rate_interval", "1m").replace("$__range", "1h")
            .replace("$__interval", "30s").replace("$shard", ".*"))


def defined_series() -> set[str]:
    """Every series name the services' metric classes can expose."""
    registry = CollectorRegistry()
    GatewayMetrics(registry)
    ShardMetrics(registry, "shard-0")
    JournalMetrics(registry, "shard-0")
    MatchmakingMetrics(registry)
    GrpcServerMetrics(registry)
    names: set[str] = set()
    for family in registry.collect():
        if family.type == "counter":
            names |= {family.name + "_total"}
        elif family.type == "histogram":
            names |= {family.name + s for s in ("_bucket", "_count", "_sum")}
        else:
            names.add(family.name)
    return names


def test_promtool_accepts_the_rules(prometheus_tools: PrometheusTools) -> None:
    done = run(prometheus_tools.promtool, "check", "rules", *RULE_FILES)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_rules_unit_tests_pass(prometheus_tools: PrometheusTools) -> None:
    tests = sorted((PROM / "tests").glob("*.yml"))
    assert tests
    done = run(prometheus_tools.promtool, "test", "rules", *tests)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_local_scrape_config_is_valid(prometheus_tools: PrometheusTools) -> None:
    done = run(prometheus_tools.promtool, "check", "config", PROM / "prometheus-local.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_is_tested_and_has_a_runbook_entry() -> None:
    tested = PROM.joinpath("tests", "machiavelox_test.yml").read_text()
    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in OPERATIONS.read_text().splitlines() if line.startswith("#")}
    for rule in rules():
        if "alert" not in rule:
            continue
        name = rule["alert"]
        assert f"alertname: {name}\n" in tested, f"{name} has no promtool test"
        runbook = rule["annotations"]["runbook"]
        assert runbook == f"docs/operations.md#{name.lower()}", runbook
        assert name.lower() in headings, f"docs/operations.md has no section {name}"
        assert rule["labels"]["severity"] in ("critical", "warning", "info")


def test_the_dashboard_queries_are_valid_promql(tmp_path: Path,
                                                prometheus_tools: PrometheusTools) -> None:
    """Each panel's query, as a recording rule, must pass `promtool check rules`."""
    exprs = dashboard_exprs()
    assert len(exprs) >= 15
    as_rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": as_promql(e)} for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(as_rules))
    done = run(prometheus_tools.promtool, "check", "rules", path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_dashboard_shows_what_the_issue_asks() -> None:
    board = json.loads(DASHBOARD.read_text())
    titles = " | ".join(p["title"] for p in board["panels"]).lower()
    for words in ("action latency p50 / p99 per shard", "tables in play per shard",
                  "players seated per shard", "refusals by code", "cancellations"):
        assert words in titles, words
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "shard"]


def test_every_series_named_in_rules_and_dashboard_exists() -> None:
    defined = defined_series()
    recorded = {r["record"] for r in rules() if "record" in r}
    texts = [r["expr"] for r in rules()] + [as_promql(e) for e in dashboard_exprs()]
    unknown = set()
    for text in texts:
        text = re.sub(r'"[^"]*"', '""', text)  # label values
        text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
        text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", text)  # label lists
        text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
        for token in re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
            if token.lower() in PROMQL_WORDS or token in BUILTIN:
                continue
            if ":" in token:
                if token not in recorded:
                    unknown.add(token)
            elif token not in defined:
                unknown.add(token)
    assert not unknown, f"not defined by any service or recording rule: {sorted(unknown)}"
