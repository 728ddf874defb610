"""How long a crashed shard takes to serve again: its tables rebuilt from the journal (issue 12;
a script that prints figures, not a test).

    .venv/bin/python tests/bench/recovery_bench.py [--journal sqlite,postgres] [--tables 500]
        [--play-s 5] [--rounds 1]

Per journal store (`--journal`: sqlite, the embedded default, and/or postgres, the deployed
store: a fresh schema on the machine's server, dropped at the end; journals.py) and
per table count (`--tables`, a comma list: 500 by default), in each of `--rounds` rounds, on a
real `machiavelox table` process with mutual TLS as deployed:

1. The shard starts on an empty journal: the time from spawning it to its gRPC health service
   answering SERVING (the floor: interpreter, imports, an empty recovery, the server).
2. N tables are created (CreateTable, as matchmaking does) and played through ONE Connect stream
   as a gateway does (loadgens.py's `ShardLoad`): the three seats subscribe and draw a card
   each, then every seat acts about once a second (Declare and Undeclare of its card in turn)
   for `--play-s` seconds; then the bench waits for every action's answer (an answered action
   is journaled: the shard answers only what is stored).
3. SIGKILL. The journal's size then (frames and payload bytes, as the store holds them).
4. The same process started again (`Proc.respawn`: same port, settings, journal): the time
   from spawning it to SERVING, and the shard's own log line "recovered %d tables from %d
   journal frames in %.2f s" (its recovery alone: load, replay, `interrupted` events, the
   checkpoint). Then GetLoad must count the N tables in play again. Target: < 5 s at 500.

The shard is stopped (SIGTERM) at the end of each round; lines of its log that show trouble
(ERROR records, tracebacks: `log_problems`) are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))
import psycopg  # noqa: E402
from bench_common import SHARD, services_env  # noqa: E402
from journals import JOURNAL, Journals  # noqa: E402
from loadgens import ShardLoad  # noqa: E402

from machiavelox._gen.v1 import table_pb2, table_pb2_grpc  # noqa: E402
from machiavelox.local.processes import Proc, aio_channel, log_problems, start  # noqa: E402
from tests.support.health import wait_serving  # noqa: E402
from tests.support.internal import caller_of  # noqa: E402

RECOVERED = re.compile(r"recovered (\d+) tables from (\d+) journal frames in ([\d.]+) s")
TARGET_S = 5.0  # at 500 tables (issue 12)
SERVICE = "machiavelox.v1.TableAuthorityService"
# Health is polled every 50 ms on one channel; its reconnection backoff is kept as short, so a
# refused connection (the port opens only after the recovery) costs no second of backoff.
FAST_RECONNECT = [("grpc.initial_reconnect_backoff_ms", 50),
                  ("grpc.min_reconnect_backoff_ms", 50), ("grpc.max_reconnect_backoff_ms", 100)]
SERVING_LIMIT_S = 120.0  # the longest a start may take before the bench gives up
ANSWERS_LIMIT_S = 30.0  # the longest the bench waits for the last actions' answers


@dataclass
class Round:
    store: str
    tables: int
    empty_start_s: float = 0.0  # spawn -> SERVING on an empty journal
    setup_s: float = 0.0
    actions: int = 0  # answered before the kill
    unanswered: int = 0  # still pending at the kill (should be 0)
    frames: int = 0  # stored at the kill
    stored_bytes: int = 0
    restart_s: float = 0.0  # spawn -> SERVING after the kill
    recovered: int = -1  # from the shard's log line
    log_frames: int = -1
    log_s: float = float("nan")
    in_play: int = -1  # GetLoad after the restart
    problems: int = 0

    @property
    def verdict(self) -> str:
        if self.recovered != self.tables or self.in_play != self.tables:
            return "TABLES MISSING"
        if self.tables > 500:
            return "(target is at 500)"
        return "met" if self.restart_s < TARGET_S else "NOT met"


async def serving_s(proc: Proc, spawned: float) -> float:
    """Seconds from `spawned` (monotonic, just before the spawn) to health SERVING."""
    async with aio_channel(proc, "gateway", options=FAST_RECONNECT) as channel:
        await wait_serving(channel, "", proc.popen, proc.name,
                           lambda: proc.log_path.read_text()[-3000:], SERVING_LIMIT_S)
    return time.monotonic() - spawned


def stored(proc: Proc) -> tuple[int, int]:
    """(frames, payload bytes) in the shard's journal store, read beside it."""
    url = proc.env.get(JOURNAL, "")
    query = "SELECT count(*), coalesce(sum(length(payload)), 0) FROM table_journal"
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(query).fetchone()
    else:  # sqlite, in the shard's data directory
        [path] = Path(proc.spawn_env["MACHIAVELOX_DATA_DIR"]).glob("*.sqlite3")
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute(query).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


async def in_play(proc: Proc) -> int:
    async with aio_channel(proc, caller_of(SERVICE, "GetLoad")) as channel:
        load = await table_pb2_grpc.TableAuthorityServiceStub(channel).GetLoad(
            table_pb2.GetLoadRequest(), timeout=10)
    return int(load.tables)


