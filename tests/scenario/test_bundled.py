"""Every bundled `.mxs` scenario passes: the conformance vectors of the rules engine."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from machiavelox.scenario import run_file

SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").rglob("*.mxs"))


def test_there_are_enough_scenarios() -> None:
    assert len(SCENARIOS) >= 40


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_scenario_passes(path: Path) -> None:
    out = io.StringIO()
    result = run_file(str(path), False, out)
    assert result.passed, result.render()
