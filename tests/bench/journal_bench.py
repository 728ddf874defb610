"""What a durable table journal costs per group commit, per candidate store (issue 12; a script
that prints figures, not a test).

    .venv/bin/python tests/bench/journal_bench.py [--appends N] [--max-s S] [--quick]
        [--only sqlite,pg,redis] [--dir DIR] [--pg-url URL]

One append is one group commit: a batch of N journal records (N = 1, 10, 100; a record is a
table id, a per-table index and a 100-300 byte payload, over 64 tables) written durably in one
transaction, as a shard would write one frame's inputs before answering them. Per configuration:
a warm-up, then up to --appends appends (2,000; --quick 200) back to back, one at a time, awaited
from an asyncio loop, for at most --max-s seconds. Printed per configuration:
  p50 / p99 / mean ms  the latency of one append: what the journal adds to an action's answer
  records/s            records written per second, appends back to back (N / mean latency)
  client us            this process's CPU time per append (time.process_time, all threads)
  server us            the server's CPU time per append (/proc/<pid>/stat of the redis-server, or
                       of the connection's PostgreSQL backend; WAL writer, checkpointer not in it)
Candidates (what each setting survives is printed under its table):
- SQLite, WAL mode, a file in a temp dir: synchronous=FULL and NORMAL, executemany in one
  transaction, run through asyncio.to_thread (as a shard would) and in the loop's thread.
- The machine's PostgreSQL (database `test`, a table of its own, dropped at the end):
  synchronous_commit on and off; executemany in a transaction, or one INSERT of unnest() arrays.
- Redis Streams on redis-servers started here (AOF, appendfsync always and everysec, stopped at
  the end) and on the machine's Redis (no persistence: the floor; its keys deleted at the end):
  `multi`, one XADD per record (a stream per table) in one MULTI/EXEC; `packed`, one XADD per
  batch (a stream per shard, an entry per frame). Single node: no replica, no WAIT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis.asyncio as aioredis
from psycopg import sql

Record = tuple[int, int, bytes]  # table id, index in that table's journal, payload
Batch = list[Record]
Append = Callable[[Batch], Awaitable[None]]

SIZES = (1, 10, 100)
TABLES = 64
CLK_TCK = os.sysconf("SC_CLK_TCK")
PG_URLS = ("postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test",
           "postgresql://127.0.0.1:5432/test")
MACHINE_REDIS = ("127.0.0.1", 6379)


class Records:
    """Journal records in order: tables in turn, each with its own index from 0."""

    def __init__(self) -> None:
        rng = random.Random(12)
        self.payloads = [rng.randbytes(rng.randint(100, 300)) for _ in range(256)]
        self.index = [0] * TABLES
        self.count = 0

    def batch(self, n: int) -> Batch:
        out: Batch = []
        for _ in range(n):
            table = self.count % TABLES
            out.append((table, self.index[table], self.payloads[self.count % 256]))
            self.index[table] += 1
            self.count += 1
        return out


@dataclass(frozen=True)
class Figures:
    label: str
    n: int
    appends: int
    p50_ms: float
    p99_ms: float
    mean_ms: float
    records_s: float
    client_us: float
    server_us: float | None


def cpu_ticks(pid: int | None) -> int:
    """utime + stime of a process, in clock ticks (0: none or unreadable)."""
    if pid is None:
        return 0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def pct(ordered: list[int], q: float) -> float:
    """Nearest-rank percentile of sorted nanoseconds, in ms."""
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * int(q) // 100) - 1))] / 1e6


async def measure(label: str, n: int, append: Append, records: Records,
                  args: argparse.Namespace, server_pid: int | None = None) -> Figures:
    for batch in [records.batch(n) for _ in range(max(10, args.appends // 20))]:  # warm-up
        await append(batch)
    batches = [records.batch(n) for _ in range(args.appends)]  # built outside the timed loop
    latencies: list[int] = []
    deadline = time.perf_counter_ns() + int(args.max_s * 1e9)
    cpu0, server0, t0 = time.process_time(), cpu_ticks(server_pid), time.perf_counter_ns()
    for batch in batches:
        start = time.perf_counter_ns()
        await append(batch)
        end = time.perf_counter_ns()
        latencies.append(end - start)
        if end >= deadline:
            break
    wall_s = (time.perf_counter_ns() - t0) / 1e9
    client_s, server_ticks = time.process_time() - cpu0, cpu_ticks(server_pid) - server0
    done = len(latencies)
    latencies.sort()
    return Figures(label, n, done, pct(latencies, 50), pct(latencies, 99),
                   sum(latencies) / done / 1e6, n * done / wall_s, 1e6 * client_s / done,
                   None if server_pid is None else 1e6 * server_ticks / CLK_TCK / done)


def show(title: str, rows: list[Figures], notes: list[str]) -> None:
    print(f"\n== {title}")
    print(f"{'configuration':<26}{'N':>4}{'appends':>8}{'p50 ms':>8}{'p99 ms':>8}{'mean ms':>9}"
          f"{'records/s':>11}{'client us':>10}{'server us':>10}")
    for r in rows:
        server = "-" if r.server_us is None else f"{r.server_us:.0f}"
        print(f"{r.label:<26}{r.n:>4}{r.appends:>8}{r.p50_ms:>8.3f}{r.p99_ms:>8.3f}"
              f"{r.mean_ms:>9.3f}{r.records_s:>11.0f}{r.client_us:>10.0f}{server:>10}")
    for note in notes:
        print(f"  {note}")
    sys.stdout.flush()


# ================================================================================== SQLite
def sqlite_write(conn: sqlite3.Connection, batch: Batch) -> None:
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO journal VALUES (?, ?, ?)", batch)
    conn.execute("COMMIT")


async def bench_sqlite(args: argparse.Namespace, workdir: Path) -> list[Figures]:
    rows: list[Figures] = []
    for sync, mode in itertools.product(("FULL", "NORMAL"), ("to_thread", "in-thread")):
        path = workdir / f"journal-{sync}-{mode}.sqlite3"
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={sync}")
            conn.execute("CREATE TABLE journal (table_id INTEGER, idx INTEGER, payload BLOB "
                         "NOT NULL, PRIMARY KEY (table_id, idx)) WITHOUT ROWID")

            async def append(batch: Batch, conn: sqlite3.Connection = conn,
                             hop: bool = mode == "to_thread") -> None:
                if hop:
                    await asyncio.to_thread(sqlite_write, conn, batch)
                else:
                    sqlite_write(conn, batch)

            records = Records()
            rows += [await measure(f"sqlite {sync} {mode}", n, append, records, args)
                     for n in SIZES]
        finally:
            conn.close()
    show(f"SQLite {sqlite3.sqlite_version} WAL, file in {workdir}", rows, [
        "synchronous=FULL: the WAL is fsynced at every commit: an acknowledged batch survives a "
        "process crash, an OS crash and a power loss (if the disk honours flushes); not the "
        "loss of the disk or node.",
        "synchronous=NORMAL: the WAL is fsynced only at checkpoints: survives a process crash "
        "(the WAL is in the page cache); an OS crash or power loss can roll back the latest "
        "commits (the file stays consistent).",
        "in-thread blocks the event loop for the whole commit (fsync included); to_thread adds "
        "the hop to the default executor and back."])
    return rows


# ============================================================================== PostgreSQL
async def bench_pg(args: argparse.Namespace) -> list[Figures]:
    conn: psycopg.AsyncConnection[Any] | None = None
    for url in (args.pg_url,) if args.pg_url else PG_URLS:  # as tests/services/scoring does
        with contextlib.suppress(psycopg.OperationalError):
            conn = conn or await psycopg.AsyncConnection.connect(url, autocommit=True,
                                                                 connect_timeout=3)
    if conn is None:
        print("\n== PostgreSQL: not reachable, skipped")
        return []
    table = sql.Identifier(f"journal_bench_{secrets.token_hex(6)}")
    rows: list[Figures] = []
    async with conn:
        await conn.execute(sql.SQL("CREATE TABLE {} (table_id bigint, idx bigint, payload bytea "
                                   "NOT NULL, PRIMARY KEY (table_id, idx))").format(table))
        try:
            pid = int(conn.info.backend_pid)
            info = await (await conn.execute(
                "SELECT version(), current_setting('wal_writer_delay'), "
                "current_setting('wal_sync_method'), current_setting('fsync')")).fetchone()
            assert info is not None
            title = (f"PostgreSQL {str(info[0]).split(' on ')[0]} at {conn.info.host}:"
                     f"{conn.info.port} (user {conn.info.user}; fsync={info[3]}, "
                     f"wal_sync_method={info[2]})")
            insert = sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table)
            unnest = sql.SQL("INSERT INTO {} SELECT * FROM unnest(%s::bigint[], %s::bigint[], "
                             "%s::bytea[])").format(table)

            async def many(batch: Batch) -> None:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(insert, batch)

            async def arrays(batch: Batch) -> None:  # one statement: its own transaction
                await conn.execute(unnest, ([r[0] for r in batch], [r[1] for r in batch],
                                            [r[2] for r in batch]))

            records = Records()
            for sync in ("on", "off"):
                await conn.execute(sql.SQL("SET synchronous_commit = {}").format(
                    sql.Literal(sync)))
                rows += [await measure(f"pg sync={sync} {name}", n, append, records, args, pid)
                         for name, append in (("executemany", many), ("unnest", arrays))
                         for n in SIZES]
        finally:
            await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
    show(title, rows, [
        "synchronous_commit=on: COMMIT answers after the WAL is flushed on the server: survives "
        "a crash of the shard, of PostgreSQL, of the server's OS, a power loss; not the loss "
        "of the server's disk (no synchronous standby here).",
        "synchronous_commit=off: COMMIT answers before the WAL flush: a PostgreSQL crash, OS "
        f"crash or power loss loses the commits of the last 3 x wal_writer_delay ({info[1]}) "
        "at most, consistently (no corruption); a shard crash loses nothing acknowledged."])
    return rows


# =================================================================================== Redis
@contextlib.asynccontextmanager
async def redis_server(workdir: Path, fsync: str) -> AsyncIterator[tuple[int, int]]:
    """A redis-server of our own with an AOF (`appendfsync` = `fsync`): (port, pid)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port, data = int(s.getsockname()[1]), workdir / f"redis-{fsync}"
    data.mkdir()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
         "--appendonly", "yes", "--appendfsync", fsync, "--save", "", "--daemonize", "no",
         "--logfile", str(data / "redis.log")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = aioredis.Redis(host="127.0.0.1", port=port)
        for _ in range(200):  # 10 s at most
            if proc.poll() is not None:
                raise RuntimeError(f"redis-server exited {proc.returncode}, see {data}")
            with contextlib.suppress(OSError, aioredis.ConnectionError):
                if await client.ping():
                    break
            await asyncio.sleep(0.05)
        await client.aclose()
        yield port, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def redis_rows(label: str, port: int, pid: int | None,
                     args: argparse.Namespace) -> list[Figures]:
    client = aioredis.Redis(host=MACHINE_REDIS[0], port=port)
    prefix = f"journal-bench:{secrets.token_hex(6)}"
    try:
        if pid is None:
            pid = int((await client.info("server"))["process_id"])

        async def multi(batch: Batch) -> None:  # a stream per table
            async with client.pipeline(transaction=True) as pipe:
                for table, index, payload in batch:
                    pipe.xadd(f"{prefix}:{table}", {"i": index, "p": payload})
                await pipe.execute()

        async def packed(batch: Batch) -> None:  # the shard's stream, an entry per frame
            await client.xadd(prefix, {f"{t}:{i}": p for t, i, p in batch})

        records = Records()
        return [await measure(f"redis {label} {name}", n, append, records, args, pid)
                for name, append in (("multi", multi), ("packed", packed)) for n in SIZES]
    finally:
        await client.delete(prefix, *(f"{prefix}:{t}" for t in range(TABLES)))
        await client.aclose()


