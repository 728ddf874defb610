"""Latency and capacity of the gateway + shard path, on this machine (a script, not a test).

    .venv/bin/python tests/bench/cluster_bench.py [--quick] [--only latency|capacity]
        [--loadgens N] [--steps 25,50,...] [--step-s S] [--soak-s S] [--soak-tables N]
        [--profile DIR] [--journal off|sqlite|postgres]

Every process is real and on loopback; one run measures:

(a) The floor: a raw two-hop gRPC echo (tests/bench/echo_server.py): this client -> a
    forwarding process that holds ONE multiplexed bidirectional stream to -> an echo server.
    Raw bytes of an action's size, one request at a time over a long-lived stream. The inner
    hop is in the transport of the gateway-shard stream (`--internal-tls`: mutual TLS, as
    deployed, or plaintext), so (b)/(a) compares like with like.
(b) A real action through a gateway and a shard (`machiavelox gateway`, `machiavelox table`,
    started with `machiavelox.local.processes.start`): a client on a Play stream sends an
    action (alternately Declare and Undeclare of a card it drew, which never runs out) and times
    until BOTH its Ack and the first event the action produced are back (the time the message
    completing them was read off the stream, as the floor times its echo before checking it);
    a fresh table every 100 actions; the app keeps one channel to the gateway throughout.
    (b1) alone at the table; (b2) with the two other seats joined from another process (every
    event fans out to three sessions, as in a real game). (a), (b1) and (b2) run
    in interleaved blocks so that the machine's background load touches them alike; p50/p99
    of each, CPU per round trip of every process, and the ratios (b)/(a): target p50 <= 1.25
    (journaled: 1.6).
    (b3): one table through thousands of actions, first tenth against last tenth (a table's
    cost must not grow with its history).
(c) Capacity of ONE shard process behind ONE gateway: load-generator processes (this script
    with `--role loadgen`) hold three Play streams per table, raw gRPC with bytes, 30 streams
    per connection; every player acts about once a second (open loop, at most 5 actions
    outstanding): Declare and Undeclare in turn, and every 21st action a Draw. Tables ramp
    in steps, each on freshly started processes, held and measured for a window: tables,
    players, actions/s achieved against the target, p50/p99 of the round trip (an action
    still unanswered 1 s after the window counts at its age), CPU% of every process from
    /proc/<pid>/stat (100% = one core; "other" = processes not of this bench) and of the
    machine (200% = both cores). The ramp stops at the first step past 50 ms p99 or
    below 90% of the actions/s target, then bisects between the last step that held and it.
    A step that failed while other processes took over 20% CPU is measured again. Target:
    >= 1000 tables (journaled: 1,500). Then a soak: 3/4 of the most that held, on one shard
    process, window after window for minutes (a shard's cost must not grow with its uptime).

`--journal` is where every shard it starts journals its tables (MACHIAVELOX_TABLE_JOURNAL,
issue 12): `sqlite` (the default, as the embedded default goes: a file in the shard's own data
directory), `postgres` (the deployed store: the machine's PostgreSQL, a fresh schema per shard
process, dropped once it has stopped) or `off` (nothing journaled: the figures of before).
The targets follow: without the journal (b)/(a) p50 <= 1.25 and >= 1000 tables; journaled
(issue 12) p50 <= 1.6 and >= 1,500 tables, each at p99 <= 50 ms.

`--profile DIR` also runs `py-spy record --gil --native` (`.venv/bin/pip install py-spy`) on the
shard and the gateway during every window and prints their hottest functions; sampling costs
CPU, so take the figures from a run without it.

Every process it starts stops by itself: the helpers exit when their standard input closes
and after a maximum lifetime; the services get SIGTERM at the end of each step.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

import grpc

from machiavelox import rules
from machiavelox.local.processes import Proc, free_port, start

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (
    AGING,
    AGING_QUICK,
    DISTURBED,
    ECHO,
    EVENT,
    HERE,
    KEY,
    LAST_KIND,
    MAX_HELPER_S,
    OPTIONS,
    PER_TABLE,
    PLAY,
    QUIET_WAIT_S,
    SHARD,
    UNPACED,
    action_bytes,
    create_table,
    event_seq,
    join_and_draw,
    now_ns,
    pair_actions,
    pct,
    services_env,
    step_of,
    token_for,
)
from bench_procs import (
    CpuMeter,
    CpuWindow,
    Helper,
    background_load,
    cpu_line,
    loadgen,
    wait_quiet,
)
from capacity import StepResult, capacity_phase, fmt_ms
from journals import JOURNALS, Journals
from loadgens import loadgen_main


# ============================================================================ (a) the floor
class Floor:
    """The echo server, the forwarder in front of it, and a client stream through both."""

    def __init__(self, tmp: Path, size: int) -> None:
        self.echo_port, self.fwd_port = free_port(), free_port()
        self.helpers: list[Helper] = []
        self.tmp = tmp
        self.payload = os.urandom(size)
        self.channel: grpc.aio.Channel | None = None
        self.call: Any = None
        self.meter: CpuMeter | None = None

    async def open(self) -> None:
        echo = Helper("echo", [str(HERE / "echo_server.py"), "echo", "--port",
                               str(self.echo_port), "--max-s", str(MAX_HELPER_S)], self.tmp)
        self.helpers.append(echo)
        assert echo.reply() == "ready"
        fwd = Helper("forward", [str(HERE / "echo_server.py"), "forward", "--port",
                                 str(self.fwd_port), "--upstream", f"127.0.0.1:{self.echo_port}",
                                 "--max-s", str(MAX_HELPER_S)], self.tmp)
        self.helpers.append(fwd)
        assert fwd.reply() == "ready"
        self.meter = CpuMeter({"client": [os.getpid()], "forwarder": [fwd.pid],
                               "echo": [echo.pid]})
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.fwd_port}")
        self.call = self.channel.stream_stream(ECHO)()

    async def run(self, samples: int) -> list[float]:
        """`samples` sequential round trips over the long-lived stream, in ms."""
        assert self.meter is not None
        lat: list[float] = []
        call, payload = self.call, self.payload
        self.meter.begin()
        for _ in range(samples):
            t0 = now_ns()
            await call.write(payload)
            answer = await call.read()
            t1 = now_ns()
            assert answer == payload
            lat.append((t1 - t0) / 1e6)
        self.meter.end(samples)
        return lat

    async def close(self) -> None:
        if self.call is not None:
            with contextlib.suppress(Exception):
                await self.call.done_writing()
            self.call.cancel()
        if self.channel is not None:
            await self.channel.close()
        for h in reversed(self.helpers):
            h.stop()


# ============================================================================ (b) one action
async def measure_action(ch: grpc.aio.Channel, shard: str, name: str, warmup: int, samples: int,
                         per_table: int, observers: Helper | None
                         ) -> tuple[list[float], Counter[str]]:
    """Round trips of single actions, in order, over the app's long-lived channel to the gateway
    (as the floor's client keeps its channel); a fresh table every `per_table` actions (0: one
    table throughout), since a table's cost per action grows with its age (see below)."""
    kinds: Counter[str] = Counter()
    lat: list[float] = []
    names = ("declare", "undeclare")
    total = warmup + samples
    chunk = per_table or total
    for first in range(0, total, chunk):
        table_id = f"{SHARD}.{name}x{first}"
        players = [f"{name}x{first}{s}" for s in ("a", "b", "c")]
        await create_table(shard, table_id, players)
        if observers is not None:
            assert observers.ask({"cmd": "observe", "table": table_id,
                                  "players": players[1:]})["ok"]
        call = ch.stream_stream(PLAY)(metadata=token_for(players[0]))
        card = await join_and_draw(call, table_id, rules.Seat.P1)
        pair = pair_actions(rules.Seat.P1, card)
        for i in range(first, min(total, first + chunk)):
            which = (i - first) % 2
            data = action_bytes(f"x{i}", pair[which])
            ack_seq = -1
            t0 = now_ns()
            await call.write(data)
            while True:
                message = await call.read()
                t1 = now_ns()  # (the floor too takes its time before looking at the answer)
                tag = message[0]
                if tag == EVENT and ack_seq >= 0 and event_seq(message) >= ack_seq:
                    break
                if tag == EVENT:
                    continue
                ack, refused, events = step_of(message)
                if refused is not None:
                    raise RuntimeError(f"refused: {refused.refusal.code}")
                if ack is not None:
                    ack_seq = ack.seq
                if ack_seq >= 0 and any(ev.seq >= ack_seq for ev in events):
                    break
            if i >= warmup:
                lat.append((t1 - t0) / 1e6)
            # untimed: read the rest of this action's events before the next one
            seen = [ev.kind for ev in step_of(message)[2] if ev.seq >= ack_seq]
            kinds[seen[0]] += 1
            while seen[-1] != LAST_KIND[names[which]]:
                seen = [ev.kind for ev in step_of(await asyncio.wait_for(call.read(), 5))[2]]
                kinds.update(seen)
        await call.done_writing()
        call.cancel()
        if observers is not None:
            assert observers.ask({"cmd": "unobserve"})["ok"]
    return lat, kinds


