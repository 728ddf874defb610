"""One step of a table, delivered to every session subscribed to it: what each seat may see.

Each session's view of an event is `Event.for_viewer(seat)` (P5: a card drawn is shown to who
drew it, to no one else). Every distinct view of an event is encoded once: when no event of the
step hides anything, straight into the first session's item, which the others copy; when one
does, the public view once for all and the owner's view once for the owner. The actor's session
gets its action's outcome (ack or refusal) in the same item as the events, so one message
carries the whole step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from machiavelox import codec
from machiavelox._gen.v1 import common_pb2

from .gateway_link import EVENT_BYTES, STEP_ITEM_BYTES, GatewayLink

Outcome = Callable[[common_pb2.Batch], None]
"""Puts an action's ack or refusal into the batch of its actor's item."""


class Redactable(Protocol):
    """An event of either ruleset (`rules.Event`, `classic.ClassicEvent`)."""

    @property
    def secret_to(self) -> Any: ...
    def for_viewer(self, viewer: Any) -> Any: ...


E = TypeVar("E", bound=Redactable)
Fill = Callable[[common_pb2.Event, Any, int, int], common_pb2.Event]
"""Makes an (empty) wire event the wire form of an event: its ruleset's codec."""


def _no_action(seq: int) -> int:
    return 0


def fan_out(table_id: str, seats: Mapping[str, object], subs: Mapping[str, GatewayLink],
            events: Sequence[tuple[int, E]], actor: str = "",
            outcome: Outcome | None = None, traceparent: str = "",
            arrival_of: Callable[[int], int] = _no_action,
            fill: Fill = codec.fill_event) -> None:
    """Put one step into the item of each subscribed session (`subs`: player -> the link of
    the gateway serving them). `traceparent`: of the sampled action that made the step;
    `arrival_of`: the arrival index of the action that produced an event (by its seq);
    `fill`: the events' ruleset's encoder."""
    if not events:
        own = subs.get(actor) if outcome is not None else None
        if own is not None and outcome is not None:
            item = own.step_item(table_id, actor, traceparent)
            outcome(item.batch)
            own.account(STEP_ITEM_BYTES)
        return
    public: Sequence[common_pb2.Event] | None = None
    owned: dict[int, tuple[object, common_pb2.Event]] = {}
    if any(ev.secret_to is not None for _, ev in events):  # something hidden (P5)
        public = [fill(common_pb2.Event(), ev.for_viewer(None), seq, arrival_of(seq))
                  for seq, ev in events]
        owned = {i: (ev.secret_to, fill(common_pb2.Event(), ev.for_viewer(ev.secret_to), seq,
                                        arrival_of(seq)))
                 for i, (seq, ev) in enumerate(events) if ev.secret_to is not None}
    # each session's item, about (an estimate, not ByteSize: this is every action's path;
    # events are tens of bytes, a few hundred with many cards)
    size = STEP_ITEM_BYTES + EVENT_BYTES * len(events)
    for player, link in subs.items():
        item = link.step_item(table_id, player, traceparent)
        batch = item.batch
        if player == actor and outcome is not None:
            outcome(batch)
        if public is None:  # the first session: encoded in place, the others copy
            add = batch.events.add
            for seq, ev in events:
                fill(add(), ev, seq, arrival_of(seq))
            public = batch.events
        elif owned:
            seat = seats[player]
            batch.events.extend([owned[i][1] if i in owned and owned[i][0] == seat else ev
                                 for i, ev in enumerate(public)])
        else:
            batch.events.extend(public)
        link.account(size)
