"""What a durable table journal costs per group commit, per candidate store (issue 12; a script
that prints figures, not a test).

    .venv/bin/python tests/bench/journal_bench.py [--appends N] [--max-s S] [--quick]
        [--only sqlite,pg,redis] [--dir DIR] [--pg-url URL]

An append is one group commit: N journal records (N = 1, 10, 100; a record is a table id, a
per-table index and a 100-300 byte payload, over 64 tables) written durably at once, as a shard
would write one frame's inputs before answering them; after a warm-up, --appends of them (2,000;
--quick 200) one at a time, back to back, from an asyncio loop, for at most --max-s seconds.
  p50 / p99 / mean ms  latency of one append: what the journal adds to an action's answer
  records/s            records written per second with appends back to back (N / mean)
  client us            this process's CPU time per append (time.process_time, all threads)
  server us            the server's CPU per append (/proc/<pid>/stat: the redis-server, or the
                       connection's PostgreSQL backend, without the WAL writer and checkpointer)
  survives             the worst failure an acknowledged append survives (see under each table)
Candidates. SQLite, WAL, a file in a temp dir, synchronous=FULL and NORMAL, via asyncio.to_thread
(as a shard would) and in the loop's thread. The machine's PostgreSQL (database `test`, tables
of its own, dropped at the end), synchronous_commit on and off: executemany in a transaction, or
one INSERT of unnest() arrays. Redis Streams on redis-servers started here (AOF, appendfsync
always / everysec; stopped at the end) and on the machine's Redis (no persistence, the floor;
its keys deleted at the end): `multi`, an XADD per record (a stream per table) in one MULTI/EXEC.
Everywhere, `packed`: one row / stream entry per batch, the records framed in one blob (pack()).
Single node: no replica, no WAIT.
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
import struct
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_procs import CLK_TCK, cpu_ticks

Record = tuple[int, int, bytes]  # table id, index in that table's journal, payload
Batch = list[Record]
Append = Callable[[Batch], Awaitable[None]]

SIZES = (1, 10, 100)
TABLES = 64
PG_URLS = ("postgresql://root@127.0.0.1:5432/test", "postgresql://postgres@127.0.0.1:5432/test",
           "postgresql://127.0.0.1:5432/test")
MACHINE_REDIS = 6379
SURVIVES = {"sqlite FULL": "power loss", "sqlite NORMAL": "shard crash", "pg sync=on": "power loss",
            "pg sync=off": "shard crash", "redis always": "power loss",
            "redis everysec": "store crash", "redis machine": "shard crash"}


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

    def line(self) -> str:
        server = "-" if self.server_us is None else f"{self.server_us:.0f}"
        survives = next(v for k, v in SURVIVES.items() if self.label.startswith(k))
        return (f"{self.label:<31}{self.n:>4}{self.appends:>8}{self.p50_ms:>8.3f}"
                f"{self.p99_ms:>8.3f}{self.mean_ms:>9.3f}{self.records_s:>10.0f}"
                f"{self.client_us:>10.0f}{server:>10}  {survives}")


def pack(batch: Batch) -> bytes:
    """A frame's records in one blob: (table id, index, length) then the payload, each."""
    return b"".join(struct.pack("<IQI", t, i, len(p)) + p for t, i, p in batch)


def ticks_of(pid: int | None) -> int:
    """utime + stime of the server's process, in clock ticks (0: none or unreadable)."""
    return 0 if pid is None else cpu_ticks(pid)


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
    cpu0, server0, t0 = time.process_time(), ticks_of(server_pid), time.perf_counter_ns()
    for batch in batches:
        start = time.perf_counter_ns()
        await append(batch)
        end = time.perf_counter_ns()
        latencies.append(end - start)
        if end >= deadline:
            break
    wall_s = (time.perf_counter_ns() - t0) / 1e9
    client_s, server_ticks = time.process_time() - cpu0, ticks_of(server_pid) - server0
    done = len(latencies)
    latencies.sort()
    return Figures(label, n, done, pct(latencies, 50), pct(latencies, 99),
                   sum(latencies) / done / 1e6, n * done / wall_s, 1e6 * client_s / done,
                   None if server_pid is None else 1e6 * server_ticks / CLK_TCK / done)


