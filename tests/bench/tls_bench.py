"""What mutual TLS between the services costs: the same load with MACHIAVELOX_INTERNAL_TLS=mtls
and =off (a script that prints figures, not a test).

    .venv/bin/python tests/bench/tls_bench.py [--tables N] [--rounds R] [--step-s S]

In interleaved rounds (so the machine's background load touches both alike), a fresh shard and
gateway per measurement, with the gateway-shard stream in mutual TLS (each service with its
role's certificate of a throwaway CA, as `machiavelox up` runs) or in plaintext, while load
generators play N tables through the gateway (three Play streams per table, each player acting
about once a second; cluster_bench.py's LoadGen; the apps' own connections to the gateway are
plaintext in both). Printed per configuration: actions/s achieved, p50/p99 of the round trip
(action sent -> ack and first event back), and the CPU per action of the gateway, of the shard
and of both (microseconds of CPU time per action: a process saturates at 1 / that).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
import cluster_bench as cb  # noqa: E402
from bench_common import OPTIONS  # noqa: E402

CONFIGS = ("off", "mtls")


def per_action(step: cb.StepResult, process: str) -> float:
    """CPU microseconds per action of `process` (CPU% of one core, actions/s)."""
    return step.cpu[process] * 1e4 / max(1.0, step.achieved)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--step-s", type=float, default=10.0)
    parser.add_argument("--quiet-wait", type=float, default=120.0,
                        help="the longest to wait for a quiet machine before a measurement (s)")
    args = parser.parse_args(argv)
    OPTIONS["via"] = "gateway"
    OPTIONS["quiet_wait_s"] = args.quiet_wait
    out = sys.stdout
    started = time.monotonic()
    print(f"internal TLS bench: {args.tables} tables through one gateway and one shard, "
          f"{args.rounds} interleaved rounds of {args.step_s:.0f} s per configuration",
          file=out, flush=True)
    results: dict[str, list[cb.StepResult]] = {c: [] for c in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="tls-bench-") as tmp_name:
        tmp = Path(tmp_name)
        for r in range(args.rounds):
            for config in CONFIGS:
                OPTIONS["internal_tls"] = config  # the services' and the helpers' settings
                cap = cb.Capacity(tmp, 1, 30, args.step_s, 3.0, None, out)
                try:
                    cap.wait_quiet()
                    step = cap.step(args.tables, f"{config} round {r + 1}")
                finally:
                    cap.close()
                results[config].append(step)
                print(f"  {config:5s} round {r + 1}: {cb.step_line(step)}", file=out, flush=True)
    print("summary (medians over rounds; CPU per action in us)", file=out)
    base: dict[str, float] = {}
    for config in CONFIGS:
        steps = results[config]
        costs = {p: statistics.median(per_action(s, p) for s in steps)
                 for p in ("gateway", "shard")}
        costs["both"] = statistics.median(per_action(s, "gateway") + per_action(s, "shard")
                                          for s in steps)
        base = base or costs
        achieved = statistics.median(s.achieved for s in steps)
        p50 = statistics.median(s.p50 for s in steps)
        p99 = statistics.median(s.p99 for s in steps)
        print(f"  {config:5s} {achieved:7.0f} actions/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
              + "  ".join(f"{p} {costs[p]:5.0f} us ({(costs[p] / base[p] - 1) * 100:+5.1f}%)"
                          for p in ("gateway", "shard", "both")), file=out)
    print(f"  ({time.monotonic() - started:.0f} s)", file=out, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
