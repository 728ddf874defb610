"""A service process's /metrics (MACHIAVELOX_METRICS_PORT), as the tests read it."""

from __future__ import annotations

import urllib.request

from machiavelox.local.processes import Proc


def metrics(proc: Proc) -> str:
    """The text `proc` serves on its /metrics port."""
    port = proc.env["MACHIAVELOX_METRICS_PORT"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        return str(reply.read().decode())


def started(proc: Proc, method: str) -> float:
    """`proc`'s count of calls of `method` started."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics(proc).splitlines()
               if line.startswith("grpc_server_started_total{")
               and f'grpc_method="{method}"' in line)


def handled(proc: Proc, method: str) -> dict[str, float]:
    """`proc`'s count of calls of `method` ended, by status."""
    out: dict[str, float] = {}
    for line in metrics(proc).splitlines():
        if line.startswith("grpc_server_handled_total{") and f'grpc_method="{method}"' in line:
            code = line.partition('grpc_code="')[2].partition('"')[0]
            out[code] = out.get(code, 0.0) + float(line.rsplit(" ", 1)[1])
    return out
