"""The answers a failed journal write would undo: the gateway items (actions, subscriptions)
whose answers wait, in the gated outboxes, for the journal write that covers them.

A `journal.Watcher`, like a gated outbox: entries are staged with the write that covers them
and forgotten once it is stored; if it fails, `undone` hands back every entry not stored, for
the shard to answer again (an action refused `table/journal`, a subscription answered from
the rebuilt table).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from machiavelox._gen.v1 import table_pb2

from .gateway_link import GatewayLink


@dataclass(frozen=True, slots=True)
class Entry:
    link: GatewayLink
    item: table_pb2.GatewayItem


class Ledger:
    def __init__(self) -> None:
        self._current: list[Entry] = []
        self._staged: deque[tuple[int, list[Entry]]] = deque()
        self._dropped: list[Entry] = []

    def add(self, link: GatewayLink, item: table_pb2.GatewayItem) -> None:
        self._current.append(Entry(link, item))

    def stage(self, write: int) -> None:
        if self._current:
            self._staged.append((write, self._current))
            self._current = []

    def committed(self, write: int) -> None:
        staged = self._staged
        while staged and staged[0][0] <= write:
            staged.popleft()

    def drop_uncommitted(self) -> None:
        for _, entries in self._staged:
            self._dropped += entries
        self._dropped += self._current
        self._staged.clear()
        self._current = []

    def undone(self) -> list[Entry]:
        """The entries dropped since the last call, oldest first."""
        out, self._dropped = self._dropped, []
        return out

    def forget(self, link: GatewayLink) -> None:
        """A gateway's stream ended: nothing is answered on it any more."""
        self._current = [e for e in self._current if e.link is not link]
        self._staged = deque((n, [e for e in entries if e.link is not link])
                             for n, entries in self._staged)
