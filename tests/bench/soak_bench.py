"""Does a shard's memory stay flat while tables come and go? (issue 12: ended tables leave
memory; a script that prints figures, not a test).

    .venv/bin/python tests/bench/soak_bench.py [--minutes 10] [--journal sqlite|postgres]
        [--tables 300] [--life-s 15] [--grace-s 5] [--every-s 30] [--probe [--unfrozen]]

One real `machiavelox table` process (mutual TLS, its journal in `--journal`:
journals.py), MACHIAVELOX_TABLE_RESUME_GRACE_S = `--grace-s`, fed through ONE
Connect stream as a gateway feeds it (loadgens.py's `ShardLoad`): `--tables` tables in play
at any time, each created (CreateTable, as matchmaking does), its three seats subscribed and
drawing a card each, then acting about once a second (Declare and Undeclare in turn) for about
`--life-s` seconds (the first ones staggered), after which two of its players abandon (M11:
the third wins, the single match ends) and a new table takes its place: --tables / --life-s
tables start and end every second, for `--minutes`.

Every `--every-s` seconds a line: the shard's RSS (VmRSS of /proc/<pid>/status) and its peak,
tables in play (its /metrics: machiavelox_shard_tables), tables created and ended so far, the
round trips of the interval (p50/p99: action sent -> its answer), refusals, the shard's CPU%
and its cycle collector's passes per generation (python_gc_collections_total). At the end: the
RSS growth (least squares, after the first minute), per minute and per thousand tables ended.

`--probe` also reads the shard from inside (for a growth to explain): this bench puts a
`sitecustomize` module on the shard's PYTHONPATH (the service's code is untouched) whose thread
notes, at every line, the sizes of the shard's containers (`tables`: the tables in memory,
`final`, `limits._buckets`...), the objects its collector froze (table/main.py `tune_gc`
freezes whatever survives a young collection) and the interpreter's allocated blocks.
`--unfrozen` also makes `gc.freeze` a no-op there, to tell what the freezing keeps alive.
A probed run's figures are not the service's own: take those from a run without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import heapq
import json
import os
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import SHARD, now_ns, pct, services_env  # noqa: E402
from bench_procs import CLK_TCK, cpu_ticks  # noqa: E402
from journals import Journals  # noqa: E402
from loadgens import Actor, ShardLoad, _item  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from machiavelox import codec, rules  # noqa: E402
from machiavelox._gen.v1 import table_pb2  # noqa: E402
from machiavelox.local.processes import Proc, free_port, log_problems, start  # noqa: E402

PROBE = '''"""soak_bench.py --probe, in the shard's process (its PYTHONPATH; loaded by `site`)."""
import gc, json, os, sys, threading, time

if os.environ.get("SOAK_PROBE_UNFROZEN"):
    gc.freeze = lambda: None


def _sizes(obj, prefix, out, depth):
    for name, value in list(vars(obj).items()):
        if isinstance(value, (dict, list, set, tuple)):
            out[prefix + name] = len(value)
        elif depth and type(value).__module__.startswith("machiavelox") and hasattr(
                value, "__dict__"):
            _sizes(value, prefix + name + ".", out, depth - 1)


def _probe():
    while not hasattr(sys.modules.get("machiavelox.table.shard"), "Shard"):
        time.sleep(0.002)
    cls = sys.modules["machiavelox.table.shard"].Shard
    shards = []
    init = cls.__init__

    def noted(self, *args, **kwargs):
        init(self, *args, **kwargs)
        shards.append(self)

    cls.__init__ = noted
    with open(os.environ["SOAK_PROBE_FILE"], "a") as out:
        while True:
            time.sleep(float(os.environ["SOAK_PROBE_S"]))
            sizes = {"gc.frozen": gc.get_freeze_count(), "gc.tracked": len(gc.get_objects()),
                     "blocks": sys.getallocatedblocks()}
            for shard in shards:
                _sizes(shard, "", sizes, 1)
            out.write(json.dumps(sizes) + "\\n")
            out.flush()


