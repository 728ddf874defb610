"""Presence in this process's memory: one replica only (development, tests, `machiavelox up`);
forgotten at restart.

Its clock is a `Timeline` (platform/clock.py): ms anchored to the wall clock at start, then
advanced by the monotonic clock, so a wall clock step moves no silence. It vouches for
everything since its own start (it stores what it receives in the same step), so a silence
counts from the later of the last sign of life and the start: after a restart, a player never
seen since is unknown for `silence_ms`, then silent for as long as this process has known it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from machiavelox.platform.clock import Timeline

from .hub import WATCH_BACKLOG, Context, Fact
from .store import Beat, Presence, PresenceStore, alive_now

Clock = Callable[[], int]
"""The store's time, ms (injected so tests can drive it)."""


@dataclass
class _Entry:
    seen: int = 0
    since: int = 0
    alive: bool = False
    gateway: str = ""
    connected: bool = False


class MemoryPresenceStore(PresenceStore):
    def __init__(self, silence_ms: int, stale_ms: int = 0, clock: Clock | None = None,
                 backlog: int = WATCH_BACKLOG) -> None:
        super().__init__(silence_ms, stale_ms, backlog)
        self._clock: Clock = clock if clock is not None else Timeline()
        self._started = 0
        self._entries: dict[str, _Entry] = {}

    def context(self) -> Context:
        now = self._clock()
        return Context(now, now, self._started)

    async def start(self) -> None:
        self._started = self._clock()
        self.back(self.context(), [])

    async def close(self) -> None:
        return None

    def _fact(self, player_id: str) -> Fact:
        e = self._entries.get(player_id, _Entry())
        return Fact(player_id, e.alive, e.since if e.alive else e.seen)

    async def heartbeat(self, player_id: str) -> Beat:
        now = self._clock()
        entry = self._entries.setdefault(player_id, _Entry())
        facts = []
        if entry.alive and now - entry.seen >= self.silence_ms:  # no sweep since: lapse first
            entry.alive = False
            facts.append(Fact(player_id, False, entry.seen))
        revived = not entry.alive
        at = max(now, entry.seen + 1) if revived else max(now, entry.seen)
        entry.seen = at
        if revived:
            entry.alive, entry.since = True, at
            facts.append(Fact(player_id, True, at))
        if facts:
            self.hub.update(self.context(), facts)
        return Beat(at, revived)

    async def set_connected(self, player_id: str, gateway_id: str, connected: bool) -> bool:
        entry = self._entries.setdefault(player_id, _Entry())
        if connected:
            entry.connected, entry.gateway = True, gateway_id
            return True
        if gateway_id and entry.gateway != gateway_id:
            return False
        entry.connected, entry.gateway = False, ""
        return True

    async def presence(self, player_ids: Sequence[str]) -> list[Presence]:
        now = self._clock()
        out = []
        for player in player_ids:
            e = self._entries.get(player, _Entry())
            out.append(Presence(player, e.connected, e.gateway, e.seen,
                                alive_now(e.seen, now, self.silence_ms)))
        return out

    async def read(self, player_ids: Sequence[str]) -> tuple[Context, list[Fact]]:
        return self.context(), [self._fact(p) for p in player_ids]

    async def tick(self) -> list[Fact]:
        context = self.context()
        cutoff = context.now_ms - self.silence_ms
        lapses = []
        for player, e in self._entries.items():
            if e.alive and e.seen <= cutoff:
                e.alive = False
                lapses.append(Fact(player, False, e.seen))
        self.hub.update(context, lapses)
        return lapses
