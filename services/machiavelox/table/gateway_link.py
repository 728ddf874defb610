"""A shard's side of one gateway's multiplexed stream: the items for that gateway's sessions,
sent in frames through an `Outbox` (platform/outbox.py), no frame past its bound, and no more
than `max_pending_bytes` waiting for a gateway that does not read (docs/security.md)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from machiavelox._gen.v1 import table_pb2
from machiavelox.platform.eager import start_eagerly
from machiavelox.platform.outbox import DEFAULT_WINDOW_S, Outbox

log = logging.getLogger(__name__)

# What may wait for one gateway to read (its stream's flow control holds our writes): past it
# the gateway is too slow to serve (or does not read at all) and its stream is reset; it
# reconnects and resubscribes. At 9,000 actions/s this is over 20 s of a shard's output.
MAX_PENDING_BYTES = 64 * 1024 * 1024
STEP_ITEM_BYTES, EVENT_BYTES = 96, 192  # what a step's item is counted for (generously)


class GatewayLink:
    """One gateway's multiplexed stream: an outbox flushed in frames (see `Outbox`), written
    by `write` (the stream's send)."""

    def __init__(self, name: str, write: Callable[[table_pb2.ConnectResponse], Awaitable[None]],
                 window_s: float = DEFAULT_WINDOW_S,
                 on_overflow: Callable[[], None] | None = None,
                 max_pending_bytes: int = MAX_PENDING_BYTES, gated: bool = False) -> None:
        """`gated`: the shard journals; nothing leaves before the journal write that covers
        it is stored (`stage`, `committed`, `drop_uncommitted`: a `journal.Watcher`)."""
        self.name = name
        self._outbox: Outbox[table_pb2.ConnectResponse] = Outbox(
            table_pb2.ConnectResponse, window_s, gated=gated)
        self.stage = self._outbox.stage
        self.drop_uncommitted = self._outbox.drop_uncommitted
        self._write = write
        self.on_overflow = on_overflow
        self.max_pending_bytes = max_pending_bytes
        self.overflowed = False

    def committed(self, write: int) -> None:
        """Journal writes up to `write` are stored: what they cover goes now, written from
        here (the journal write's completion) when no write is in flight, else by the pump."""
        if self._outbox.committed(write, wake=False):
            start_eagerly(self.flush(), _write_failed)

    def item(self, table_id: str, player_id: str, **fields: Any) -> table_pb2.ShardItem:
        """A new item in the frame being filled, complete (its size is accounted for)."""
        item = self._outbox.frame().items.add(table_id=table_id, player_id=player_id, **fields)
        self.account(item.ByteSize())
        return item

    def account(self, nbytes: int) -> None:
        """An item of `nbytes` (of `step_item`) is complete: it counts towards the frame's
        bound, and towards what may wait for the gateway to read (past it: `on_overflow`)."""
        outbox = self._outbox
        outbox.account(nbytes)
        if outbox.pending_bytes > self.max_pending_bytes and not self.overflowed:
            self.overflowed = True
            outbox.discard()
            if self.on_overflow is not None:
                self.on_overflow()

    def step_item(self, table_id: str, player_id: str, traceparent: str) -> table_pb2.ShardItem:
        """A new item for one step of a table (the hot path: no keyword packing)."""
        item = self._outbox.frame().items.add(table_id=table_id, player_id=player_id)
        if traceparent:
            item.traceparent = traceparent
        return item

    def close(self) -> None:
        self._outbox.close()

    def hold(self) -> None:
        """Before a frame from the gateway is handled: `flush` follows (see `Outbox.hold`)."""
        self._outbox.hold()

    async def flush(self) -> None:
        """After a frame from the gateway: its answers go out now if the stream is quiet."""
        await self._outbox.flush(self._write)

    async def pump(self) -> None:
        """Writes what `flush` leaves (paced frames under load) until `close`."""
        await self._outbox.pump(self._write)


def _write_failed(exc: BaseException) -> None:
    """A write started by `committed` failed: the stream is broken (its handler sees it end,
    the gateway reconnects and resubscribes)."""
    log.debug("write to a gateway failed: %r", exc)

