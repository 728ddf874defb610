"""The bot host's use case (`BotHost`): practice tables' bots, bounded. No protobuf here: the
servicer (`service.py`) decodes and encodes.

`seat(code, level, count, for_player)` starts `count` `invite.InviteBot`s of `level` (the same
bots as `machiavelox bots` and the arena's leveled ones: `player.Bot` with its brain): each
logs in (through the gateway, or with a token the host mints), joins the friendly table with
the code through the gateway like any app, and plays it to its end. The call returns once they
are started; it does not wait for their seats. With `classic=True` the bots are
`classic_player.ClassicInviteBot`s of the level's classic strength (`classic_levels.py`;
`basic` is `easy`), 1 to 5 of them (a classic table has 2..6 seats), each waiting
`CLASSIC_THINK_S` of table time before an action so that a person can follow.

Bounded: at most `max_bots` run at once; a call that would pass it is refused whole
(`Full`: RESOURCE_EXHAUSTED `bots/full`), none of its bots started. A bot is released (its
place freed) when its task ends, however: its table ended (the result seen), its lobby
expired or was dropped (NOT_FOUND from the join), a failure (logged at WARNING), or
`max_bot_s` after its start (a lobby nobody fills, a table that never ends). `close` cancels
every bot (the host stops: its bots' tables see them absent, M11).

Names: `<player>-bot1`, `-bot2`, ... the lowest numbers no bot of this host uses now (a person
whose last practice's bots still play gets `-bot3`, `-bot4`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc

from .classic_levels import practice_level
from .classic_player import ClassicInviteBot, ClassicOutcome
from .invite import InviteBot, bot_names
from .levels import LEVEL_NAMES
from .player import BotOutcome

log = logging.getLogger(__name__)

MAX_PER_TABLE = 2  # a Machiavelox table has three seats: the person keeps one
MAX_PER_CLASSIC_TABLE = 5  # a classic table has 2..6 seats (C1): the person keeps one
CLASSIC_THINK_S = 2.0  # table seconds a classic bot waits before each action (C7: no race)

Outcome = BotOutcome | ClassicOutcome


class HostRefusal(Exception):
    """A SeatBots the host refuses: its stable reason and a message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class Full(HostRefusal):
    """Seating the bots would take the host past its maximum (RESOURCE_EXHAUSTED)."""


class BadRequest(HostRefusal):
    """A request that cannot be served (INVALID_ARGUMENT)."""


@dataclass(frozen=True)
class HostConfig:
    max_bots: int  # at most this many bots at once
    time_scale: float  # the tables' rules clock speed (the levels' delays are table time)
    basic_interval_s: float  # between a basic bot's actions
    max_bot_s: float  # a bot is stopped this long after its start, whatever it is doing


class BotHost:
    def __init__(self, gateway: grpc.aio.Channel, config: HostConfig,
                 token_for: Callable[[str], str] | None = None) -> None:
        """`gateway`: a channel to the public gateway (the bots' Login, JoinFriendlyTable and
        Play); `token_for`: mints a bot's token (None: the gateway's development Login)."""
        self.gateway = gateway
        self.config = config
        self.token_for = token_for
        self._running: dict[str, asyncio.Task[Outcome | None]] = {}  # by bot name

    @property
    def running(self) -> int:
        return len(self._running)

    def seat(self, code: str, level: str, count: int, for_player: str,
             classic: bool = False) -> list[str]:
        """Start `count` bots of `level` for the table of `code` (classic Machiavelli bots with
        `classic`); their names."""
        most = MAX_PER_CLASSIC_TABLE if classic else MAX_PER_TABLE
        if level not in LEVEL_NAMES:
            raise BadRequest("bots/bad-level", f"level must be one of {', '.join(LEVEL_NAMES)}")
        if not 1 <= count <= most:
            raise BadRequest("bots/bad-count", f"count must be 1 to {most}")
        if not code or len(code) > 20:
            raise BadRequest("bots/bad-code", "an invite code is needed")
        if self.running + count > self.config.max_bots:
            raise Full("bots/full", f"this bot host runs {self.running} bots of at most "
                                    f"{self.config.max_bots}; try again later")
        names = bot_names(for_player, count, taken=self._running.__contains__)
        for name in names:
            task = asyncio.create_task(self._run(name, self._play(name, code, level, classic)),
                                       name=f"bot {name}")
            self._running[name] = task
            task.add_done_callback(self._released(name))
        log.info("%d %s%s bots started for a practice table (%d running)", count,
                 "classic " if classic else "", level, self.running,
                 extra={"player": for_player})
        return names

    def _play(self, name: str, code: str, level: str, classic: bool
              ) -> Callable[[], Awaitable[Outcome]]:
        """The bot's whole run (login, join by code, the table to its end), not yet started."""
        if classic:
            cbot = ClassicInviteBot(name, self.gateway, code, think_s=CLASSIC_THINK_S,
                                    time_scale=self.config.time_scale)
            cbot.token_for = self.token_for
            cbot.level = practice_level(level).name  # its strength (classic_levels.py)
            return cbot.run_classic
        bot = InviteBot(name, self.gateway, code, self.config.basic_interval_s, level,
                        self.config.time_scale, token_for=self.token_for)
        return bot.run

    def _released(self, name: str) -> Callable[[asyncio.Task[Outcome | None]], None]:
        def release(_: asyncio.Task[Outcome | None]) -> None:
            self._running.pop(name, None)

        return release

    async def _run(self, name: str, play: Callable[[], Awaitable[Outcome]]) -> Outcome | None:
        try:
            outcome = await asyncio.wait_for(play(), self.config.max_bot_s)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            log.warning("bot stopped after %.0f s", self.config.max_bot_s,
                        extra={"player": name})
            return None
        except grpc.aio.AioRpcError as err:
            log.warning("bot left: %s %s", err.code().name, err.details(),
                        extra={"player": name})
            return None
        except Exception as err:  # a bot's failure is its own: the host goes on
            log.warning("bot failed: %r", err, extra={"player": name})
            return None
        if isinstance(outcome, ClassicOutcome):  # the session's end reason (C11)
            ending = outcome.result.reason if outcome.result is not None else "no result"
        else:
            ending = outcome.result.ending if outcome.result is not None else "no result"
        log.info("bot done: %s, %d actions, %d races, %d predictable refusals", ending,
                 outcome.actions, outcome.races, len(outcome.predictable),
                 extra={"player": name, "table_id": outcome.table_id})
        return outcome

    async def close(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
