"""(c) of cluster_bench.py: the capacity of one shard behind one gateway, in steps on freshly
started processes (the method is in cluster_bench.py's doc), and the comparison of service
configurations under the same load (tls_bench.py, tracing_bench.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from machiavelox.local.processes import Proc, free_port, start

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (
    DISTURBED,
    KEY,
    OPTIONS,
    P99_LIMIT_MS,
    RATE_FLOOR,
    RETRIES,
    SHARD,
    pct,
    services_env,
)
from bench_procs import CpuWindow, Helper, hottest, loadgen, wait_quiet
from journals import JOURNALS


@dataclass
class StepResult:
    tables: int
    players: int
    target: float
    achieved: float
    p50: float
    p99: float
    cpu: dict[str, float]
    refused: int
    skipped: int
    late: int
    lag_p99: float
    samples: int
    calate: float  # calate opened so far per table (they stay in the table: its age)
    label: str = ""
    disturbed: bool = False  # other processes took over DISTURBED% CPU and it failed: retried
    uptime: float = 0.0  # seconds the shard had run when the window began
    profile: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        return self.p99 <= P99_LIMIT_MS and self.achieved >= RATE_FLOOR * self.target

    @property
    def verdict(self) -> str:
        if self.disturbed:
            return f"disturbed (other processes {self.cpu['other']:.0f}%)"
        return "held" if self.held else "FAILED"


class Capacity:
    """Capacity steps, each on a fresh shard, gateway and load generators (`start()`), since a
    shard's cost grows with its uptime (see the soak)."""

    def __init__(self, tmp: Path, n_loadgens: int, per_conn: int, step_s: float,
                 warm_s: float, profile: Path | None, out: TextIO,
                 env: dict[str, str] | None = None) -> None:
        self.tmp = tmp
        self.env = env or {}  # more settings for the services (tracing_bench.py)
        self.n_loadgens = n_loadgens
        self.per_conn = per_conn
        self.step_s = step_s
        self.warm_s = warm_s
        self.profile = profile
        self.out = out
        self.procs: list[Proc] = []
        self.loadgens: list[Helper] = []
        self.tables = 0
        self.started = 0.0
        self.clusters = 0
        self.windows = 0

    def start(self) -> None:
        self.close()
        self.clusters += 1
        shard_port = free_port()
        env = {"MACHIAVELOX_SHARD_ID": SHARD, "MACHIAVELOX_TABLE_PORT": str(shard_port),
               "MACHIAVELOX_TABLE_CAPACITY": "100000", "MACHIAVELOX_TOKEN_KEY": KEY,
               "MACHIAVELOX_GATEWAY_SHARDS": f"{SHARD}=127.0.0.1:{shard_port}",
               **services_env(), **JOURNALS.env(), **self.env}
        n = self.clusters
        self.shard = start(f"cap{n}-shard", "table", env, self.tmp)
        self.procs.append(self.shard)
        self.gateway = start(f"cap{n}-gateway", "gateway", env, self.tmp)
        self.procs.append(self.gateway)
        self.started = time.monotonic()
        for i in range(self.n_loadgens):
            self.loadgens.append(loadgen(f"cap{n}-lg{i}", self.tmp, self.gateway.address,
                                         self.shard.address, self.per_conn))
        for lg in self.loadgens:
            assert lg.reply() == "ready"
        self.tables = 0

    def close(self) -> None:
        for lg in self.loadgens:
            with contextlib.suppress(Exception):
                lg.send({"cmd": "stop"})
        for lg in self.loadgens:
            lg.stop()
        for p in reversed(self.procs):
            with contextlib.suppress(Exception):
                p.stop()
        self.loadgens.clear()
        self.procs.clear()
        JOURNALS.close()

    def _all(self, command: dict[str, Any]) -> list[Any]:
        for lg in self.loadgens:
            lg.send(command)
        return [lg.reply() for lg in self.loadgens]

    def _share(self, total: int) -> list[int]:
        n = len(self.loadgens)
        return [total // n + (1 if i < total % n else 0) for i in range(n)]

    def ensure(self, tables: int) -> float:
        """Have `tables` tables set up (joined, drawn); the seconds it took."""
        t0 = time.monotonic()
        if tables > self.tables:
            self._all_each([{"cmd": "add", "tables": k} for k in self._share(tables)])
            self.tables = tables
        return time.monotonic() - t0

    def _all_each(self, commands: list[dict[str, Any]]) -> list[Any]:
        for lg, command in zip(self.loadgens, commands, strict=True):
            lg.send(command)
        return [lg.reply() for lg in self.loadgens]

    def activate(self, tables: int) -> None:
        self._all_each([{"cmd": "active", "tables": k} for k in self._share(tables)])

    def settle(self, players: int, limit_s: float) -> None:
        """Wait out the warm-up, then for the backlog of a previous overloaded step to drain."""
        time.sleep(self.warm_s)
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            outstanding = sum(r["outstanding"] for r in self._all({"cmd": "status"}))
            if outstanding <= max(5, players // 20):
                return
            time.sleep(0.5)

    def _ours(self) -> dict[str, list[int]]:
        return {"shard": [self.shard.popen.pid], "gateway": [self.gateway.popen.pid],
                "loadgen": [lg.pid for lg in self.loadgens], "bench": [os.getpid()],
                **JOURNALS.store()}

    def wait_quiet(self, limit_s: float | None = None) -> None:
        if limit_s is None:
            limit_s = float(OPTIONS["quiet_wait_s"])
        if not self.procs:
            wait_quiet(self.out, limit_s)
            return
        end = time.monotonic() + limit_s
        while time.monotonic() < end:
            window = CpuWindow(self._ours())
            window.begin()
            time.sleep(2.0)
            if window.end()["other"] <= DISTURBED:
                return

    def step(self, tables: int, label: str = "", fresh: bool = True) -> StepResult:
        """One measured window at `tables` tables; on a fresh cluster unless `fresh` is off."""
        if fresh or not self.procs:
            self.start()
        setup_s = self.ensure(tables)
        if fresh:
            self.activate(tables)
            self.settle(tables * 3, 20.0)
        uptime = time.monotonic() - self.started
        self.windows += 1
        spies = self._spy(tables)
        window = CpuWindow({**self._ours(), "profiler": [popen.pid for _, popen, _ in spies]})
        for lg in self.loadgens:
            lg.send({"cmd": "measure", "seconds": self.step_s})
        window.begin()
        time.sleep(self.step_s)
        cpu = window.end()
        replies = [lg.reply() for lg in self.loadgens]
        profile = self._spied(spies)
        lat = [v for r in replies for v in r["lat"]]
        done = sum(r["done"] for r in replies)
        result = StepResult(
            tables=tables, players=tables * 3, target=tables * 3 / 1.0,
            achieved=done / self.step_s, p50=pct(lat, 50), p99=pct(lat, 99), cpu=cpu,
            refused=sum(r["refused"] for r in replies),
            skipped=sum(r["skipped"] for r in replies), late=sum(r["late"] for r in replies),
            lag_p99=max(r["lag_p99"] for r in replies), samples=len(lat),
            calate=sum(r["calate"] * r["tables"] for r in replies) / max(1, tables), label=label,
            profile=profile, uptime=uptime)
        if setup_s > 1:
            print(f"    (set up {tables} tables in {setup_s:.1f} s)", file=self.out, flush=True)
        return result

    def _spy(self, tables: int) -> list[tuple[str, subprocess.Popen[bytes], Path]]:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if self.profile is None or not Path(spy).exists():
            return []
        self.profile.mkdir(parents=True, exist_ok=True)
        out = []
        for name, proc in (("shard", self.shard), ("gateway", self.gateway)):
            path = self.profile / f"{name}-{tables}t-c{self.clusters}-{self.windows}.txt"
            popen = subprocess.Popen(
                [spy, "record", "--gil", "--native", "-r", "100", "-d", str(int(self.step_s)),
                 "-f", "raw", "-o", str(path), "-p", str(proc.popen.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            out.append((name, popen, path))
        return out

    def _spied(self, spies: list[tuple[str, subprocess.Popen[bytes], Path]]
               ) -> dict[str, list[tuple[str, float]]]:
        profile = {}
        for name, popen, path in spies:
            try:
                popen.wait(self.step_s + 20)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
            if path.exists():
                profile[name] = hottest(path.read_text())
        return profile


def fmt_ms(v: float) -> str:
    return f"{v:7.3f}" if v < 10 else f"{v:7.1f}"


HEADER = ("  tables players target achieved   p50ms   p99ms  shard  gatew  loadg  other  mach."
          "  lag99  late  skip refu calate")


def step_line(r: StepResult) -> str:
    lg = r.cpu.get("loadgen", 0.0)
    verdict = r.verdict
    pg = f"  pg {r.cpu['postgres']:3.0f}%" if "postgres" in r.cpu else ""
    return (f"  {r.tables:5d} {r.players:6d} {r.target:7.0f} {r.achieved:8.0f} "
            f"{fmt_ms(r.p50)} {fmt_ms(r.p99)}  {r.cpu['shard']:5.0f}% {r.cpu['gateway']:5.0f}% "
            f"{lg:5.0f}% {r.cpu['other']:5.0f}% {r.cpu['machine']:5.0f}%  {r.lag_p99:6.1f} "
            f"{r.late:5d} {r.skipped:5d} {r.refused:4d} {r.calate:6.0f}{pg}  {verdict} {r.label}"
            ).rstrip()


def comparison_parser(description: str) -> argparse.ArgumentParser:
    """The command line of a bench that compares service configurations under the same load
    (tracing_bench.py, tls_bench.py)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--step-s", type=float, default=10.0)
    parser.add_argument("--quiet-wait", type=float, default=120.0,
                        help="the longest to wait for a quiet machine before a measurement (s)")
    return parser


def compare_rounds(args: argparse.Namespace, configs: tuple[str, ...], tmp: Path, out: TextIO,
                   setup: Callable[[str], dict[str, str]]) -> dict[str, list[StepResult]]:
    """`args.rounds` interleaved rounds (so the machine's background load touches every
    configuration alike) of a capacity step of `args.tables` tables through the gateway per
    configuration, each on a fresh shard and gateway; `setup(config)` is called before each
    and gives the services' extra settings. Each step's line is printed as it ends."""
    OPTIONS["via"] = "gateway"
    OPTIONS["quiet_wait_s"] = args.quiet_wait
    width = max(map(len, configs)) + 1
    results: dict[str, list[StepResult]] = {c: [] for c in configs}
    for r in range(args.rounds):
        for config in configs:
            cap = Capacity(tmp, 1, 30, args.step_s, 3.0, None, out, env=setup(config))
            try:
                cap.wait_quiet()
                step = cap.step(args.tables, f"{config} round {r + 1}")
            finally:
                cap.close()
            results[config].append(step)
            print(f"  {config:{width}s} round {r + 1}: {step_line(step)}", file=out, flush=True)
    return results


def capacity_phase(args: argparse.Namespace, tmp: Path, out: TextIO,
                   summary: dict[str, Any]) -> None:
    quick = args.quick
    steps = ([int(n) for n in args.steps.split(",")] if args.steps else
             [25, 100, 300] if quick else [25, 100, 300, 600, 1000, 1500, 2000, 2500, 3000])
    step_s = args.step_s or (3.0 if quick else 10.0)
    soak_s = args.soak_s if args.soak_s >= 0 else (0.0 if quick else 240.0)
    bisections = 0 if quick or args.steps else 2
    n_loadgens = args.loadgens or 1
    via = ("each load generator speaks to the shard as one gateway does (one multiplexed "
           "Connect stream)" if OPTIONS["via"] == "shard" else
           "apps' Play streams through one gateway process")
    print(f"(c) capacity: one shard; {via}; {n_loadgens} load generator(s), 3 players "
          f"per table, ~1 action/s each; every step on freshly started processes, {step_s:.0f} s"
          f" measured; a step holds at p99 <= {P99_LIMIT_MS:.0f} ms and >= {RATE_FLOOR:.0%} of "
          "the actions/s target", file=out, flush=True)
    print("  (CPU%: 100% = one core; other = processes not of this bench; lag99 = p99 lateness of "
          "the load generator's event loop, ms; late = actions still unanswered 1 s after the "
          "window, counted at their age; skip = beats skipped at 5 outstanding; refu = refusals;"
          " calate = calate opened per table so far, the tables' age; pg = the PostgreSQL server's "
          "processes, with --journal postgres)", file=out)
    print(HEADER, file=out, flush=True)
    cap = Capacity(tmp, n_loadgens, args.per_conn, step_s, 1.0 if quick else 3.0, args.profile,
                   out)
    results: list[StepResult] = []
    soak: list[StepResult] = []
    try:
        def run(tables: int, label: str = "") -> StepResult:
            for attempt in range(RETRIES + 1):
                r = cap.step(tables, label)
                results.append(r)
                if r.held or r.cpu["other"] <= DISTURBED or attempt == RETRIES:
                    print(step_line(r), file=out, flush=True)
                    return r
                r.disturbed = True
                r.label = f"{label} -> measured again".strip()
                print(step_line(r), file=out, flush=True)
                cap.close()
                cap.wait_quiet()
            raise AssertionError("unreachable")

        failed: StepResult | None = None
        for tables in steps:
            r = run(tables)
            if not r.held:
                failed = r
                break
        if failed is not None:
            lo = max((r.tables for r in results if r.held), default=0)
            hi = failed.tables
            for _ in range(bisections):
                mid = (lo + hi) // 2 // 25 * 25
                if mid <= lo or mid >= hi:
                    break
                r = run(mid, label="(bisect)")
                lo, hi = (mid, hi) if r.held else (lo, mid)
        best = max((r.tables for r in results if r.held), default=0)
        soak_tables = args.soak_tables or max(25, best * 3 // 4 // 25 * 25)  # with headroom
        if soak_s > 0 and soak_tables:
            print(f"  soak: {soak_tables} tables held on ONE shard process for {soak_s:.0f} s, "
                  f"{step_s:.0f} s windows back to back", file=out, flush=True)
            cap.close()
            cap.wait_quiet()
            end = None
            while end is None or time.monotonic() < end:
                r = cap.step(soak_tables, fresh=end is None)
                r.disturbed = r.cpu["other"] > DISTURBED and not r.held
                r.label = f"(soak, shard up {r.uptime:.0f} s)"
                if end is None:
                    end = time.monotonic() + soak_s - step_s
                soak.append(r)
                print(step_line(r), file=out, flush=True)
    finally:
        cap.close()
    summary["steps"] = results
    summary["soak"] = soak
    shown = [r for r in results if r.held and r.profile][-1:] + [
        r for r in results if not r.held and r.profile][:1]
    if any(r.profile for r in soak):
        shown.append(max((r for r in soak if r.profile), key=lambda r: r.p99))
    for r in shown:
        for name, rows in r.profile.items():
            print(f"  py-spy {name} at {r.tables} tables, shard up {r.uptime:.0f} s "
                  f"({r.verdict}; share of samples):", file=out)
            for label, share in rows:
                print(f"    {share:5.1f}%  {label}", file=out)