async def play(proc: Proc, name: str, result: Round, play_s: float) -> None:
    """Create and set up the tables, let every seat act for `play_s`, wait for the answers."""
    load = ShardLoad(name, proc.address)
    try:
        await load.open()
        t0 = time.monotonic()
        await load.add(result.tables)
        result.setup_s = time.monotonic() - t0
        load.active = result.tables
        await asyncio.sleep(play_s)
        load.active = 0  # no more actions: the ones sent are answered
        end = time.monotonic() + ANSWERS_LIMIT_S
        while load.outstanding() and time.monotonic() < end:
            await asyncio.sleep(0.1)
        result.unanswered = load.outstanding()
        result.actions = sum(a.n for a in load.actors.values()) - result.unanswered
    finally:
        await load.close()


async def one_round(store: str, tables: int, play_s: float, tmp: Path, index: int) -> Round:
    result = Round(store, tables)
    journals = Journals(store)
    name = f"rec-{store}-{tables}-{index}"
    env = {"MACHIAVELOX_SHARD_ID": SHARD, "MACHIAVELOX_TABLE_CAPACITY": "100000",
           **services_env(), **journals.env()}
    proc: Proc | None = None
    try:
        spawned = time.monotonic()
        proc = start(name, "table", env, tmp, wait=False)
        result.empty_start_s = await serving_s(proc, spawned)
        await play(proc, name, result, play_s)
        proc.popen.kill()
        proc.popen.wait()
        result.frames, result.stored_bytes = stored(proc)
        spawned = time.monotonic()
        assert proc.respawn()
        result.restart_s = await serving_s(proc, spawned)
        said = [m for r in proc.logs() if (m := RECOVERED.search(str(r.get("msg", ""))))]
        if said:
            result.recovered, result.log_frames = int(said[-1][1]), int(said[-1][2])
            result.log_s = float(said[-1][3])
        result.in_play = await in_play(proc)
    finally:
        if proc is not None:
            with contextlib.suppress(AssertionError):
                proc.stop()
            problems = log_problems(proc.log_path.read_text(errors="replace"))
            result.problems = len(problems)
            for line in problems[:10]:
                print(f"    {proc.name} log: {line[:300]}", flush=True)
        journals.close()
    return result


def line(r: Round) -> str:
    return (f"  {r.store:8s} {r.tables:6d} {r.empty_start_s:7.2f} {r.setup_s:6.1f} "
            f"{r.actions:7d} {r.unanswered:4d} {r.frames:7d} {r.stored_bytes / 1e6:7.2f} "
            f"{r.restart_s:8.2f} {r.log_s:7.2f} {r.recovered:6d} {r.log_frames:7d} "
            f"{r.in_play:6d} {r.problems:4d}  {r.verdict}")


HEADER = ("  store    tables  empty  setup  actions unans  frames    MB    restart  recov.  "
          "tables  frames  inplay errs")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--journal", default="sqlite,postgres",
                        help="stores, comma-separated: sqlite, postgres")
    parser.add_argument("--tables", default="500", help="tables per round, e.g. 500,1500")
    parser.add_argument("--play-s", type=float, default=5.0,
                        help="seconds every seat acts (about once a second) before the kill")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args(argv)
    args.stores = [s for s in args.journal.split(",") if s]
    if not set(args.stores) <= {"sqlite", "postgres"}:
        parser.error("--journal: sqlite and/or postgres")
    args.counts = [int(n) for n in args.tables.split(",") if n]
    return args


async def run(args: argparse.Namespace, tmp: Path) -> list[Round]:
    results = []
    for r in range(args.rounds):
        for tables in args.counts:
            for store in args.stores:
                result = await one_round(store, tables, args.play_s, tmp, r)
                results.append(result)
                print(line(result), flush=True)
    return results


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    print(f"recovery bench: one shard process (mTLS), tables played {args.play_s:.0f} s through "
          f"one Connect stream, SIGKILL, started again; {args.rounds} round(s)", flush=True)
    print("  (empty = spawn -> SERVING on an empty journal, s; setup = creating the tables, s; "
          "unans = actions unanswered at the kill; frames, MB = the store at the kill; restart "
          "= spawn -> SERVING after the kill, s; recov. tables frames = the shard's log line; "
          "inplay = GetLoad after; errs = log lines that show trouble)")
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory(prefix="recovery-bench-") as tmp_name:
        results = asyncio.run(run(args, Path(tmp_name)))
    print("summary (medians over rounds)")
    for tables in args.counts:
        for store in args.stores:
            rs = [r for r in results if r.tables == tables and r.store == store]
            restart = statistics.median(r.restart_s for r in rs)
            recovery = statistics.median(r.log_s for r in rs)
            target = (f"target < {TARGET_S:.0f} s: {'met' if restart < TARGET_S else 'NOT met'}"
                      if tables <= 500 else "")
            print(f"  {store:8s} {tables:5d} tables: restart -> SERVING {restart:.2f} s (the "
                  f"shard's recovery {recovery:.2f} s, an empty start "
                  f"{statistics.median(r.empty_start_s for r in rs):.2f} s)  {target}".rstrip())
    print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
