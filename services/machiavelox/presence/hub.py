"""What a replica tells its watchers: facts judged against what presence can vouch for.

`judge` is the one rule (store.py's docstring says it in words) turning a player's fact and the
current `Context` into a view: alive, silent for a duration, unknown, or nothing yet. The hub
keeps the facts of the players watched here (from the store's reads and its live feed), the
latest context, and each watch's queue; it tells a watch only what changes its view (a resync
sends each watcher just what it is missing).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, field

WATCH_BACKLOG = 4096
"""Changes a watcher may have pending before its stream is ended as lagging (a watch has up to
1,000 players; an outage and the return after it tell each of them twice)."""


@dataclass(frozen=True)
class Fact:
    """What the store records of a player: alive since the reviving heartbeat, or lapsed
    (`alive` False) since the last sign of life (0: never seen)."""

    player_id: str
    alive: bool
    since_ms: int

    @property
    def order(self) -> tuple[int, int]:
        return (self.since_ms, 0 if self.alive else 1)


@dataclass(frozen=True)
class Context:
    """What presence could vouch for at `now_ms` (all on the store's clock): every sign of life
    that reached it between `known_from_ms` and `known_until_ms` was stored."""

    now_ms: int
    known_until_ms: int
    known_from_ms: int


@dataclass(frozen=True)
class LivenessChange:
    """What a watcher is told: alive, silent for `silent_for_ms`, or unknown. `since_ms` (for
    older readers of the contract): alive since, or silent since (never before what presence
    can vouch for), on the store's clock; 0 when unknown."""

    player_id: str
    alive: bool
    unknown: bool = False
    silent_for_ms: int = 0
    since_ms: int = 0
    key: tuple[object, ...] = field(default=(), compare=False, repr=False)
    """Two changes with the same key say the same thing (a watcher is told it once)."""


def unknown(player_id: str) -> LivenessChange:
    return LivenessChange(player_id, False, unknown=True, key=("unknown",))


def judge(fact: Fact, context: Context, silence_ms: int, stale_ms: int) -> LivenessChange | None:
    """The view of `fact` given `context` (issue 13 item 1; store.py): None when nothing can
    be said yet (the replicas' beacons lag by less than `stale_ms`)."""
    if fact.alive:
        return LivenessChange(fact.player_id, True, since_ms=fact.since_ms,
                              key=("alive", fact.order))
    start = max(fact.since_ms, context.known_from_ms)  # never backdated past what we vouch for
    known = context.known_until_ms - start
    if known >= silence_ms:
        return LivenessChange(fact.player_id, False, silent_for_ms=known, since_ms=start,
                              key=("silent", fact.order))
    if (context.known_from_ms > fact.since_ms
            or context.now_ms - context.known_until_ms > stale_ms):
        return unknown(fact.player_id)  # an outage is in the way
    return None


class Watch:
    """One watcher's pending changes, each one a change of a watched player's view."""

    def __init__(self, player_ids: Iterable[str], backlog: int = WATCH_BACKLOG) -> None:
        self.players = tuple(dict.fromkeys(player_ids))  # in the order asked
        self.player_ids = frozenset(self.players)
        self.lagging = False
        self._backlog = backlog
        self._told: dict[str, tuple[object, ...]] = {}
        self._queue: asyncio.Queue[LivenessChange | None] = asyncio.Queue()
        self._closed = False

    def offer(self, change: LivenessChange) -> None:
        """Queue `change` if it is about a watched player and not what they were last told."""
        if self._closed or change.player_id not in self.player_ids:
            return
        if self._told.get(change.player_id) == change.key:
            return
        self._told[change.player_id] = change.key
        if self._queue.qsize() >= self._backlog:
            self.lagging = True
            self.close()
            return
        self._queue.put_nowait(change)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put_nowait(None)

    async def next(self) -> LivenessChange | None:
        """The next change, or None once closed."""
        return await self._queue.get()


class LivenessHub:
    """The facts of the players watched here, judged for this process's watchers.

    `lost()` (the store cannot be used) tells everyone unknown and holds every view there until
    `restore()`; facts learnt meanwhile are kept (merged by order) for that moment."""

    def __init__(self, silence_ms: int, stale_ms: int, backlog: int = WATCH_BACKLOG) -> None:
        self.silence_ms = silence_ms
        self.stale_ms = stale_ms
        self._backlog = backlog
        self._by_player: dict[str, set[Watch]] = {}
        self._facts: dict[str, Fact] = {}
        self._pending: set[str] = set()  # lapsed, not (yet) silent: judged again at each context
        self._context: Context | None = None
        self._lost = True  # until the store's first context
        self._closed = False

    @property
    def context(self) -> Context | None:
        return self._context

    def watch(self, player_ids: Iterable[str]) -> Watch:
        watch = Watch(player_ids, self._backlog)
        if self._closed:
            watch.close()
            return watch
        for player in watch.players:
            self._by_player.setdefault(player, set()).add(watch)
            view = self._view(player)
            if view is not None:
                watch.offer(view)
        return watch

    def unwatch(self, watch: Watch) -> None:
        watch.close()
        for player in watch.player_ids:
            watches = self._by_player.get(player)
            if watches is not None:
                watches.discard(watch)
                if not watches:
                    del self._by_player[player]
                    self._facts.pop(player, None)
                    self._pending.discard(player)

    def watched(self) -> list[str]:
        return list(self._by_player)

    def missing(self, player_ids: Iterable[str]) -> list[str]:
        """The players among `player_ids` whose fact is not known here yet."""
        return [p for p in player_ids if p not in self._facts]

    def update(self, context: Context | None, facts: Iterable[Fact] = ()) -> None:
        """Learn `context` (if newer) and `facts` (each kept if newer than what is known), and
        tell the watchers whatever that changes, fact by fact."""
        touched: set[str] = set()
        if context is not None and (self._context is None
                                    or context.now_ms >= self._context.now_ms):
            moved = (self._context is None
                     or context.known_from_ms != self._context.known_from_ms)
            self._context = context
            if moved:  # every lapsed player's silence is counted anew
                touched.update(p for p, f in self._facts.items() if not f.alive)
            else:
                touched.update(self._pending)
        for fact in facts:
            if self._learn(fact):
                touched.discard(fact.player_id)
                if not self._lost:
                    self._tell(fact.player_id)
        if not self._lost:
            for player in touched:
                self._tell(player)

    def lost(self) -> None:
        """The store cannot be used: everyone watched here is unknown until `restore`."""
        if self._lost:
            return
        self._lost = True
        for player in list(self._by_player):
            self._tell(player)

    def restore(self, context: Context, facts: Iterable[Fact]) -> None:
        """The store is back: `facts` are its current ones; every watcher is told the truth."""
        for fact in facts:
            self._learn(fact)
        self._lost = False
        self._context = context
        for player in list(self._by_player):
            self._tell(player)

    def close(self) -> None:
        """End every watch stream (shutdown): watchers reconnect to another replica."""
        self._closed = True
        for watches in list(self._by_player.values()):
            for watch in list(watches):
                watch.close()

    def _learn(self, fact: Fact) -> bool:
        if fact.player_id not in self._by_player:
            return False
        known = self._facts.get(fact.player_id)
        if known is not None and fact.order <= known.order:
            return False
        self._facts[fact.player_id] = fact
        return True

    def _view(self, player: str) -> LivenessChange | None:
        if self._lost or self._context is None:
            return unknown(player)
        fact = self._facts.get(player)
        if fact is None:
            return None
        view = judge(fact, self._context, self.silence_ms, self.stale_ms)
        if fact.alive or (view is not None and not view.unknown):
            self._pending.discard(player)
        else:
            self._pending.add(player)
        return view

    def _tell(self, player: str) -> None:
        view = self._view(player)
        if view is not None:
            for watch in list(self._by_player.get(player, ())):
                watch.offer(view)