# ============================================================================ the report
def describe(name: str, lat: list[float]) -> str:
    return (f"  {name:<44} n={len(lat):5d}  p50={fmt_ms(pct(lat, 50))} ms  "
            f"p99={fmt_ms(pct(lat, 99))} ms  mean={statistics.fmean(lat):.3f} ms  "
            f"max={max(lat):.2f} ms")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run (~1 min)")
    parser.add_argument("--loadgens", type=int, default=0,
                        help="load-generator processes (default 1)")
    parser.add_argument("--per-conn", type=int, default=30,
                        help="Play streams per HTTP/2 connection of a load generator")
    parser.add_argument("--steps", default="",
                        help="tables per ramp step, e.g. 25,50,100")
    parser.add_argument("--soak-s", type=float, default=-1.0,
                        help="then hold 3/4 of the best step this long on one shard (default "
                        "240, quick 0)")
    parser.add_argument("--soak-tables", type=int, default=0,
                        help="tables of the soak (default: 3/4 of the most that held)")
    parser.add_argument("--step-s", type=float, default=0.0, help="seconds measured per step")
    parser.add_argument("--profile", type=Path, default=None,
                        help="run py-spy on shard and gateway during each step, raw output here")
    parser.add_argument("--only", choices=["latency", "capacity"], default=None,
                        help="only (a)+(b), or only (c)")
    # the helper role (internal)
    parser.add_argument("--via", choices=["shard", "gateway"], default="shard",
                        help="(c): load generators speak to the shard as gateways do (default), "
                        "or play as apps through a gateway process")
    parser.add_argument("--quiet-wait", type=float, default=QUIET_WAIT_S,
                        help="the longest to wait for a quiet machine before a measurement (s)")
    parser.add_argument("--single", action="store_true",
                        help="the unbatched protocol: one message per ack, refusal and event")
    parser.add_argument("--internal-tls", choices=["mtls", "off"], default="mtls",
                        help="between gateway and shard: mutual TLS (the default, as deployed) "
                        "or plaintext (MACHIAVELOX_INTERNAL_TLS=off); tls_bench.py compares")
    parser.add_argument("--journal", choices=Journals.KINDS, default="sqlite",
                        help="where the shards journal their tables: sqlite (the embedded "
                        "default), postgres (as deployed; a fresh schema per shard) or off")
    parser.add_argument("--role", choices=["bench", "loadgen"], default="bench",
                        help=argparse.SUPPRESS)
    parser.add_argument("--name", default="lg", help=argparse.SUPPRESS)
    parser.add_argument("--gateway", default="", help=argparse.SUPPRESS)
    parser.add_argument("--shard", default="", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


async def latency_phases(args: argparse.Namespace, tmp: Path, out: TextIO,
                         summary: dict[str, Any]) -> None:
    """(a), (b1) and (b2) in interleaved blocks, so that a change of the machine's background
    load touches all three alike; then (b3)."""
    blocks, block, warmup = (3, 200, 200) if args.quick else (10, 400, 500)
    size = len(action_bytes("a123", pair_actions(rules.Seat.P1, 37)[0]))
    shard_port = free_port()
    env = {"MACHIAVELOX_SHARD_ID": SHARD, "MACHIAVELOX_TABLE_PORT": str(shard_port),
           "MACHIAVELOX_TOKEN_KEY": KEY,
           "MACHIAVELOX_GATEWAY_SHARDS": f"{SHARD}=127.0.0.1:{shard_port}", **services_env(),
           **UNPACED, **JOURNALS.env()}
    procs: list[Proc] = []
    observers: Helper | None = None
    floor = Floor(tmp, size)
    try:
        await floor.open()
        procs.append(start("lat-shard", "table", env, tmp))
        procs.append(start("lat-gateway", "gateway", env, tmp))
        shard, gateway = procs[0].address, procs[1].address
        observers = loadgen("observers", tmp, gateway, shard, 30, via="gateway")
        assert observers.reply() == "ready"
        assert floor.meter is not None
        service_pids = {"client": [os.getpid()], "gateway": [procs[1].popen.pid],
                        "shard": [procs[0].popen.pid], **JOURNALS.store()}
        meters = {"b1": CpuMeter(service_pids),
                  "b2": CpuMeter({**service_pids, "observers": [observers.pid]})}
        ours = CpuWindow({"ours": [os.getpid(), observers.pid, *(h.pid for h in floor.helpers),
                                   *(p.popen.pid for p in procs),
                                   *(pid for pids in JOURNALS.store().values() for pid in pids)]})
        print(f"(a) floor: raw two-hop gRPC echo, {size}-byte messages, one long-lived stream; "
              f"(b) one action through gateway and shard, until its Ack AND its first Event "
              f"(a fresh table every {PER_TABLE} actions); sequential; {blocks} interleaved "
              f"blocks of {block} after {warmup} warm-up round trips each", file=out, flush=True)
        await asyncio.to_thread(wait_quiet, out)
        await floor.run(warmup)
        app = grpc.aio.insecure_channel(gateway)  # the app's connection, kept (as the floor's)
        await measure_action(app, shard, "w1", 0, warmup, PER_TABLE, None)
        await measure_action(app, shard, "w2", 0, warmup, PER_TABLE, observers)
        lat: dict[str, list[float]] = {"a": [], "b1": [], "b2": []}
        kinds: Counter[str] = Counter()
        ours.begin()
        for i in range(blocks):
            lat["a"] += await floor.run(block)
            for key, obs in (("b1", None), ("b2", observers)):
                meters[key].begin()
                got, seen = await measure_action(app, shard, f"{key}k{i}", 0, block,
                                                 PER_TABLE, obs)
                meters[key].end(block)
                lat[key] += got
                kinds += seen
        other = ours.end()["other"]
        print(describe("(a) client -> forwarder -> echo -> back", lat["a"]), file=out)
        print(cpu_line(floor.meter.per()), file=out)
        print(describe("(b1) alone at the table (1 session)", lat["b1"]), file=out)
        print(cpu_line(meters["b1"].per()), file=out)
        print(describe("(b2) the 2 other seats joined (3 sessions)", lat["b2"]), file=out)
        print(cpu_line(meters["b2"].per()), file=out)
        print(f"  events timed: {dict(kinds)}; other processes used {other:.0f}% CPU meanwhile"
              + (" (DISTURBED: figures suffer)" if other > DISTURBED else ""), file=out,
              flush=True)
        summary["floor"], summary["b1"], summary["b2"] = lat["a"], lat["b1"], lat["b2"]
        summary["latency_other"] = other
        target = JOURNALS.targets()[0]
        for key in ("b1", "b2"):
            r50 = pct(lat[key], 50) / pct(lat["a"], 50)
            r99 = pct(lat[key], 99) / pct(lat["a"], 99)
            summary[f"ratio_{key}"] = (r50, r99)
            print(f"  ratio ({key})/(a): p50 {r50:.2f}x  p99 {r99:.2f}x   (target p50 <= "
                  f"{target}: {'met' if r50 <= target else 'NOT met'})", file=out, flush=True)
        aging = AGING_QUICK if args.quick else AGING
        b3, _ = await measure_action(app, shard, "lat3", 0, aging, 0, None)
        await app.close()
        tenth = aging // 10
        print(f"  (b3) ONE table aging over {aging} actions (alone): p50 of the first "
              f"{tenth} {pct(b3[:tenth], 50):.3f} ms, of the last {tenth} "
              f"{pct(b3[-tenth:], 50):.3f} ms (each Declare opens a calata the table keeps)",
              file=out, flush=True)
        summary["b3"] = (pct(b3[:tenth], 50), pct(b3[-tenth:], 50), aging)
    finally:
        if observers is not None:
            with contextlib.suppress(Exception):
                observers.send({"cmd": "stop"})
            observers.stop()
        await floor.close()
        for p in reversed(procs):
            p.stop()
        JOURNALS.close()


def print_summary(summary: dict[str, Any], out: TextIO) -> None:
    print(f"summary (journal {JOURNALS.kind})", file=out)
    ratio, most = JOURNALS.targets()
    if "floor" in summary:
        f = summary["floor"]
        print(f"  (a) floor            p50 {pct(f, 50):.3f} ms  p99 {pct(f, 99):.3f} ms", file=out)
    for key, name in (("b1", "alone"), ("b2", "3 seats")):
        if key in summary:
            b = summary[key]
            line = f"  (b) action, {name:<8} p50 {pct(b, 50):.3f} ms  p99 {pct(b, 99):.3f} ms"
            if f"ratio_{key}" in summary:
                r50, r99 = summary[f"ratio_{key}"]
                line += (f"  -> (b)/(a) p50 {r50:.2f}x p99 {r99:.2f}x  target p50 <= {ratio}: "
                         f"{'met' if r50 <= ratio else 'NOT met'}")
            print(line, file=out)
    if "steps" in summary:
        steps: list[StepResult] = summary["steps"]
        held = [r for r in steps if r.held]
        best = max(held, key=lambda r: r.tables) if held else None
        if best is None:
            print("  (c) capacity: no step held", file=out)
        else:
            first_fail = min((r.tables for r in steps if not (r.held or r.disturbed)),
                             default=None)
            print(f"  (c) capacity: {best.tables} tables ({best.players} players, "
                  f"{best.achieved:.0f} actions/s, p99 {best.p99:.1f} ms) held on one shard; "
                  + (f"{first_fail} did not; " if first_fail else "no step failed; ")
                  + f"target >= {most} tables: {'met' if best.tables >= most else 'NOT met'}",
                  file=out)
            print(f"      CPU at {best.tables}: shard {best.cpu['shard']:.0f}%, gateway "
                  f"{best.cpu['gateway']:.0f}%, load generator {best.cpu['loadgen']:.0f}%, "
                  + (f"PostgreSQL {best.cpu['postgres']:.0f}%, " if "postgres" in best.cpu
                     else "")
                  + f"other processes {best.cpu['other']:.0f}%, machine "
                  f"{best.cpu['machine']:.0f}% of 200%", file=out)
            per = {name: best.cpu[name] * 1e4 / max(1.0, best.achieved)
                   for name in ("shard", "gateway", "loadgen", "postgres") if name in best.cpu}
            print("      CPU per action there: " + ", ".join(
                f"{name} {us:.0f} us" for name, us in per.items()), file=out)
            gateway = (f"; a gateway with a core to itself near "
                       f"{1e6 / per['gateway'] / 3:.0f} tables" if best.cpu["gateway"] >= 1
                       else "")  # (no gateway process with --via shard: only noise)
            print(f"      projection (CPU only, not measured): a shard with a core to itself "
                  f"saturates near {1e6 / max(1.0, per['shard']) / 3:.0f} tables{gateway}",
                  file=out)
    soak: list[StepResult] = summary.get("soak", [])
    if soak:
        clean = [r for r in soak if not r.disturbed]
        bad = [r for r in clean if not r.held]
        print(f"  (c) soak at {soak[0].tables} tables, shard up to {soak[-1].uptime:.0f} s: "
              f"{len(clean) - len(bad)} of {len(clean)} undisturbed windows held; worst p99 "
              f"{max(r.p99 for r in soak):.0f} ms"
              + (f"; first failure at shard uptime {bad[0].uptime:.0f} s" if bad else "")
              + f"; shard CPU {soak[0].cpu['shard']:.0f}% -> {soak[-1].cpu['shard']:.0f}%",
              file=out)
    if "b3" in summary:
        first, last, n = summary["b3"]
        print(f"  (b3) one table, {n} actions: p50 {first:.3f} ms (first tenth) -> {last:.3f} ms"
              " (last tenth)", file=out)
    if "background" in summary:
        print(f"  background load of other processes at the start: {summary['background']:.0f}%"
              " CPU", file=out)
    out.flush()


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    OPTIONS["batched"] = not args.single
    OPTIONS["via"] = args.via
    OPTIONS["quiet_wait_s"] = args.quiet_wait
    OPTIONS["internal_tls"] = args.internal_tls
    JOURNALS.kind = args.journal
    if args.role == "loadgen":
        asyncio.run(loadgen_main(args))
        return 0
    out = sys.stdout
    started = time.monotonic()
    print(f"cluster bench: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"grpcio {grpc.__version__}{', quick' if args.quick else ''}, "
          f"{'batched' if OPTIONS['batched'] else 'single-message'} Play protocol, "
          f"capacity load via the {OPTIONS['via']}, internal TLS {OPTIONS['internal_tls']}, "
          f"journal {JOURNALS.kind}",
          file=out, flush=True)
    summary: dict[str, Any] = {}
    other = background_load()
    summary["background"] = other
    print(f"background load before starting: {other:.0f}% CPU of {100 * (os.cpu_count() or 1)}%"
          + ("  (WARNING: other processes are busy on this machine; figures will suffer)"
             if other > 20 else ""), file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            if args.only in (None, "latency"):
                asyncio.run(latency_phases(args, tmp, out, summary))
            if args.only in (None, "capacity"):
                capacity_phase(args, tmp, out, summary)
        finally:
            JOURNALS.close()
    print_summary(summary, out)
    print(f"  ({time.monotonic() - started:.0f} s)", file=out, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
