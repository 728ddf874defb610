"""The cost of tracing: the same load with tracing off, at the default sampling and at 100%
(a script that prints figures, not a test).

    .venv/bin/python tests/bench/tracing_bench.py [--tables N] [--rounds R] [--step-s S]

One run: a real OTLP/gRPC receiver (tests/support/otlp_receiver.py) in its own process; then,
in interleaved rounds so the machine's background load touches every configuration alike, a
fresh shard and gateway per measurement with
- off:      OTEL_TRACES_EXPORTER=none (the services' default when no endpoint is set);
- default:  OTLP to the receiver, the default sampler (parentbased_traceidratio, 0.01);
- full:     OTLP to the receiver, every action sampled (parentbased_always_on);
while load generators play N tables through the gateway (three Play streams per table, each
player acting about once a second; loadgens.py's LoadGen). Printed per configuration: the
actions/s achieved, p50/p99 of the round trip (action sent -> ack and first event back), and the
CPU per action of the gateway and the shard. The throughput a configuration costs is its CPU per
action (gateway + shard) against "off": a process saturates at 1 / (CPU per action), so 5% more
CPU per action is 5% less throughput. Target: the default costs under 5%.
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

from tests.support.otlp_receiver import Receiver  # noqa: E402

CONFIGS = ("off", "default", "full")


def env_for(config: str, receiver: Receiver) -> dict[str, str]:
    if config == "off":
        return {"OTEL_TRACES_EXPORTER": "none"}
    env = {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
    if config == "full":
        env["OTEL_TRACES_SAMPLER"] = "parentbased_always_on"
    return env  # default: the services' own sampler and batch export settings


def main(argv: list[str]) -> int:
    args = cb.comparison_parser(__doc__.splitlines()[0]).parse_args(argv)
    out = sys.stdout
    started = time.monotonic()
    print(f"tracing bench: {args.tables} tables through one gateway and one shard, "
          f"{args.rounds} interleaved rounds of {args.step_s:.0f} s per configuration",
          file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="tracing-bench-") as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "otlp").mkdir()
        receiver = Receiver(tmp / "otlp")
        try:
            results = cb.compare_rounds(args, CONFIGS, tmp, out,
                                        lambda config: env_for(config, receiver))
            spans = len(receiver.spans())
        finally:
            receiver.stop()
    print("summary (medians over rounds; CPU per action in us)", file=out)
    base = None
    for config in CONFIGS:
        steps = results[config]
        per = [(s.cpu["gateway"] + s.cpu["shard"]) * 1e4 / max(1.0, s.achieved) for s in steps]
        p50 = statistics.median(s.p50 for s in steps)
        p99 = statistics.median(s.p99 for s in steps)
        achieved = statistics.median(s.achieved for s in steps)
        cost = statistics.median(per)
        base = cost if base is None else base
        print(f"  {config:8s} {achieved:7.0f} actions/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  "
              f"gateway+shard CPU/action {cost:6.0f} us  throughput cost "
              f"{(cost / base - 1) * 100:+5.1f}%  (CPU/action per round: "
              f"{', '.join(f'{v:.0f}' for v in per)})", file=out)
    print(f"  spans received: {spans} ({time.monotonic() - started:.0f} s)", file=out,
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