def show(title: str, rows: list[Figures], notes: list[str]) -> None:
    print(f"\n== {title}\n{'configuration':<31}{'N':>4}{'appends':>8}{'p50 ms':>8}{'p99 ms':>8}"
          f"{'mean ms':>9}{'records/s':>10}{'client us':>10}{'server us':>10}  survives")
    print("\n".join([r.line() for r in rows] + [f"  {note}" for note in notes]), flush=True)


# ================================================================================== SQLite
def sqlite_write(conn: sqlite3.Connection, batch: Batch, packed: bool) -> None:
    if packed:  # one statement: its own transaction
        conn.execute("INSERT INTO frames (records) VALUES (?)", (pack(batch),))
        return
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO journal VALUES (?, ?, ?)", batch)
    conn.execute("COMMIT")


async def bench_sqlite(args: argparse.Namespace, workdir: Path) -> list[Figures]:
    rows: list[Figures] = []
    modes = ("to_thread", "in-thread", "to_thread packed")
    for sync, mode in itertools.product(("FULL", "NORMAL"), modes):
        path = workdir / f"journal-{sync}-{modes.index(mode)}.sqlite3"
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={sync}")
            conn.execute("CREATE TABLE journal (table_id INTEGER, idx INTEGER, payload BLOB "
                         "NOT NULL, PRIMARY KEY (table_id, idx)) WITHOUT ROWID")
            conn.execute("CREATE TABLE frames (frame INTEGER PRIMARY KEY, records BLOB NOT NULL)")

            async def append(batch: Batch, conn: sqlite3.Connection = conn,
                             hop: bool = mode != "in-thread", packed: bool = "packed" in mode
                             ) -> None:
                if hop:
                    await asyncio.to_thread(sqlite_write, conn, batch, packed)
                else:
                    sqlite_write(conn, batch, packed)

            records = Records()
            rows += [await measure(f"sqlite {sync} {mode}", n, append, records, args)
                     for n in SIZES]
        finally:
            conn.close()
    show(f"SQLite {sqlite3.sqlite_version}, WAL, file in {workdir}", rows, [
        "FULL: the WAL is fsynced at every commit: survives a process crash, an OS crash, a power "
        "loss (if the disk honours flushes); not the loss of the disk or node.",
        "NORMAL: the WAL is fsynced at checkpoints only: survives a crash of the (shard) process; "
        "an OS crash or power loss can roll back the latest commits, consistently.",
        "in-thread blocks the event loop for the whole commit; to_thread adds the executor hop."])
    return rows