threading.Thread(target=_probe, name="soak-probe", daemon=True).start()
'''
PURGE_S = 5.0  # how often the ended tables' seats leave the load generator
WARMUP_S = 60.0  # the growth is fitted after this (set-up, first allocations, caches)
SHOWN = ("tables", "final", "_settled_at", "retention.final", "retention._settled_at", "subs",
         "limits._buckets", "deadlines._armed", "deadlines._heap", "reports._tasks",
         "journal._tasks")  # (those it has: its attributes move)


class Lifecycle(ShardLoad):
    """ShardLoad's tables, each with a life: created, played `life_s` or so, then ended by two
    of its players abandoning (M11); `replace` starts as many new ones as ended. An ended
    table's seats leave the load generator once its abandons are answered (`purge`), so the
    bench's own cost stays that of the tables in play, however long it runs."""

    def __init__(self, name: str, shard: str, life_s: float) -> None:
        super().__init__(name, shard)
        self.life_s = life_s
        self.active = sys.maxsize  # every table acts from its set-up on
        self.lives: list[tuple[float, int, list[Actor]]] = []  # (end, table, seats), a heap
        self.ending: list[list[Actor]] = []  # ended tables' seats, until `purge`
        self.created = 0
        self.ended = 0

    async def grow(self, count: int, stagger: bool) -> None:
        first = self.tables
        await self.add(count)
        now = asyncio.get_running_loop().time()
        seats: dict[int, list[Actor]] = {}
        for actor in reversed(self.actors.values()):  # the new ones were added last
            if actor.table < first:
                break
            seats.setdefault(actor.table, []).append(actor)
        for table, actors in seats.items():
            life = random.uniform(0.0, self.life_s) if stagger else (
                self.life_s * random.uniform(0.8, 1.2))
            heapq.heappush(self.lives, (now + life, table, actors))
        self.created += len(seats)

    def end_due(self) -> int:
        """End the tables whose life is over; how many."""
        now = asyncio.get_running_loop().time()
        ended = 0
        while self.lives and self.lives[0][0] <= now:
            _, _, actors = heapq.heappop(self.lives)
            for actor in actors:
                actor.pair = None  # no more actions from its seats
            for actor in actors[:2]:  # two abandon (M11): the third is the winner
                self._ids += 1
                action_id = str(self._ids)
                actor.pending[action_id] = now_ns()
                self._send(_item(actor.key, action=table_pb2.ActionRequestItem(
                    client_action_id=action_id,
                    action=codec.action_to_pb(rules.Abandon(actor.seat)))))
            self.ending.append(actors)
            ended += 1
        self.ended += ended
        return ended

    def purge(self) -> None:
        """Forget the seats of the ended tables whose actions are all answered (nothing more
        comes for them), and their entries in ShardLoad's schedule, at once (the scheduler
        looks every entry up)."""
        done = [actors for actors in self.ending if not any(a.pending for a in actors)]
        if not done:
            return
        self.ending = [actors for actors in self.ending if any(a.pending for a in actors)]
        for actors in done:
            for actor in actors:
                del self.actors[actor.key]
        self.heap = [entry for entry in self.heap if entry[2] in self.actors]
        heapq.heapify(self.heap)

    async def replace(self) -> None:
        ended = self.end_due()
        if ended:
            await self.grow(ended, stagger=False)


@dataclass
class Sample:
    t: float  # seconds into the soak
    rss_mb: float
    hwm_mb: float
    in_play: float
    created: int
    ended: int
    answered: int
    p50: float
    p99: float
    refused: int
    cpu: float
    gc: dict[str, float]
    probe: dict[str, Any] = field(default_factory=dict)


def memory_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, MB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024  # kB
    return values["VmRSS"], values["VmHWM"]


def scrape(port: int) -> dict[str, float]:
    """The shard's /metrics: every sample, by name and labels (without `shard`)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()) if k != "shard")
            out[f"{s.name}{{{labels}}}"] = s.value
    return out


def last_probe(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    return json.loads(lines[-1]) if lines else {}


class Soak:
    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.args = args
        self.tmp = tmp
        self.journals = Journals(args.journal)
        self.metrics_port = free_port()
        self.probe_file = tmp / "probe.jsonl"
        self.samples: list[Sample] = []
        self.proc: Proc | None = None

    def env(self) -> dict[str, str]:
        env = {"MACHIAVELOX_SHARD_ID": SHARD, "MACHIAVELOX_TABLE_CAPACITY": "100000",
               "MACHIAVELOX_METRICS_PORT": str(self.metrics_port),
               "MACHIAVELOX_TABLE_RESUME_GRACE_S": str(self.args.grace_s),
               **services_env(), **self.journals.env()}
        if self.args.probe:
            site = self.tmp / "probe"
            site.mkdir()
            (site / "sitecustomize.py").write_text(PROBE)
            env.update(PYTHONPATH=os.pathsep.join(
                p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p),
                SOAK_PROBE_FILE=str(self.probe_file), SOAK_PROBE_S=str(self.args.every_s))
            if self.args.unfrozen:
                env["SOAK_PROBE_UNFROZEN"] = "1"
        return env

    def sample(self, gen: Lifecycle, t: float, ticks: int, dt: float) -> Sample:
        assert self.proc is not None
        rss, hwm = memory_mb(self.proc.popen.pid)
        metrics = scrape(self.metrics_port)
        done, gen.done = gen.done, []
        lat = [d / 1e6 for _, d in done]
        refused, gen.refused = gen.refused, 0
        gc_passes = {g: metrics.get(f"python_gc_collections_total{{generation={g}}}", 0.0)
                     for g in ("0", "1", "2")}
        return Sample(t, rss, hwm, metrics.get("machiavelox_shard_tables{}", -1.0),
                      gen.created, gen.ended, len(lat), pct(lat, 50), pct(lat, 99), refused,
                      100.0 * ticks / CLK_TCK / max(dt, 1e-9), gc_passes,
                      last_probe(self.probe_file))

    def show(self, s: Sample) -> None:
        gc_passes = "/".join(f"{s.gc[g]:.0f}" for g in ("0", "1", "2"))
        print(f"  {s.t:6.0f} {s.rss_mb:8.1f} {s.hwm_mb:8.1f} {s.in_play:6.0f} {s.created:7d} "
              f"{s.ended:7d} {s.answered:7d} {s.p50:7.2f} {s.p99:7.2f} {s.refused:5d} "
              f"{s.cpu:5.0f}%  {gc_passes}", flush=True)
        if s.probe:
            shown = {k: s.probe[k] for k in ("gc.frozen", "gc.tracked", "blocks", *SHOWN)
                     if k in s.probe}
            print("         probe: " + ", ".join(f"{k} {v}" for k, v in shown.items()),
                  flush=True)

    async def run(self) -> None:
        args = self.args
        self.proc = start("soak-shard", "table", self.env(), self.tmp)
        pid = self.proc.popen.pid
        gen = Lifecycle("soak", self.proc.address, args.life_s)
        try:
            await gen.open()
            await gen.grow(args.tables, stagger=True)
            gen.recording = True
            loop = asyncio.get_running_loop()
            began = last = purged = loop.time()
            ticks = cpu_ticks(pid)
            self.samples.append(self.sample(gen, 0.0, 0, 1.0))
            self.show(self.samples[-1])
            end = began + args.minutes * 60
            while (now := loop.time()) < end:
                await gen.replace()
                if now - purged >= PURGE_S:
                    gen.purge()
                    purged = now
                if now - last >= args.every_s:
                    spent = cpu_ticks(pid)
                    spent, ticks = spent - ticks, spent
                    self.samples.append(self.sample(gen, now - began, spent, now - last))
                    self.show(self.samples[-1])
                    last = now
                await asyncio.sleep(0.1)
        finally:
            await gen.close()

    def close(self) -> list[str]:
        """Stop the shard, drop the store; the log lines that show trouble."""
        problems: list[str] = []
        if self.proc is not None:
            with contextlib.suppress(AssertionError):
                self.proc.stop()
            problems = log_problems(self.proc.log_path.read_text(errors="replace"))
        self.journals.close()
        return problems


def growth(samples: list[Sample]) -> str:
    """RSS growth after the warm-up, per minute and per thousand tables ended."""
    fit = [s for s in samples if s.t >= WARMUP_S]
    if len(fit) < 3:
        return "too short to fit a growth (3 lines after the first minute are needed)"
    slope, _ = statistics.linear_regression([s.t / 60 for s in fit], [s.rss_mb for s in fit])
    ended = fit[-1].ended - fit[0].ended
    rise = fit[-1].rss_mb - fit[0].rss_mb
    per_k = rise / ended * 1000 if ended else float("nan")
    flat = abs(rise) < max(2.0, 0.02 * fit[0].rss_mb)
    return (f"RSS {fit[0].rss_mb:.1f} -> {fit[-1].rss_mb:.1f} MB from {fit[0].t:.0f} s to "
            f"{fit[-1].t:.0f} s: {slope:+.2f} MB/min (least squares), {per_k:+.2f} MB per "
            f"1,000 tables ended ({ended} ended meanwhile): "
            + ("flat" if flat else "GROWING"))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--journal", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--tables", type=int, default=300, help="tables in play at once")
    parser.add_argument("--life-s", type=float, default=15.0, help="a table's life, about")
    parser.add_argument("--grace-s", type=float, default=5.0,
                        help="MACHIAVELOX_TABLE_RESUME_GRACE_S of the shard")
    parser.add_argument("--every-s", type=float, default=30.0, help="seconds between lines")
    parser.add_argument("--probe", action="store_true",
                        help="read the shard's container sizes and collector from inside")
    parser.add_argument("--unfrozen", action="store_true",
                        help="with --probe: gc.freeze does nothing in the shard")
    args = parser.parse_args(argv)
    if args.unfrozen and not args.probe:
        parser.error("--unfrozen goes with --probe")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    print(f"soak bench: one shard (journal {args.journal}, resume grace {args.grace_s:g} s), "
          f"{args.tables} tables in play, each ~{args.life_s:g} s long then ended by two "
          f"abandons: ~{args.tables / args.life_s:.0f} tables start and end per second, for "
          f"{args.minutes:g} min" + (" (PROBED" + (", gc.freeze off" if args.unfrozen else "")
                                     + ")" if args.probe else ""), flush=True)
    print("  (s = into the soak; RSS, peak = VmRSS, VmHWM MB; inplay = machiavelox_shard_tables;"
          " created, ended = tables so far; answered, p50, p99 = round trips of the interval, "
          "ms; refu = refusals; cpu = the shard's; gc = collector passes of generations 0/1/2 "
          "so far)")
    print("       s      RSS     peak inplay created   ended answered    p50     p99  refu   "
          "cpu  gc", flush=True)
    with tempfile.TemporaryDirectory(prefix="soak-bench-") as tmp_name:
        soak = Soak(args, Path(tmp_name))
        try:
            asyncio.run(soak.run())
        finally:
            problems = soak.close()
    print("summary")
    print(f"  {growth(soak.samples)}")
    if soak.samples:
        last = soak.samples[-1]
        print(f"  {last.created} tables created, {last.ended} ended; the shard's peak RSS "
              f"{max(s.hwm_mb for s in soak.samples):.1f} MB")
    print(f"  {len(problems)} log lines of the shard show trouble"
          + "".join(f"\n    {line[:300]}" for line in problems[:10]))
    print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
