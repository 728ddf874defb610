"""Practice tables (issue 15): a friendly lobby of the person's own, and server-side bots of a
chosen level in every other seat (two at a Machiavelox table; `players - 1` at a classic
Machiavelli one, issue 16).

`Practice.create(player, level, table)` opens the person's friendly lobby (a single match, like
any friendly table: `competitive=false`, so no rating and no leaderboard, M13.1; `table`: the
Machiavelox rules, or a classic table's from `classic_rules.rules_of`) and asks the bot host
(`Bots`, behind `bothost.BotHostClient`) to seat `table.seats - 1` bots with its code (classic
bots for a classic table); the person then joins it with JoinFriendlyTable as usual and the
table starts once every seat is taken. If the
bot host cannot be had, the lobby is dropped again (none is left behind) and the call fails:
UNAVAILABLE `practice/unavailable` (the host down or unreachable), or the host's own refusal
(RESOURCE_EXHAUSTED `bots/full`). A creator whose open lobby already has players (a retried
call) gets its code back, no more bots asked for.

No protobuf or gRPC here: levels are names ("basic", "easy", "medium", "hard").
"""

from __future__ import annotations

import logging
from typing import Protocol

from machiavelox import rules

from .agora import Agora
from .codes import code_ref
from .queue import MACHIAVELOX, TableRules, WaitError

log = logging.getLogger(__name__)


class BotsUnavailable(WaitError):
    """The bot host did not answer (UNAVAILABLE `practice/unavailable` on the wire)."""

    def __init__(self, why: str) -> None:
        super().__init__("practice/unavailable", "the practice bots cannot be reached right "
                                                 f"now ({why}); try again")


class BotsRefused(WaitError):
    """The bot host refused the bots (its status code and reason go on to the app)."""

    def __init__(self, status: str, reason: str, message: str) -> None:
        super().__init__(reason, message or "the practice bots were refused")
        self.status = status


class PracticeOff(WaitError):
    """No bot host configured (FAILED_PRECONDITION `practice/off`)."""

    def __init__(self) -> None:
        super().__init__("practice/off", "this cluster has no practice bots")


class Bots(Protocol):
    async def seat(self, code: str, level: str, count: int, for_player: str,
                   classic: bool = False) -> list[str]:
        """Start `count` bots of `level` for the lobby of `code` (classic Machiavelli bots
        with `classic`); their names."""
        ...


class Practice:
    def __init__(self, agora: Agora, bots: Bots | None) -> None:
        """`bots`: the bot host's client; None: practice tables are off (`practice/off`)."""
        self.agora = agora
        self.bots = bots

    async def create(self, player: str, level: str, table: TableRules = MACHIAVELOX) -> str:
        """The invite code of the person's practice table of `table`'s rules, its bots asked
        for (every seat but the person's)."""
        if self.bots is None:
            raise PracticeOff()
        code = await self.agora.create_friendly(player, rules.MatchKind.SINGLE, table)
        lobby = await self.agora.store.lobby(code)
        if lobby is not None and lobby.players:
            return code  # a retried call: its bots were asked for (or friends sit there)
        classic = bool(table.classic)
        try:
            names = await self.bots.seat(code, level, table.seats - 1, player, classic)
        except (BotsUnavailable, BotsRefused) as err:
            dropped = await self.agora.store.drop_lobby(code)
            log.warning("no practice bots (%s): the lobby is %s", err.reason,
                        "dropped" if dropped else "left to its time to live",
                        extra={"player": player, "code": code_ref(code)})
            raise
        log.info("practice %stable: %s bots %s", "classic " if classic else "", level,
                 ", ".join(names), extra={"player": player, "code": code_ref(code)})
        return code
