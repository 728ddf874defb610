"""The chart ships the observability issue's dashboard and rules (Helm reads only files inside
the chart, so it keeps copies): the copies must stay byte-identical to deploy/.

When one fails, refresh the copy:
    cp deploy/prometheus/machiavelox.*.yml helm/machiavelox/files/prometheus/
    cp deploy/grafana/*.json helm/machiavelox/files/grafana/
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.chart import CHART, ROOT, one, render

COPIES = {
    "deploy/prometheus/machiavelox.rules.yml": "files/prometheus/machiavelox.rules.yml",
    "deploy/prometheus/machiavelox.alerts.yml": "files/prometheus/machiavelox.alerts.yml",
    "deploy/grafana/machiavelox-dashboard.json": "files/grafana/machiavelox-dashboard.json",
}


@pytest.mark.parametrize(("source", "copy"), COPIES.items())
def test_the_chart_copy_is_byte_identical(source: str, copy: str) -> None:
    assert (CHART / copy).read_bytes() == (ROOT / source).read_bytes(), (
        f"helm/machiavelox/{copy} differs from {source}: cp {source} helm/machiavelox/{copy}")


def test_nothing_else_is_shipped_under_those_names() -> None:
    shipped = {str(p.relative_to(CHART)) for p in (CHART / "files").rglob("*")
               if p.is_file() and p.parent.name in ("prometheus", "grafana")}
    assert shipped == set(COPIES.values())


def test_the_configmaps_carry_the_files_unchanged() -> None:
    docs = render()
    rules = one(docs, "ConfigMap", "mx-machiavelox-prometheus-rules")["data"]
    dashboards = one(docs, "ConfigMap", "mx-machiavelox-grafana-dashboard")
    for source, copy in COPIES.items():
        data = dashboards["data"] if copy.startswith("files/grafana") else rules
        assert data[Path(copy).name] == (ROOT / source).read_text()
    assert dashboards["metadata"]["labels"]["grafana_dashboard"] == "1"
