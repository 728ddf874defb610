"""A matchmaking replica collects cycles rarely (matchmaking/main.py `prepare`,
platform/gcsettings.py): what start-up allocated is frozen and the young generation is large.
Run in a fresh interpreter, as the replica's process starts, so this test process's collector
is left alone. Would fail if the replica kept CPython's defaults (3.11: 700, 10, 10), which cost a
burst of 10,000 players 30% of the replica's main thread (tests/bench/agora_bench.py)."""

from __future__ import annotations

import subprocess
import sys

from machiavelox.platform.gcsettings import MIDDLE, OLD, YOUNG

PROBE = ("import gc\n"
         "from machiavelox.matchmaking.main import prepare\n"
         "prepare(None)\n"
         "print(gc.get_threshold(), gc.get_freeze_count() > 0)\n")


def test_the_replica_collects_rarely() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    assert out == f"{(YOUNG, MIDDLE, OLD)} True"