async def bench_redis(args: argparse.Namespace, workdir: Path) -> list[Figures]:
    rows: list[Figures] = []
    if shutil.which("redis-server") is None:
        print("\n== Redis: no redis-server binary, own servers skipped")
    else:
        for fsync in ("always", "everysec"):
            async with redis_server(workdir, fsync) as (port, pid):
                rows += await redis_rows(fsync, port, pid, args)
    try:
        rows += await redis_rows("machine", MACHINE_REDIS[1], None, args)
    except (OSError, aioredis.ConnectionError) as exc:
        print(f"(the machine's Redis: {exc})")
    version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True,
                             check=False).stdout.split()[2:3]
    show(f"Redis Streams {' '.join(version)} (multi: XADD per record in a MULTI/EXEC; packed: "
         "one XADD per batch; single node, no WAIT)", rows, [
        "appendfsync=always: the AOF is fsynced before the replies of each event-loop turn: "
        "survives a redis-server crash, an OS crash and a power loss; not the loss of the "
        "node or disk (no replica).",
        "appendfsync=everysec: the AOF is written before the reply, fsynced once a second in "
        "the background: survives a redis-server crash (kill -9); an OS crash or power loss "
        "loses up to ~1 s of acknowledged appends (~2 s if the disk stalls).",
        "machine: the machine's Redis, no persistence: any restart of Redis loses everything."])
    return rows