# ============================================================================== PostgreSQL
async def bench_pg(args: argparse.Namespace) -> list[Figures]:
    conn: psycopg.AsyncConnection[Any] | None = None
    for url in (args.pg_url,) if args.pg_url else PG_URLS:  # as tests/services/scoring does
        with contextlib.suppress(psycopg.OperationalError):
            conn = await psycopg.AsyncConnection.connect(url, autocommit=True, connect_timeout=3)
            break
    if conn is None:
        print("\n== PostgreSQL: not reachable, skipped")
        return []
    name = f"journal_bench_{secrets.token_hex(6)}"
    table, frames = sql.Identifier(name), sql.Identifier(f"{name}_frames")
    rows: list[Figures] = []
    async with conn:
        try:
            await conn.execute(sql.SQL("CREATE TABLE {} (table_id bigint, idx bigint, payload "
                                       "bytea NOT NULL, PRIMARY KEY (table_id, idx))"
                                       ).format(table))
            await conn.execute(sql.SQL("CREATE TABLE {} (frame bigserial PRIMARY KEY, records "
                                       "bytea NOT NULL)").format(frames))
            pid = int(conn.info.backend_pid)
            info = await (await conn.execute(
                "SELECT current_setting('server_version'), current_setting('wal_writer_delay'), "
                "current_setting('wal_sync_method'), current_setting('fsync')")).fetchone()
            assert info is not None
            title = (f"PostgreSQL {info[0]} at {conn.info.host}:{conn.info.port} as "
                     f"{conn.info.user} (fsync={info[3]}, wal_sync_method={info[2]})")
            insert = sql.SQL("INSERT INTO {} VALUES (%s, %s, %s)").format(table)
            unnest = sql.SQL("INSERT INTO {} SELECT * FROM unnest(%s::bigint[], %s::bigint[], "
                             "%s::bytea[])").format(table)
            frame_row = sql.SQL("INSERT INTO {} (records) VALUES (%s)").format(frames)

            async def many(batch: Batch) -> None:
                async with conn.transaction(), conn.cursor() as cur:
                    await cur.executemany(insert, batch)

            async def arrays(batch: Batch) -> None:  # one statement: its own transaction
                await conn.execute(unnest, ([r[0] for r in batch], [r[1] for r in batch],
                                            [r[2] for r in batch]))

            async def one_row(batch: Batch) -> None:
                await conn.execute(frame_row, (pack(batch),))

            records = Records()
            for sync in ("on", "off"):
                await conn.execute(sql.SQL("SET synchronous_commit = {}").format(
                    sql.Literal(sync)))
                rows += [await measure(f"pg sync={sync} {name}", n, append, records, args, pid)
                         for name, append in (("executemany", many), ("unnest", arrays),
                                              ("packed", one_row))
                         for n in SIZES]
        finally:
            await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(table, frames))
    show(title, rows, [
        "on: COMMIT answers once the WAL is flushed: survives a crash of the shard, of PostgreSQL, "
        "of its OS, a power loss; not the loss of its disk (no synchronous standby here).",
        "off: COMMIT answers before the flush: a crash of PostgreSQL or its OS, or a power loss, "
        f"loses at most the last 3 x wal_writer_delay ({info[1]}) of commits, consistently."])
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
    client = aioredis.Redis(host="127.0.0.1", port=port)
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
            await client.xadd(prefix, {"r": pack(batch)})

        records = Records()
        return [await measure(f"redis {label} {name}", n, append, records, args, pid)
                for name, append in (("multi", multi), ("packed", packed)) for n in SIZES]
    finally:
        await client.delete(prefix, *(f"{prefix}:{t}" for t in range(TABLES)))
        await client.aclose()


async def bench_redis(args: argparse.Namespace, workdir: Path) -> list[Figures]:
    rows: list[Figures] = []
    for fsync in ("always", "everysec"):
        async with redis_server(workdir, fsync) as (port, pid):
            rows += await redis_rows(fsync, port, pid, args)
    try:
        rows += await redis_rows("machine", MACHINE_REDIS, None, args)
    except (OSError, aioredis.ConnectionError) as exc:
        print(f"(the machine's Redis: {exc})")
    show("Redis Streams, single node, no WAIT", rows, [
        "always: the AOF is fsynced before the replies of each event-loop turn: survives a crash "
        "of redis-server, of its OS, a power loss; not the loss of its node or disk (no replica).",
        "everysec: the AOF is written before the reply, fsynced each second: survives kill -9 of "
        "redis-server; an OS crash or power loss loses up to ~1 s (~2 s if the disk stalls).",
        "machine: no persistence: a restart of Redis loses everything (its server us counts the "
        "other clients' commands too)."])
    return rows


# ================================================================================== summary
def summary(rows: list[Figures]) -> None:
    print("\n== Summary: N = 10 and 100 by p50 (columns as above; survives, best first: power "
          "loss, store crash = a crash of the store's process, shard crash = the client's only)")
    for n in (10, 100):
        print("\n".join(r.line() for r in sorted(rows, key=lambda r: r.p50_ms) if r.n == n))


async def run(args: argparse.Namespace) -> int:
    only = set(args.only.split(","))
    print(f"journal bench: {args.appends} appends (<= {args.max_s:g} s) per configuration, "
          f"N in {SIZES}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    workdir = Path(tempfile.mkdtemp(prefix="journal-bench-", dir=args.dir))
    rows: list[Figures] = []
    try:
        rows += await bench_sqlite(args, workdir) if "sqlite" in only else []
        rows += await bench_pg(args) if "pg" in only else []
        rows += await bench_redis(args, workdir) if "redis" in only else []
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
