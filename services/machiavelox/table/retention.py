"""Which ended tables leave a shard's memory, and what a late resume of one gets.

A table leaves once it has ended, every result of it is stored in scoring and `grace_s` has
passed since (a session may still resume to see the end): its journal is closed first (so a
restart does not bring it back), and it goes once that closing is stored. What stays of it is
each seat's final snapshot, for the last `keep` tables, the answer to a resume that comes
later still (docs/architecture.md, "Trade-offs").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from google.protobuf.message import Message

from .rulesets import Host

FINAL_SNAPSHOTS = 2_000  # the final snapshots kept of tables that left memory


class Retention:
    def __init__(self, grace_s: float, keep: int = FINAL_SNAPSHOTS) -> None:
        self.grace_s = grace_s
        self.keep = keep
        # table -> player -> the fields of the ShardItem a late resume gets (its snapshot)
        self.final: OrderedDict[str, dict[str, dict[str, Message]]] = OrderedDict()
        self._settled_at: dict[str, float] = {}  # table -> when first seen settled

    def leaving(self, hosts: Iterable[Host], now: float) -> list[Host]:
        """The tables of `hosts` that may leave memory now (`now`: monotonic seconds); those
        past their grace get their journal closed, and leave at a later call."""
        out = []
        for host in hosts:
            if not host.settled:
                continue
            since = self._settled_at.setdefault(host.table_id, now)
            if host.closed:
                if not host.journal.unwritten:  # its closing is stored: it may go
                    out.append(host)
            elif now - since >= self.grace_s:
                host.close()
        return out

    def left(self, host: Host) -> None:
        """`host` leaves memory: keep its final snapshots."""
        self._settled_at.pop(host.table_id, None)
        self.final[host.table_id] = {player: host.snapshot_fields(player)
                                      for player in host.seats}
        while len(self.final) > self.keep:
            self.final.popitem(last=False)
