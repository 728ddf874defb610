"""Rendering the Helm chart with the real Helm engine (helm-python-sdk: Helm v4, no cluster)."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "machiavelox"
VALUE_SETS = sorted(CHART.glob("ci/*-values.yaml"))
RELEASE = "mx"
NAMESPACE = "games"

Manifest = dict[str, Any]


def value_set(name: str) -> dict[str, Any]:
    """The values of ci/<name>-values.yaml."""
    loaded = yaml.safe_load((CHART / "ci" / f"{name}-values.yaml").read_text())
    return dict(loaded or {})


@functools.cache
def _render(values_json: str) -> tuple[Manifest, ...]:
    with helm.Chart.load(str(CHART)) as chart:
        rendered = chart.render(json.loads(values_json), name=RELEASE, namespace=NAMESPACE)
    out: list[Manifest] = []
    for path in sorted(rendered):
        if path.endswith("NOTES.txt"):
            continue
        out.extend(doc for doc in yaml.safe_load_all(rendered[path]) if doc)
    return tuple(out)


def render(values: dict[str, Any] | None = None) -> list[Manifest]:
    """Every object the chart renders with `values` (a deep copy: tests may change it)."""
    return copy.deepcopy(list(_render(json.dumps(values or {}, sort_keys=True))))


def install(values: dict[str, Any]) -> None:
    """Render `values` as `helm install` would, its checks included: raises where it refuses."""
    with helm.Chart.load(str(CHART)) as chart:
        chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)


def notes(values: dict[str, Any] | None = None) -> str:
    with helm.Chart.load(str(CHART)) as chart:
        rendered = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in rendered.items() if path.endswith("NOTES.txt"))


def find(docs: list[Manifest], kind: str, name: str | None = None) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind
            and (name is None or d["metadata"]["name"] == name)]


def one(docs: list[Manifest], kind: str, name: str) -> Manifest:
    [doc] = find(docs, kind, name)
    return doc


def full(component: str) -> str:
    return f"{RELEASE}-machiavelox-{component}"


def workloads(docs: list[Manifest]) -> Iterator[Manifest]:
    yield from (d for d in docs if d["kind"] in ("Deployment", "StatefulSet"))


def pod_spec(workload: Manifest) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def container_env(container: dict[str, Any], secrets: dict[str, str] | None = None,
                  pod_name: str = "pod-0") -> dict[str, str]:
    """The container's environment as the kubelet gives it: fieldRefs and secret references
    resolved (secrets: a dummy value unless given), $(VAR) expanded from earlier variables."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        name = item["name"]
        if "value" in item:
            value = str(item["value"])
            for known, known_value in env.items():
                value = value.replace(f"$({known})", known_value)
        else:
            source = item["valueFrom"]
            if "fieldRef" in source:
                value = {"metadata.name": pod_name,
                         "metadata.namespace": NAMESPACE}[source["fieldRef"]["fieldPath"]]
            else:
                ref = source["secretKeyRef"]
                value = (secrets or {}).get(ref["name"], "secret-value-from-a-kubernetes-secret")
        env[name] = value
    return env
