"""What mutual TLS between the services costs: the same load with MACHIAVELOX_INTERNAL_TLS=mtls
and =off (a script that prints figures, not a test).

    .venv/bin/python tests/bench/tls_bench.py [--tables N] [--rounds R] [--step-s S]

In interleaved rounds (so the machine's background load touches both alike), a fresh shard and
gateway per measurement, with the gateway-shard stream in mutual TLS (each service with its
role's certificate of a throwaway CA, as `machiavelox up` runs) or in plaintext, while load
generators play N tables through the gateway (three Play streams per table, each player acting
about once a second; loadgens.py's LoadGen; the apps' own connections to the gateway are
plaintext in both). Printed per configuration: actions/s achieved, p50/p99 of the round trip
(action sent -> ack and first event back), and the CPU per action of the gateway, of the shard
and of both (microseconds of CPU time per action: a process saturates at 1 / that).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
import capacity as cb  # noqa: E402
from bench_common import OPTIONS  # noqa: E402

CONFIGS = ("off", "mtls")


def per_action(step: cb.StepResult, process: str) -> float:
    """CPU microseconds per action of `process` (CPU% of one core, actions/s)."""
    return step.cpu[process] * 1e4 / max(1.0, step.achieved)


def use(config: str) -> dict[str, str]:
    """Set up `config` (no settings of its own: `start` reads OPTIONS)."""
    OPTIONS["internal_tls"] = config  # the services' and the helpers' settings
    return {}


def main(argv: list[str]) -> int:
    args = cb.comparison_parser(__doc__.splitlines()[0]).parse_args(argv)
    out = sys.stdout
    started = time.monotonic()
    print(f"internal TLS bench: {args.tables} tables through one gateway and one shard, "
          f"{args.rounds} interleaved rounds of {args.step_s:.0f} s per configuration",
          file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="tls-bench-") as tmp_name:
        results = cb.compare_rounds(args, CONFIGS, Path(tmp_name), out, use)
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
