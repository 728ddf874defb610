"""A shard's start: every unfinished table it owns rebuilt from its journal, before the shard
reports SERVING (docs/architecture.md, "Recovery").

The store gives the shard's frames from its latest checkpoint on; each table's records are
gathered (a checkpoint's chunk is the table's whole journal, a later chunk continues it) and
replayed through the engine (`TableHost.restore`: each record's sequence number is checked).
A restored table's clock goes on from its last journaled instant (`TableHost.resume`): the
outage counts for no rule, and every seat gets one `interrupted` event. Results the tables
ended with and scoring had not stored are reported again. Then a checkpoint, so the next start
reads little.

A table whose journal does not replay (it cannot happen with what this code wrote; a foreign
or damaged store could) is lost: it is logged, counted and left out, and its seats are free
(matchmaking's placement only holds a seat while the table exists).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from machiavelox._gen.v1 import journal_pb2

from .journal_store import JournalStore, StoredFrame
from .records import JournalCorruptError
from .shard import Shard

log = logging.getLogger(__name__)


@dataclass
class Recovered:
    tables: int = 0  # restored, in play or awaiting a report
    closed: int = 0  # journals that ended (not restored)
    lost: list[str] = field(default_factory=list)  # journals that do not replay
    frames: int = 0
    seconds: float = 0.0


def gather(frames: list[StoredFrame]) -> dict[str, bytearray]:
    """Each table's journal bytes, from the frames in order."""
    journals: dict[str, bytearray] = {}
    for stored in frames:
        frame = journal_pb2.JournalFrame()
        frame.ParseFromString(stored.payload)
        for chunk in frame.chunks:
            if chunk.full:
                journals[chunk.table_id] = bytearray(chunk.records)
            else:
                journals.setdefault(chunk.table_id, bytearray()).extend(chunk.records)
    return journals


async def recover(shard: Shard, store: JournalStore) -> Recovered:
    """Attach the journal to `shard` and restore its tables; what was done."""
    started = time.monotonic()
    frames = await store.load()
    first = (frames[-1].frame_no + 1) if frames else 1
    journal = shard.attach_journal(store, first)
    done = Recovered(frames=len(frames))
    now = shard.clock()
    for table_id, data in gather(frames).items():
        try:
            host = shard.restore(table_id, bytes(data))
        except JournalCorruptError as err:
            log.error("table %s cannot be recovered (%s): it is lost", table_id, err,
                      extra={"table_id": table_id, "shard_id": shard.shard_id})
            done.lost.append(table_id)
            continue
        if host.closed:
            del shard.tables[table_id]
            shard.subs.pop(table_id, None)
            done.closed += 1
            continue
        if not host.finished:
            host.resume(now)
        done.tables += 1
    if done.tables or done.closed:
        await journal.durable()  # the interruptions
        journal.checkpoint()
    done.seconds = time.monotonic() - started
    log.info("recovered %d tables from %d journal frames in %.2f s (%d closed, %d lost)",
             done.tables, done.frames, done.seconds, done.closed, len(done.lost),
             extra={"shard_id": shard.shard_id})
    return done
