"""The contracts: generated code in step with proto/, buf lint, no breaking change."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUF = shutil.which("buf", path=str(Path(sys.executable).parent))


def test_generated_code_is_up_to_date() -> None:
    """CI fails when someone edits proto/ and forgets scripts/gen_protos.py (or edits _gen)."""
    run = subprocess.run([sys.executable, "scripts/gen_protos.py", "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.skipif(BUF is None, reason="buf-bin is a dev dependency")
def test_buf_lint() -> None:
    run = subprocess.run([str(BUF), "lint"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def _previous_commit_with_protos() -> str | None:
    """The parent of HEAD, if it has protos (then a breaking change against it must fail)."""
    run = subprocess.run(["git", "rev-parse", "--verify", "-q", "HEAD~1"], cwd=ROOT,
                         capture_output=True, text=True)
    if run.returncode != 0:
        return None
    sha = run.stdout.strip()
    tree = subprocess.run(["git", "ls-tree", "-r", "--name-only", sha, "proto/"], cwd=ROOT,
                          capture_output=True, text=True)
    return sha if tree.stdout.strip() else None


@pytest.mark.skipif(BUF is None, reason="buf-bin is a dev dependency")
def test_no_breaking_change_against_the_previous_commit() -> None:
    """A contract change that would break deployed apps cannot land unnoticed."""
    sha = _previous_commit_with_protos()
    if sha is None:
        pytest.skip("the previous commit has no protos yet")
    run = subprocess.run([str(BUF), "breaking", "--against", f".git#ref={sha}"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
