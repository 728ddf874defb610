"""values.schema.json and the chart's `fail` guards reject wrong values with clear messages
(through the real Helm engine, as `helm install` would)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import helm_python as helm
import pytest
import yaml

from tests.deploy.chart import CHART, VALUE_SETS, install

SCHEMA = json.loads((CHART / "values.schema.json").read_text())


@pytest.mark.parametrize(("values", "message"), [
    ({"gateway": {"port": 70000}}, "at '/gateway/port': maximum: got 70,000, want 65,535"),
    ({"gateway": {"prot": 7000}}, "at '/gateway': additional properties 'prot' not allowed"),
    ({"table": {"capacity": "many"}}, "at '/table/capacity': got string, want integer"),
    ({"table": {"capacity": 0}}, "at '/table/capacity': minimum"),
    ({"controller": {"buffer": "lots"}}, "at '/controller/buffer': 'lots' does not match"),
    ({"controller": {"buffer": "100%"}}, "at '/controller/buffer'"),
    ({"global": {"logLevel": "LOUD"}}, "at '/global/logLevel': value must be one of 'DEBUG'"),
    ({"gateway": {"service": {"type": "Ingress"}}}, "at '/gateway/service/type'"),
    ({"global": {"otel": {"samplerArg": "2"}}}, "at '/global/otel/samplerArg'"),
    ({"redis": {"password": "p@ss word"}}, "at '/redis/password'"),
    ({"table": {"resources": {"requests": {"memory": "lots"}}}},
     "at '/table/resources/requests/memory'"),
    ({"table": {"journal": {"timeoutSeconds": 0}}},
     "at '/table/journal/timeoutSeconds': exclusiveMinimum"),
    ({"table": {"journal": {"url": "off"}}},
     "at '/table/journal': additional properties 'url' not allowed"),
    ({"table": {"journal": {"storage": {"size": "lots"}}}}, "at '/table/journal/storage/size'"),
    ({"table": {"resumeGraceSeconds": -1}}, "at '/table/resumeGraceSeconds': minimum"),
    ({"table": {"reportWaitSeconds": "5s"}},
     "at '/table/reportWaitSeconds': got string, want number"),
    ({"unknown": True}, "additional properties 'unknown' not allowed"),
])
def test_the_schema_rejects_wrong_values(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmValuesError) as refused:
        install(values)
    assert message in str(refused.value)
    with helm.Chart.load(str(CHART)) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema(values)


@pytest.mark.parametrize(("values", "message"), [
    ({"scoring": {"replicas": 2}},
     "scoring.replicas is 2, but without PostgreSQL (postgresql.enabled)"),
    ({"presence": {"replicas": 3}}, "presence.replicas is 3, but without Redis (redis.enabled)"),
    ({"postgresql": {"enabled": True}}, "postgresql.enabled is true but postgresql.host is empty"),
    ({"redis": {"enabled": True}}, "redis.enabled is true but redis.host is empty"),
    ({"global": {"tokenKey": {"value": "short"}}},
     "global.tokenKey.value must be at least 16 bytes, not 5"),
    ({"controller": {"minReplicas": 5, "maxReplicas": 3}},
     "controller.minReplicas (5) must not exceed controller.maxReplicas (3)"),
    ({"gateway": {"autoscaling": {"minReplicas": 5, "maxReplicas": 3}}},
     "gateway.autoscaling.minReplicas (5) must not exceed gateway.autoscaling.maxReplicas (3)"),
    ({"gateway": {"terminationGracePeriodSeconds": 8}},
     "gateway.terminationGracePeriodSeconds (8) must exceed gateway.preStopSleepSeconds + "
     "global.graceSeconds (10)"),
    ({"table": {"terminationGracePeriodSeconds": 5}},
     "table.terminationGracePeriodSeconds (5) must exceed"),
    ({"global": {"graceSeconds": 40}}, "must exceed"),
    ({"table": {"drainSeconds": 3591}},
     "table.terminationGracePeriodSeconds (3600) must exceed table.preStopSleepSeconds + "
     "table.drainSeconds + global.graceSeconds + table.reportWaitSeconds (3601)"),
    ({"table": {"drainSeconds": 3500, "reportWaitSeconds": 95}},
     "table.reportWaitSeconds (3600)"),
    ({"controller": {"renewSeconds": 12}},
     "controller.renewSeconds (12) must be below two thirds of "
     "controller.leaseDurationSeconds (15)"),
])
def test_impossible_combinations_fail_with_a_message(values: dict[str, Any],
                                                     message: str) -> None:
    with pytest.raises(helm.HelmRenderError) as refused:
        install(values)
    assert message in str(refused.value)


@pytest.mark.parametrize("path", VALUE_SETS, ids=lambda p: p.name)
def test_every_ci_value_set_passes_the_schema(path: Any) -> None:
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(yaml.safe_load(path.read_text()) or {})


def walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for key, prop in schema.get("properties", {}).items():
        where = f"{path}.{key}" if path else key
        yield where, prop
        yield from walk(prop, where)


def test_every_value_is_described_and_every_object_closed() -> None:
    for where, prop in walk(SCHEMA):
        assert prop.get("description"), f"{where} has no description"
        if prop.get("type") == "object" and "properties" in prop:
            assert prop.get("additionalProperties") is False, f"{where} accepts any key"


def test_every_default_is_in_the_schema() -> None:
    """values.yaml has no key the schema does not describe (and the schema accepts it)."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    described = {where for where, _ in walk(SCHEMA)}

    def keys(node: Any, path: str = "") -> Iterator[str]:
        if isinstance(node, dict):
            for key, value in node.items():
                where = f"{path}.{key}" if path else key
                yield where
                if where in described and "properties" in dict(walk(SCHEMA))[where]:
                    yield from keys(value, where)

    assert [k for k in keys(defaults) if k not in described] == []
    with helm.Chart.load(str(CHART)) as chart:
        chart.validate_schema(defaults)
