"""The agorà under load: players matched per second and time-to-match (issue 13, Performance).

    .venv/bin/python tests/bench/agora_bench.py [--players 10000] [--rates 1000 2000]
                                               [--replicas 1 2] [--modes paced burst]

Real processes on loopback, mutual TLS between them (as deployed): two table shards (journal
off: the agorà is measured, not the shards' store), one or two `machiavelox matchmaking`
replicas sharing the machine's Redis (MACHIAVELOX_MATCHMAKING_REDIS_URL, a fresh key prefix
deleted after), default settings otherwise (a tick every 200 ms, the window widening 1 point
per waited second). This process is the apps (as the gateway relays them): `--players`
newcomers (all of ordinal 0, so any three fit) each open an Enqueue stream, spread over the
replicas as a Service would, and read it to their Assignment.

- paced: the players arrive at each of `--rates` a second in all (one run each);
  time-to-match is from each one's Enqueue to its Assignment (p50, p99, max).
- burst: every player at once (a call gRPC sheds is made again, as an app would); players
  matched per second = players / (last assignment - first Enqueue).

`--via call link` (both by default, interleaved): each app's Enqueue a call of its own (the
gateway's relay without the agorà link), or a stream of the agorà link (this process then acts
as two gateways per replica, each with the gateway's own `AgoraLinkClient`; matchmaking/link.py).

Every player must be seated exactly once (one table per three players); the CPU seconds of
each process are printed with the figures (this machine has two cores: the apps, the
replicas, the shards and Redis share them).
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import redis

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.gateway.agora_link import AgoraLinkClient
from machiavelox.identity.tokens import HmacTokens
from machiavelox.local.processes import Proc, aio_channel, start

KEY = "bench-key-0123456789abcdef"
REDIS = "redis://127.0.0.1:6379/0"
TICK_MS = 200
CONNECTIONS = 8  # per replica
LINKS = 2  # per replica, with --via link: as two gateways
WIDEN_STEP_S = 1.0  # the window widens by MACHIAVELOX_MATCHMAKING_WIDEN_PER_S each second


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks


def redis_pid() -> int | None:
    try:
        info = redis.Redis.from_url(REDIS).info("server")
        return int(info["process_id"])
    except (redis.RedisError, KeyError, ValueError):
        return None


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


class Cluster:
    def __init__(self, replicas: int, tmp: Path) -> None:
        self.prefix = f"bench-agora-{secrets.token_hex(4)}:"
        self.procs: list[Proc] = []
        shards = {}
        for sid in ("shard-0", "shard-1"):
            shards[sid] = start(sid, "table", {
                "MACHIAVELOX_SHARD_ID": sid, "MACHIAVELOX_TABLE_JOURNAL": "off",
                "MACHIAVELOX_TABLE_CAPACITY": "100000", "MACHIAVELOX_SCORING_ADDRESS": "",
                "MACHIAVELOX_PRESENCE_ADDRESS": "", "MACHIAVELOX_METRICS_PORT": "0",
                "MACHIAVELOX_HEALTH_PORT": "0", "MACHIAVELOX_LOG_LEVEL": "WARNING",
                "MACHIAVELOX_GRACE_S": "1"}, tmp)
            self.procs.append(shards[sid])
        self.shards = list(shards.values())
        self.replicas = [start(f"matchmaking-{i}", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY,
            "MACHIAVELOX_MATCHMAKING_SHARDS": ",".join(f"{s}={p.address}"
                                                       for s, p in shards.items()),
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_REDIS_URL": REDIS,
            "MACHIAVELOX_MATCHMAKING_KEY_PREFIX": self.prefix,
            "MACHIAVELOX_MATCHMAKING_TICK_MS": str(TICK_MS), "MACHIAVELOX_METRICS_PORT": "0",
            "MACHIAVELOX_HEALTH_PORT": "0", "MACHIAVELOX_LOG_LEVEL": "WARNING",
            "MACHIAVELOX_GRACE_S": "1"}, tmp) for i in range(replicas)]
        self.procs += self.replicas

    def cpu(self) -> dict[str, float]:
        out = {p.name: cpu_s(p.popen.pid) for p in self.procs}
        pid = redis_pid()
        if pid is not None:
            out["redis"] = cpu_s(pid)
        out["apps (this process)"] = time.process_time()
        return out

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()
        client = redis.Redis.from_url(REDIS)
        for key in client.scan_iter(match=f"{self.prefix}*", count=1_000):
            client.delete(key)
        client.close()


Via = Callable[[str], AsyncGenerator[matchmaking_pb2.EnqueueResponse, None]]
"""One app's Enqueue (its token): a call, or a stream of a gateway's agorà link."""


def by_call(stub: matchmaking_pb2_grpc.MatchmakingServiceStub) -> Via:
    async def enqueue(token: str) -> AsyncGenerator[matchmaking_pb2.EnqueueResponse, None]:
        call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                            metadata=(("authorization", f"Bearer {token}"),))
        try:
            async for response in call:
                yield response
        finally:
            call.cancel()
    return enqueue


def by_link(link: AgoraLinkClient) -> Via:
    def enqueue(token: str) -> AsyncGenerator[matchmaking_pb2.EnqueueResponse, None]:
        return link.enqueue(matchmaking_pb2.EnqueueRequest(), f"Bearer {token}", "")
    return enqueue


async def one_player(via: Via, token: str, at_s: float, origin: float,
                     done: list[tuple[float, float, str]], shed: list[int]) -> None:
    """One app: Enqueue, read to the Assignment. A call gRPC sheds before matchmaking took it
    (CANCELLED, nothing received: under a burst the server's core cancels calls left waiting
    over a second) is made again, as an app would, and counted; its wait counts from the
    first."""
    delay = origin + at_s - time.perf_counter()
    if delay > 0:
        await asyncio.sleep(delay)
    started = time.perf_counter()
    for attempt in range(20):
        got = 0
        replies = via(token)
        try:
            async for response in replies:
                got += 1
                if response.update.WhichOneof("kind") == "assignment":
                    done.append((started, time.perf_counter(),
                                 response.update.assignment.table_id))
                    return
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED or got or attempt == 19:
                raise
            shed.append(1)
            await asyncio.sleep(0.2)
        finally:
            await replies.aclose()


async def run(cluster: Cluster, players: int, rate: float, link: bool) -> dict[str, Any]:
    tokens = [HmacTokens(KEY.encode()).issue(f"bench-{i:05}")[0] for i in range(players)]
    # (several connections to each replica, as several gateways relay; one HTTP/2 connection
    # opening thousands of streams at once sees some of them CANCELLED by gRPC itself; with
    # the agorà link, as many gateways each with its link)
    channels = [aio_channel(proc, "gateway") for _ in range(LINKS if link else CONNECTIONS)
                for proc in cluster.replicas]
    links = [AgoraLinkClient(ch) for ch in channels] if link else []
    vias = ([by_link(one) for one in links] if link else
            [by_call(matchmaking_pb2_grpc.MatchmakingServiceStub(ch)) for ch in channels])
    for ch in channels:
        await ch.channel_ready()
    before = cluster.cpu()
    done: list[tuple[float, float, str]] = []
    shed: list[int] = []
    origin = time.perf_counter() + 0.5
    tasks = [asyncio.create_task(one_player(vias[i % len(vias)], token,
                                            i / rate if rate else 0.0, origin, done, shed))
             for i, token in enumerate(tokens)]
    # (players % 3 are left over: the rest is done once all of them are seated)
    limit = time.perf_counter() + 60 + players / max(rate, 500)
    while len(done) < players - players % 3 and time.perf_counter() < limit:
        await asyncio.wait(tasks, timeout=0.1, return_when=asyncio.FIRST_EXCEPTION)
        if any(t.done() and not t.cancelled() and t.exception() for t in tasks):
            break
    finished = {t for t in tasks if t.done()}
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    errors = [t.exception() for t in finished if t.exception() is not None]
    after = cluster.cpu()
    for one in links:
        await one.close()
    for ch in channels:
        await ch.close()
    waits = [end - begin for begin, end, _ in done]
    tables: dict[str, int] = {}
    for *_, table_id in done:
        tables[table_id] = tables.get(table_id, 0) + 1
    first = min((b for b, _, _ in done), default=0.0)
    last = max((e for _, e, _ in done), default=0.0)
    return {"matched": len(done), "unmatched": len(pending) - players % 3, "errors": errors[:3],
            "shed": len(shed),
            "tables": len(tables), "bad_tables": sum(1 for n in tables.values() if n != 3),
            "per_s": len(done) / (last - first) if done and last > first else 0.0,
            "p50": pct(waits, 50) if waits else float("nan"),
            "p99": pct(waits, 99) if waits else float("nan"),
            "max": max(waits, default=float("nan")),
            "cpu": {k: after[k] - before.get(k, 0.0) for k in after}}


def report(replicas: int, mode: str, rate: float, players: int, r: dict[str, Any],
           via: str) -> None:
    offered = "all at once" if mode == "burst" else f"{rate:,.0f}/s offered"
    print(f"\n{replicas} replica(s), {mode} ({players:,} players, {offered}), via {via}")
    print(f"  matched {r['matched']:,} ({r['unmatched']} not, {players % 3} left over), "
          f"{r['tables']:,} tables, "
          f"{r['bad_tables']} not of three; errors {r['errors'] or 'none'}; "
          f"{r['shed']:,} calls shed by gRPC and made again")
    print(f"  players matched per second {r['per_s']:,.0f} ({r['per_s'] / replicas:,.0f} per "
          f"replica)")
    print(f"  time to match p50 {r['p50'] * 1000:.0f} ms, p99 {r['p99'] * 1000:.0f} ms, "
          f"max {r['max'] * 1000:.0f} ms (the widening step: {WIDEN_STEP_S * 1000:.0f} ms)")
    print("  CPU s: " + ", ".join(f"{name} {s:.1f}" for name, s in r["cpu"].items()))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--rates", type=float, nargs="+", default=[1_000.0, 2_000.0],
                        help="paced arrivals a second (one run each)")
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--modes", nargs="+", default=["paced", "burst"],
                        choices=["paced", "burst"])
    parser.add_argument("--via", nargs="+", default=["call", "link"], choices=["call", "link"],
                        help="a call per app, or the gateways' agorà link")
    args = parser.parse_args(argv)
    print(f"agora_bench: {args.players:,} players, tick {TICK_MS} ms, Redis {REDIS}, "
          f"grpcio {grpc.__version__}, Python {sys.version.split()[0]}")
    print(subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip(), "cores")
    runs = [("paced", rate) for rate in args.rates if "paced" in args.modes]
    runs += [("burst", 0.0)] if "burst" in args.modes else []
    for replicas in args.replicas:
        for mode, rate in runs:
            for via in args.via:
                with tempfile.TemporaryDirectory(prefix="agora-bench-") as tmp:
                    cluster = Cluster(replicas, Path(tmp))
                    try:
                        result = asyncio.run(run(cluster, args.players, rate, via == "link"))
                    finally:
                        cluster.stop()
                report(replicas, mode, rate, args.players, result, via)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
