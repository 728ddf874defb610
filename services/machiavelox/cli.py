"""The `machiavelox` command: the rules scenario runner and every service's entry point (each
service's `main` runs through `platform/entry.py`: `--help`, settings, exit codes)."""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import signal
import sys

# subcommand -> (module with `main(argv) -> int`, help)
SERVICES = {
    "table": ("machiavelox.table.main", "run a table-authority shard"),
    "gateway": ("machiavelox.gateway.main", "run the gateway (the public endpoint)"),
    "matchmaking": ("machiavelox.matchmaking.main", "run matchmaking (the agorà)"),
    "scoring": ("machiavelox.scoring.main", "run the scoring service"),
    "presence": ("machiavelox.presence.main", "run the presence service"),
    "controller": ("machiavelox.controller.main", "run the shard capacity controller"),
    "bot-host": ("machiavelox.bots.service", "run the bot host (the bots of practice tables)"),
    "up": ("machiavelox.local.up", "run the whole cluster on this machine"),
    "bots": ("machiavelox.bots.main", "bot players that queue and play through the gateway"),
    "play": ("machiavelox.client.app", "play in the terminal, as a person (a Textual client)"),
}
# the services that serve until SIGTERM (`platform/entry.py` run_service)
SERVERS = frozenset({"table", "gateway", "matchmaking", "scoring", "presence", "controller",
                     "bot-host"})


def stop_with_parent() -> None:
    """When started by `machiavelox.local.processes` (MACHIAVELOX_PARENT_PID set), get SIGTERM
    as soon as that process dies (Linux), so a killed test run or `machiavelox up` leaves no
    service behind; and stop at once if it is already gone."""
    parent = os.environ.pop("MACHIAVELOX_PARENT_PID", "")
    if not parent or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != int(parent):
        os.kill(os.getpid(), signal.SIGTERM)


def _stop_before_serving(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in SERVICES:
        if args[0] in SERVERS:
            # SIGTERM before the service serves (its imports, a shard's recovery) stops it
            # cleanly, exit code 0, as one while serving does (`platform/server.py` takes
            # the signal over then): a supervisor or Kubernetes may stop a service that is
            # still starting (its restart after a crash), and nothing of it was in use yet
            signal.signal(signal.SIGTERM, _stop_before_serving)
        stop_with_parent()
        module = importlib.import_module(SERVICES[args[0]][0])
        code: int = module.main(args[1:])
        return code
    parser = argparse.ArgumentParser(
        prog="machiavelox", description=__doc__,
        epilog="`machiavelox <command> --help`: a command's usage (and a service's settings).")
    sub = parser.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("scenario", help="run .mxs rules scenarios (files or folders)")
    sc.add_argument("paths", nargs="+")
    sc.add_argument("--verbose", action="store_true", help="print the event log as it happens")
    for name, (_, text) in SERVICES.items():
        sub.add_parser(name, help=text, add_help=False)
    parsed = parser.parse_args(args)
    if parsed.command == "scenario":
        from .scenario.runner import run_paths

        return run_paths(parsed.paths, verbose=parsed.verbose, out=sys.stdout)
    return 2


if __name__ == "__main__":
    sys.exit(main())
