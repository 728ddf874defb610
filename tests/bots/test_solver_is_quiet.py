"""The solver writes nothing on the process's stdout (HiGHS prints a banner at its first model
below Python, on descriptor 1): a terminal client with leveled practice bots would show it on
its screen. A real process, its stdout captured at the descriptor."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
from machiavelox.bots import solver
import highspy
highspy.Highs().setOptionValue("output_flag", False)
print("ok")
"""


def test_importing_and_making_models_prints_nothing_but_ours() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "ok\n", done.stdout
