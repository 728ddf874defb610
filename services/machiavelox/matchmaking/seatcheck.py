"""The seats of lost tables freed: no player is locked out with `ticket/seated` by a table that
cannot come back.

A player stays seated until scoring reports that the table's match ended (`results.py`).
A table its shard lost never reports: the shard's journal store was lost, or the table's
journal does not replay (table/recovery.py), or a shard without a journal restarted. So every
`interval_s` the `SeatCheck` asks each shard (CheckTables) about the seated tables placed on it
(the shard id is the part of the table id before the first dot) and frees the seats of those
it does not have. Such a match is ended without points: its players are free and nobody is
rated; scoring has no record of it (there is nothing to store).

Nothing that exists is freed by a race:
- a table is seated only once its CreateTable was answered, so its shard had it by then, and
  tables still being created (no id yet) are never asked about;
- a table is asked about only if it was seated at the previous check too (seated for one
  interval at least);
- a shard answers only once its recovery is done (it binds its port after), so a table it does
  not know then is not coming back; a shard that does not answer (down, recovering) is asked
  again at the next check, and an answer from a shard of another id counts for nothing.

A table that ended long ago whose report matchmaking has not read yet (its shard forgot it) is
freed here too, early; its results are still applied when they are read.

A player does not wait for the next check: when they queue, create or join a friendly table
and are refused `ticket/seated` by a table, that table is asked about at once
(`check_table`, the agorà's `lost_check`), and if its shard does not have it the seats are
freed and the request goes on. A table is asked about this way at most once per
`RECHECK_S` (a player's retries, or a hostile app's, cost a shard one CheckTables a second
per table at most, within the agorà's own rate limits), and a shard that does not answer in
its placement timeout leaves the refusal as it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from machiavelox.platform.periodic import every

from .metrics import MatchmakingMetrics

log = logging.getLogger(__name__)

SEAT_CHECK_S = 15.0  # the default of MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S
RECHECK_S = 1.0  # a table is asked about on a player's request at most this often


class Checker(Protocol):
    async def missing(self, shard_id: str, table_ids: Sequence[str]) -> list[str] | None:
        """Those of `table_ids` the shard does not have; None: it did not say."""
        ...


class SeatCheck:
    def __init__(self, seated: Callable[[], Awaitable[list[str]]], checker: Checker,
                 free: Callable[[str], Awaitable[tuple[str, ...]]],
                 metrics: MatchmakingMetrics | None = None) -> None:
        """`seated`: the tables with players seated (`AgoraStore.seated_tables`); `free`: ends
        a table's match for matchmaking (its seats and lobby), the players freed (none: it had
        ended already)."""
        self.seated = seated
        self.checker = checker
        self.free = free
        self.metrics = metrics
        self._seen: set[str] = set()  # the tables seated at the previous check
        self._asked: dict[str, float] = {}  # table -> when a player's request last asked
        self._asking: dict[str, asyncio.Future[bool]] = {}  # table -> the check under way

    async def check_once(self) -> list[str]:
        """Ask about the seated tables that were seated at the previous check too; the tables
        whose players were freed."""
        seated = set(await self.seated())
        due = sorted(seated & self._seen)
        self._seen = seated
        by_shard: dict[str, list[str]] = {}
        for table_id in due:
            by_shard.setdefault(table_id.partition(".")[0], []).append(table_id)
        answers = await asyncio.gather(*(self.checker.missing(shard_id, ids)
                                         for shard_id, ids in by_shard.items()))
        freed = [table_id for missing in answers for table_id in missing or ()
                 if await self._free_lost(table_id)]
        self._seen.difference_update(freed)
        return freed

    async def check_table(self, table_id: str) -> bool:
        """A player was refused `ticket/seated` by `table_id`: ask its shard now (at most once
        per RECHECK_S per table, counted from a check's start); True if it is lost and its
        players were freed. Players refused while the table's check is under way (a lost
        table's players coming back together) wait for that check's answer."""
        under_way = self._asking.get(table_id)
        if under_way is not None:
            return await asyncio.shield(under_way)
        now = time.monotonic()
        if now - self._asked.get(table_id, -RECHECK_S) < RECHECK_S:
            return False
        if len(self._asked) > 10_000:  # forget the old ones (a bounded memory)
            self._asked = {t: at for t, at in self._asked.items() if now - at < RECHECK_S}
        self._asked[table_id] = now
        check = asyncio.ensure_future(self._check_table(table_id))
        self._asking[table_id] = check
        check.add_done_callback(lambda _: self._asking.pop(table_id, None))
        return await asyncio.shield(check)  # (a caller that goes away stops no one's check)

    async def _check_table(self, table_id: str) -> bool:
        missing = await self.checker.missing(table_id.partition(".")[0], [table_id])
        freed = table_id in (missing or ()) and await self._free_lost(table_id)
        if freed:
            self._seen.discard(table_id)
        return freed

    async def _free_lost(self, table_id: str) -> bool:
        """Free the players of a table its shard does not have; False if none were seated
        (its match ended meanwhile: scoring's report)."""
        if not await self.free(table_id):
            return False
        log.warning("table %s is lost: its players are free (no points, nobody rated)",
                    table_id, extra={"table_id": table_id,
                                     "shard_id": table_id.partition(".")[0]})
        if self.metrics is not None:
            self.metrics.table_lost()
        return True

    async def run(self, interval_s: float) -> None:
        """Check every `interval_s`, until cancelled."""
        await every(interval_s, self.check_once, "seat check")
