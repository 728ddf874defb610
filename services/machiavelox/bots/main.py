"""`machiavelox bots --players N [--level L]`: N bots log in, queue in the agorà and play to
the end, at a level: `basic` (today's bots, the default) or `easy` / `medium` / `hard` (the
solver bots, docs/bots.md); `--time-scale` is the tables' rules clock speed (as `machiavelox up
--time-scale`), so that the levels keep their pace in table time.

The bots are apps: they reach the public gateway in plaintext. The leaderboard at the end comes
from scoring itself, an internal service: that call presents the `results-reader` certificate
given by MACHIAVELOX_TLS_CA, _CERT and _KEY (`machiavelox up` prints them), or goes in
plaintext with MACHIAVELOX_INTERNAL_TLS=off; `--scoring ''` skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import TextIO

import grpc

from machiavelox._gen.v1 import scoring_pb2, scoring_pb2_grpc
from machiavelox.platform import keepalive
from machiavelox.platform.settings import SettingsError
from machiavelox.platform.tls import InternalTls

from .levels import BASIC, LEVEL_NAMES
from .player import Bot, BotOutcome


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // max(total, 1)
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} bots finished"


async def play(players: int, gateway: str, matchmaking: str, scoring: str, interval_s: float,
               prefix: str, out: TextIO, scoring_tls: InternalTls | None = None,
               level: str = BASIC, time_scale: float = 1.0) -> list[BotOutcome]:
    """`scoring_tls`: the credentials the leaderboard call presents to scoring (a
    `results-reader` certificate); needed with a `scoring` address. `level`, `time_scale`:
    the bots' level and the tables' rules clock speed (`player.Bot`)."""
    async with grpc.aio.insecure_channel(gateway, options=keepalive.CLIENT) as gw, \
            grpc.aio.insecure_channel(matchmaking, options=keepalive.CLIENT) as mm:
        bots = [Bot(f"{prefix}{i + 1}", gw, mm, interval_s, level=level,
                    time_scale=time_scale) for i in range(players)]
        tasks = [asyncio.create_task(b.run()) for b in bots]
        outcomes: list[BotOutcome] = []
        started = time.monotonic()
        print(_bar(0, players), file=out, flush=True)
        for next_done in asyncio.as_completed(tasks):
            outcomes.append(await next_done)
            print(f"{_bar(len(outcomes), players)} ({time.monotonic() - started:.0f} s)",
                  file=out, flush=True)
    _report(outcomes, out)
    if scoring:
        await _leaderboard(scoring, scoring_tls or InternalTls.from_env("results-reader"), out)
    return outcomes


def _report(outcomes: list[BotOutcome], out: TextIO) -> None:
    print("\nResults", file=out)
    print(f"{'table':28} {'bot':10} {'seat':4} {'level':6} {'points':>6} {'actions':>7}  "
          "outcome", file=out)
    for o in sorted(outcomes, key=lambda o: (o.table_id, o.seat)):
        if o.result is None:
            print(f"{o.table_id:28} {o.player:10} p{o.seat + 1:<3} {o.level:6} {'-':>6} "
                  f"{o.actions:>7}  unfinished", file=out)
            continue
        pts = o.result.scores[o.seat] if len(o.result.scores) == 3 else 0
        won = o.result.winner == o.seat + 1
        print(f"{o.table_id:28} {o.player:10} p{o.seat + 1:<3} {o.level:6} {pts:>6} "
              f"{o.actions:>7}  {'WON ' if won else ''}{o.result.ending}", file=out)


async def _leaderboard(address: str, tls: InternalTls, out: TextIO) -> None:
    async with tls.channel(address, "scoring") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=10), timeout=10)
    print("\nLeaderboard (agorà)", file=out)
    for rank, row in enumerate(board.rows, 1):
        print(f"{rank:>3}. {row.player_id:12} {row.points:>6} points  {row.played} played",
              file=out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="machiavelox bots", description=__doc__)
    parser.add_argument("--players", type=int, default=3, help="how many bots (a multiple of 3)")
    parser.add_argument("--gateway", default="127.0.0.1:7000")
    parser.add_argument("--matchmaking", default="",
                        help="the agorà's address (default: through the gateway, as apps "
                        "do; matchmaking's own port takes only gateways' certificates)")
    parser.add_argument("--scoring", default="127.0.0.1:7300", help="'' to skip the leaderboard")
    parser.add_argument("--interval", type=float, default=0.2,
                        help="seconds between actions (level basic)")
    parser.add_argument("--level", choices=LEVEL_NAMES, default=BASIC,
                        help="basic: today's bots; easy, medium, hard: the solver bots, at "
                        "their own pace (docs/bots.md)")
    parser.add_argument("--time-scale", type=float, default=1.0,
                        help="the tables' rules clock speed (`machiavelox up --time-scale`): "
                        "the levels' delays are table time")
    parser.add_argument("--prefix", default="bot", help="bot names: PREFIX1, PREFIX2, ...")
    args = parser.parse_args(argv)
    if args.players < 3 or args.players % 3:
        parser.error("--players must be a multiple of 3")
    if args.time_scale <= 0:
        parser.error("--time-scale must be positive")
    tls = None
    if args.scoring:
        try:
            tls = InternalTls.from_env("results-reader")
        except SettingsError as err:
            print(f"machiavelox bots: the leaderboard needs scoring's credentials: {err} "
                  "(--scoring '' skips it)", file=sys.stderr)
            return 2
    outcomes = asyncio.run(play(args.players, args.gateway, args.matchmaking or args.gateway,
                                args.scoring,
                                args.interval, args.prefix, sys.stdout, tls, args.level,
                                args.time_scale))
    return 0 if all(o.result is not None for o in outcomes) else 1
