"""docs/deploy.md's values reference is what the schema and values.yaml say, key for key."""

from __future__ import annotations

import json
from typing import Any

from tests.deploy.chart import CHART
from tests.deploy.values_reference import current, table


def test_the_values_reference_is_in_step_with_the_schema() -> None:
    assert current() == table(), (
        "docs/deploy.md's values reference is stale: run "
        ".venv/bin/python -m tests.deploy.values_reference")


def test_the_reference_lists_every_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    text = current()

    def leaves(node: dict[str, Any], path: str = "") -> list[str]:
        out: list[str] = []
        for key, prop in node.get("properties", {}).items():
            where = f"{path}.{key}" if path else key
            out += leaves(prop, where) if "properties" in prop else [where]
        return out

    keys = leaves(schema)
    assert len(keys) > 80
    for key in keys:
        assert f"| `{key}` |" in text, key
