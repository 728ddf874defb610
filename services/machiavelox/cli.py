"""The `machiavelox` command."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="machiavelox", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sc = sub.add_parser("scenario", help="run .mxs rules scenarios (files or folders)")
    sc.add_argument("paths", nargs="+")
    sc.add_argument("--verbose", action="store_true", help="print the event log as it happens")
    args = parser.parse_args(argv)
    if args.command == "scenario":
        from .scenario.runner import run_paths

        return run_paths(args.paths, verbose=args.verbose, out=sys.stdout)
    return 2


if __name__ == "__main__":
    sys.exit(main())
