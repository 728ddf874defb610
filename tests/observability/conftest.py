"""Fixtures of the observability tests: Debian's Prometheus and promtool (installed with
apt-get when missing), a real Prometheus server scraping real services, a real OTLP/gRPC trace
receiver in its own process, and the services themselves on loopback."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from machiavelox.local.processes import Proc, free_port, start
from tests.support.otlp_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KEY = "test-key-0123456789abcdef"


# ---------------------------------------------------------------------------------- tools
@dataclass(frozen=True)
class PrometheusTools:
    prometheus: str
    promtool: str


def _apt_install(package: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", package]
    if subprocess.run(install, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, check=True)
        subprocess.run(install, env=env, capture_output=True, check=True)


@pytest.fixture(scope="session")
def prometheus_tools() -> PrometheusTools:
    """Debian's `prometheus` package (which ships promtool), installed if missing."""
    if not (shutil.which("promtool") and shutil.which("prometheus")):
        if not shutil.which("apt-get"):
            pytest.fail("promtool and prometheus are missing and apt-get is not available")
        _apt_install("prometheus")
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    assert promtool and prometheus, "the prometheus package did not install its binaries"
    return PrometheusTools(prometheus, promtool)


# ---------------------------------------------------------------------------------- /metrics
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int, host: str = "127.0.0.1") -> Samples:
    """Every sample of a /metrics endpoint: {(name, labels): value}."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples called `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


# ---------------------------------------------------------------------------------- services
class Services:
    """Service processes started for one test, each with its own /metrics port; all must stop
    cleanly on SIGTERM, without an ERROR log."""

    def __init__(self, tmp: Path, env: Mapping[str, str] | None = None) -> None:
        self.tmp = tmp
        self.env = dict(env or {})
        self.procs: dict[str, Proc] = {}
        self.metrics: dict[str, int] = {}

    def start(self, name: str, command: str, env: Mapping[str, str]) -> Proc:
        metrics_port = free_port()
        proc = start(name, command, {**self.env, **env,
                                     "MACHIAVELOX_METRICS_PORT": str(metrics_port)}, self.tmp)
        self.procs[name] = proc
        self.metrics[name] = metrics_port
        return proc

    def scoring(self, name: str = "scoring") -> Proc:
        return self.start(name, "scoring", {
            "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{self.tmp / (name + '.sqlite3')}"})

    def presence(self, name: str = "presence") -> Proc:
        return self.start(name, "presence", {})

    def shard(self, shard_id: str, **env: str) -> Proc:
        return self.start(shard_id, "table", {"MACHIAVELOX_SHARD_ID": shard_id,
                                              "MACHIAVELOX_GRACE_S": "1", **env})

    def matchmaking(self, shards: Mapping[str, Proc], **env: str) -> Proc:
        return self.start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shard_map(shards),
            "MACHIAVELOX_MATCHMAKING_TICK_MS": "50", "MACHIAVELOX_GRACE_S": "1", **env})

    def gateway(self, shards: Mapping[str, Proc], **env: str) -> Proc:
        return self.start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_SHARDS": shard_map(shards),
            "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GRACE_S": "1", **env})

    def stop_all(self) -> None:
        problems = []
        for proc in reversed(list(self.procs.values())):
            try:
                proc.check_clean()
            except AssertionError as exc:
                problems.append(str(exc))
        assert not problems, "\n".join(problems)


def shard_map(shards: Mapping[str, Proc]) -> str:
    return ",".join(f"{sid}={proc.address}" for sid, proc in shards.items())


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    group = Services(tmp_path)
    try:
        yield group
    finally:
        group.stop_all()


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    """A real OTLP/gRPC trace receiver in its own process (stopped after the services)."""
    workdir = tmp_path / "otlp"
    workdir.mkdir()
    rec = Receiver(workdir)
    try:
        yield rec
    finally:
        rec.stop()


@pytest.fixture
def traced_services(tmp_path: Path, receiver: Receiver) -> Iterator[Services]:
    """Services exporting every span to `receiver` (sampler parentbased_always_on)."""
    group = Services(tmp_path, receiver.env())
    try:
        yield group
    finally:
        group.stop_all()


# ---------------------------------------------------------------------------------- Prometheus
class PrometheusServer:
    """A real `prometheus` scraping `targets` ({job: [host:port, ...]}) every 500 ms, with the
    project's rules loaded; `query` asks its HTTP API."""

    def __init__(self, binary: str, workdir: Path, targets: Mapping[str, list[str]],
                 rule_files: list[Path] | None = None) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "prometheus.log"
        config = {
            "global": {"scrape_interval": "500ms", "scrape_timeout": "400ms",
                       "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in (rule_files or [])],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": list(ts)}]}
                               for job, ts in targets.items()],
        }
        config_path = workdir / "prometheus.yml"
        config_path.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config_path}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=self.log.open("wb"), start_new_session=True)
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited: {self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"prometheus not ready in {timeout_s} s: {self.log.read_text()}")

    def api(self, path: str, **params: str) -> Any:
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as reply:
            body = json.loads(reply.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query: [{"metric": {...}, "value": [ts, "v"]}, ...]."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        result: list[dict[str, Any]] = data["result"]
        return result

    def scalar(self, expr: str) -> float | None:
        """The value of a query that gives one sample (None if it gives none)."""
        result = self.query(expr)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def wait_until(self, expr: str, check: Callable[[float | None], bool],
                   timeout_s: float = 30.0) -> float | None:
        """Poll `expr` until `check(value)` holds (scrapes land every 500 ms); its last value
        either way, so the caller asserts with a clear message."""
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.scalar(expr)
            if check(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.25)

    def targets(self) -> list[dict[str, Any]]:
        active: list[dict[str, Any]] = self.api("targets", state="active")["activeTargets"]
        return active

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