# ================================================================================== summary
def summary(rows: list[Figures]) -> None:
    print("\n== Summary: p50 / p99 / mean ms added per group commit, ranked (N = 10 and 100)")
    for n in (10, 100):
        print(f"N={n}:")
        for r in sorted((r for r in rows if r.n == n), key=lambda r: r.p50_ms):
            server = "" if r.server_us is None else f", server {r.server_us:.0f} us"
            print(f"  {r.p50_ms:7.3f} {r.p99_ms:7.3f} {r.mean_ms:7.3f}  {r.label:<26}"
                  f"client {r.client_us:.0f} us{server}")


async def run(args: argparse.Namespace) -> int:
    only = set(args.only.split(","))
    print(f"journal bench: {args.appends} appends (<= {args.max_s:g} s) per configuration, "
          f"N in {SIZES}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    workdir = Path(tempfile.mkdtemp(prefix="journal-bench-", dir=args.dir))
    rows: list[Figures] = []
    try:
        if "sqlite" in only:
            rows += await bench_sqlite(args, workdir)
        if "pg" in only:
            rows += await bench_pg(args)
        if "redis" in only:
            rows += await bench_redis(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    summary(rows)
    print(f"(load average at the end {os.getloadavg()[0]:.2f}: other processes share the cores)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000, help="appends per configuration")
    parser.add_argument("--max-s", type=float, default=10.0, help="time bound per configuration")
    parser.add_argument("--quick", action="store_true", help="200 appends, 2 s bound")
    parser.add_argument("--only", default="sqlite,pg,redis", help="candidates to run")
    parser.add_argument("--dir", default=None, help="where the temp dir goes (a disk, not tmpfs)")
    parser.add_argument("--pg-url", default=os.environ.get("MACHIAVELOX_TEST_PG_URL"))
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a SIGTERM still stops servers
    if args.quick:
        args.appends, args.max_s = min(args.appends, 200), min(args.max_s, 2.0)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
