"""The rules engine's public API (issue 14, item 4): code outside `machiavelox.rules` imports the
package (`from machiavelox import rules`, `from machiavelox.rules import X`), never one of its
modules, so the engine's layers can change behind its small API (rules/__init__.py). The
layers themselves are pyproject's import contracts (`lint-imports`, in CI)."""

from __future__ import annotations

import ast
from pathlib import Path

from machiavelox import rules

SERVICES = Path(__file__).resolve().parents[2] / "services" / "machiavelox"


def engine_modules_imported(path: Path) -> list[str]:
    """The `machiavelox.rules.<module>` names `path` imports, with their lines."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.level == 0 and node.module.startswith("machiavelox.rules."):
                found.append(f"{node.lineno}: from {node.module} import ...")
            elif node.level == 0 and node.module == "machiavelox.rules":
                found += [f"{node.lineno}: {alias.name}" for alias in node.names
                          if alias.name not in rules.__all__]
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names
                      if a.name.startswith("machiavelox.rules.")]
    return found


def outside_the_engine() -> list[Path]:
    return sorted(p for p in SERVICES.rglob("*.py")
                  if not p.is_relative_to(SERVICES / "rules")
                  and not p.is_relative_to(SERVICES / "_gen"))


def test_the_services_use_only_the_engines_public_api() -> None:
    offenders = {str(p.relative_to(SERVICES)): found for p in outside_the_engine()
                 if (found := engine_modules_imported(p))}
    assert offenders == {}


def test_the_check_sees_an_import_of_an_engine_module(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from machiavelox.rules.board import Op\nimport machiavelox.rules.judge\n"
                   "from machiavelox.rules import Table, board\n")
    assert engine_modules_imported(bad) == [
        "1: from machiavelox.rules.board import ...", "2: import machiavelox.rules.judge",
        "3: board"]
