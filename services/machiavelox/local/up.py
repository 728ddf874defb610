"""`machiavelox up`: the whole cluster on this machine, with embedded defaults.

Presence (in memory), scoring (SQLite in the data dir), two table shards, matchmaking, the
gateway and the bot host (the bots of practice tables, playing through the gateway), each its
own process on loopback. It prints the gateway's address and stays up until
Ctrl-C, then stops every service gracefully. `--demo N` also runs N bots to the end of their
matches, prints the results and the leaderboard, and stops: the README's main job. The demo
runs the tables' rules clock faster (`--time-scale`), so that 2-minute rules take seconds.

Every service serves `/metrics` on its own port: from `--metrics-base-port` (9464) up, in the
order gateway, shard-0, shard-1, matchmaking, scoring, presence, bot-host (any free ports when
either base port is 0); they are printed at start-up, and deploy/prometheus/prometheus-local.yml
scrapes the default ones. Tracing follows the OTEL_* variables of the environment.

The services speak mutual TLS to each other as in production: `up` makes a throwaway CA and a
certificate per role at start (`pki.py`, in a temporary directory printed at start-up and
deleted at the end), and each service gets its role's. The gateway's own port, the one apps
use, stays plaintext on loopback.

A service that crashes while up runs (killed, out of memory, any exit) is restarted on its own
(`supervisor.py`), with the same port, settings and data dir, its log appended to the same
file; one line says so. Restarts back off from 0.5 s to 10 s; a service restarted more than 5
times within 60 s is given up on, with a message, and the rest keep running.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import tempfile
from pathlib import Path

from machiavelox.bots.invite import BOT_INTERVAL_S
from machiavelox.bots.levels import EASY, LEVEL_NAMES

from .pki import Pki, remove, throwaway_pki
from .processes import Proc, free_ports, start
from .supervisor import Supervisor

KEY = "local-development-key-not-a-secret"
NAMES = ("gateway", "shard-0", "shard-1", "matchmaking", "scoring", "presence", "bot-host")
METRICS_BASE_PORT = 9464
METRICS_PORT = "MACHIAVELOX_METRICS_PORT"


def metrics_ports(base: int, metrics_base: int) -> dict[str, int]:
    """Each service's /metrics port: consecutive from `metrics_base`, free ones if either base
    is 0."""
    if base and metrics_base:
        return {name: metrics_base + i for i, name in enumerate(NAMES)}
    return dict(zip(NAMES, free_ports(len(NAMES)), strict=True))


def metrics_port(proc: Proc) -> int:
    """The /metrics port a service started by `launch` serves."""
    return int(proc.env[METRICS_PORT])


def launch(base: int, data_dir: Path, logs: Path, time_scale: float,
           metrics_base: int = METRICS_BASE_PORT, pki: Pki | None = None,
           bot_interval_s: float = BOT_INTERVAL_S) -> dict[str, Proc]:
    """Start every service; `base` 0 picks free ports (tests), for /metrics too. `pki`: whose
    certificates the services get (default: the process's `session_pki`). `bot_interval_s`:
    between the actions of the bot host's basic bots."""
    names = NAMES
    if base:
        ports = dict(zip(names, (base, base + 101, base + 102, base + 200, base + 300,
                                 base + 400, base + 600), strict=True))
        metrics = metrics_ports(base, metrics_base)
    else:  # free ports, all different (the /metrics ones too)
        chosen = free_ports(2 * len(names))
        ports = dict(zip(names, chosen[:len(names)], strict=True))
        metrics = dict(zip(names, chosen[len(names):], strict=True))
    common = {"MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_LOG_LEVEL": "INFO"}

    def own(name: str) -> dict[str, str]:
        return {**common, METRICS_PORT: str(metrics[name])}

    shards = f"shard-0=127.0.0.1:{ports['shard-0']},shard-1=127.0.0.1:{ports['shard-1']}"
    procs: dict[str, Proc] = {}
    try:
        procs["presence"] = start("presence", "presence", {
            **own("presence"), "MACHIAVELOX_PRESENCE_PORT": str(ports["presence"])}, logs,
            pki=pki)
        procs["scoring"] = start("scoring", "scoring", {
            **own("scoring"), "MACHIAVELOX_SCORING_PORT": str(ports["scoring"]),
            "MACHIAVELOX_SCORING_DATABASE_URL": f"sqlite:///{data_dir / 'scoring.sqlite3'}"},
            logs, pki=pki)
        for shard in ("shard-0", "shard-1"):
            procs[shard] = start(shard, "table", {
                **own(shard), "MACHIAVELOX_SHARD_ID": shard,
                "MACHIAVELOX_DATA_DIR": str(data_dir),  # its journal: journal-<shard>.sqlite3
                "MACHIAVELOX_TABLE_PORT": str(ports[shard]),
                "MACHIAVELOX_TABLE_TIME_SCALE": str(time_scale),
                "MACHIAVELOX_SCORING_ADDRESS": f"127.0.0.1:{ports['scoring']}",
                "MACHIAVELOX_PRESENCE_ADDRESS": f"127.0.0.1:{ports['presence']}"}, logs,
                pki=pki)
        procs["matchmaking"] = start("matchmaking", "matchmaking", {
            **own("matchmaking"), "MACHIAVELOX_MATCHMAKING_PORT": str(ports["matchmaking"]),
            "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
            "MACHIAVELOX_MATCHMAKING_BOT_HOST_ADDRESS": f"127.0.0.1:{ports['bot-host']}",
            "MACHIAVELOX_SCORING_ADDRESS": f"127.0.0.1:{ports['scoring']}"}, logs, pki=pki)
        procs["gateway"] = start("gateway", "gateway", {
            **own("gateway"), "MACHIAVELOX_GATEWAY_PORT": str(ports["gateway"]),
            "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",  # a local cluster: Login for any name
            # a local cluster's Resync pace is generous: the classic bots take a fresh
            # snapshot after each action (bots/classic_player.py), the Machiavelox bots keep
            # theirs from the events (bots/viewkeeper.py) and do well at the default pace
            "MACHIAVELOX_GATEWAY_RESYNC_RATE": "20", "MACHIAVELOX_GATEWAY_RESYNC_BURST": "40",
            "MACHIAVELOX_GATEWAY_SHARDS": shards,
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": f"127.0.0.1:{ports['matchmaking']}",
            "MACHIAVELOX_PRESENCE_ADDRESS": f"127.0.0.1:{ports['presence']}"}, logs, pki=pki)
        procs["bot-host"] = start("bot-host", "bot-host", {
            **own("bot-host"), "MACHIAVELOX_BOT_HOST_PORT": str(ports["bot-host"]),
            "MACHIAVELOX_BOT_HOST_GATEWAY_ADDRESS": procs["gateway"].address,
            "MACHIAVELOX_BOT_HOST_TIME_SCALE": str(time_scale),
            "MACHIAVELOX_BOT_HOST_BASIC_INTERVAL_S": str(bot_interval_s)}, logs, pki=pki)
    except BaseException:
        stop_all(procs)
        raise
    return procs


def stop_all(procs: dict[str, Proc]) -> list[str]:
    """Stop in reverse start order; returns the services that did not stop cleanly."""
    bad = []
    for name, proc in reversed(list(procs.items())):
        try:
            if proc.stop() != 0:
                bad.append(name)
        except AssertionError:
            bad.append(name)
    return bad


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="machiavelox up", description=__doc__)
    parser.add_argument("--base-port", type=int, default=7000)
    parser.add_argument("--metrics-base-port", type=int, default=METRICS_BASE_PORT,
                        help="first /metrics port (default 9464; 0: free ports)")
    parser.add_argument("--data-dir", default=".machiavelox-data")
    parser.add_argument("--demo", type=int, default=0, metavar="N",
                        help="run N bots (a multiple of 3) to the end, then stop")
    parser.add_argument("--time-scale", type=float, default=None,
                        help="rules clock speed (default 1, or 30 with --demo)")
    parser.add_argument("--demo-level", choices=LEVEL_NAMES, default=EASY.name,
                        help="the demo bots' strength (docs/bots.md; basic: the simple bots)")
    args = parser.parse_args(argv)
    data_dir = Path(args.data_dir).resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    logs = Path(tempfile.mkdtemp(prefix="machiavelox-logs-"))
    scale = args.time_scale if args.time_scale is not None else (30.0 if args.demo else 1.0)
    pki = throwaway_pki()
    print(f"starting the cluster (logs in {logs}) ...", flush=True)
    try:
        procs = launch(args.base_port, data_dir, logs, scale, args.metrics_base_port, pki)
    except BaseException:
        remove(pki)
        raise
    gateway = procs["gateway"].address
    print(f"gateway listening on {gateway}", flush=True)
    reader = " ".join(f"{k}={v}" for k, v in pki.env("results-reader").items())
    print(f"internal mTLS: throwaway CA and certificates in {pki.directory} (deleted at the "
          f"end); to call scoring yourself (e.g. `machiavelox bots`): {reader}", flush=True)
    print("metrics: " + ", ".join(f"{name} http://127.0.0.1:{metrics_port(proc)}/metrics"
                                  for name, proc in procs.items()), flush=True)
    supervisor = Supervisor(procs).start()
    code = 0
    try:
        if args.demo:
            from machiavelox.bots.main import play

            print(f"demo: {args.demo} bots ({args.demo_level}), rules clock x{scale:g}",
                  flush=True)
            outcomes = asyncio.run(play(args.demo, gateway, gateway,
                                        procs["scoring"].address, 0.05, "bot", sys.stdout,
                                        pki.tls("results-reader"), args.demo_level, scale))
            code = 0 if all(o.result is not None for o in outcomes) else 1
        else:
            print("press Ctrl-C to stop", flush=True)
            stops = {signal.SIGINT, signal.SIGTERM}
            # blocked first, or an unhandled SIGTERM ends the process at once, no cleanup
            signal.pthread_sigmask(signal.SIG_BLOCK, stops)
            signal.sigwait(stops)
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping ...", flush=True)
        supervisor.stop()  # first: the services' exits from here on are no crashes
        bad = stop_all(procs)
        remove(pki)
        if bad:
            print(f"not stopped cleanly: {', '.join(bad)} (logs in {logs})", flush=True)
            code = code or 1
        else:
            print("stopped", flush=True)
    return code
