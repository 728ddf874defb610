"""Set-up and run commands that need only Python 3.11 and pip on a fresh machine.

    python3 tasks.py demo    # the main job
    python3 tasks.py test    # the whole test suite (what CI runs)
    python3 tasks.py lint    # ruff and mypy --strict on the hand-written code

Each command creates `.venv` (once) and installs the project into it with its dev extras.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
STAMP = VENV / ".installed"


def run(*cmd: str | Path) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT)


def ensure_venv() -> None:
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    if not (BIN / "python").exists() and run(sys.executable, "-m", "venv", VENV) != 0:
        sys.exit("could not create the virtual environment")
    pip: list[str | Path] = [BIN / "python", "-m", "pip", "install",
                             "--disable-pip-version-check", "-q"]
    if run(*pip, "-e", ".[dev]") != 0:
        sys.exit("could not install the project")
    STAMP.write_text(digest)


def demo(args: list[str]) -> int:
    rc = run(BIN / "machiavelox", "scenario", "tests/scenarios")
    return rc or run(BIN / "machiavelox", "up", "--demo", "6", *args)


# Tests that run in the test process alone (the engines, the scenarios, the in-process bots):
# CPU-bound, so run on two workers (pytest-xdist) first; then every test that starts service
# processes, one at a time (their timing wants a machine they do not share with each other).
IN_PROCESS = ["tests/rules", "tests/classic", "tests/scenario", "tests/bots/test_bots_play.py",
              "tests/bots/test_solver_oracle.py", "tests/bots/test_view_keeper.py",
              "tests/bots/test_classic_bots.py", "tests/bots/test_classic_levels.py",
              "tests/client/test_model.py", "tests/client/test_classic_model.py",
              "tests/services/matchmaking/test_seat_invariant.py",
              "tests/controller/test_decide.py"]


def test(args: list[str]) -> int:
    pytest: list[str | Path] = [BIN / "python", "-m", "pytest", "-q"]
    if args:  # a developer's own selection
        return run(*pytest, *args)
    first = run(*pytest, "-n", "2", *IN_PROCESS)
    # the slowest process tests printed at the end: where CI's time goes (it must stay < 25 min)
    rest = run(*pytest, "--durations=15", *(f"--ignore={path}" for path in IN_PROCESS))
    return first or rest


def lint(args: list[str]) -> int:
    rc = run(BIN / "ruff", "check", "services", "tests", "scripts", "tasks.py")
    # mypy --strict on services/machiavelox and tests/: the files are in pyproject's [tool.mypy]
    rc = run(BIN / "mypy") or rc
    # the import contracts (layers, the pure engines): pyproject's [tool.importlinter]
    return run(BIN / "lint-imports") or rc


COMMANDS = {"demo": demo, "test": test, "lint": lint}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__)
        return 2
    ensure_venv()
    return COMMANDS[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
