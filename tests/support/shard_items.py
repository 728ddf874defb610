"""The items a gateway sends a shard on its Connect stream, as the tests build them."""

from __future__ import annotations

from collections.abc import Callable

from machiavelox import codec, rules
from machiavelox._gen.v1 import table_pb2
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.shard import Shard


def subscribe_item(table_id: str, player: str, from_seq: int = 0) -> table_pb2.GatewayItem:
    """`player`'s session at `table_id` subscribes from `from_seq` (0: a snapshot)."""
    return table_pb2.GatewayItem(table_id=table_id, player_id=player,
                                 subscribe=table_pb2.Subscribe(from_seq=from_seq))


def action_item(table_id: str, player: str, action: rules.Action,
                action_id: str) -> table_pb2.GatewayItem:
    """`player` sends `action` at `table_id` with the app's `action_id`."""
    return table_pb2.GatewayItem(table_id=table_id, player_id=player,
                                 action=table_pb2.ActionRequestItem(
                                     client_action_id=action_id,
                                     action=codec.action_to_pb(action)))


# A match that ends at once: ann survives (M9.6 bob gives up after his Stop!, M11.6 cy
# abandons); the first Conclude is refused (no calata).
ENDING_MATCH: list[tuple[int, rules.Action]] = [
    (0, rules.Draw(rules.Seat.P1)), (0, rules.Conclude(rules.Seat.P1)),
    (1, rules.Stop(rules.Seat.P2)), (1, rules.GiveUp(rules.Seat.P2)),
    (2, rules.Abandon(rules.Seat.P3))]


async def play_to_end(shard: Shard, link: GatewayLink, table_id: str,
                      players: list[str]) -> None:
    """`players` (seated P1, P2, P3) subscribe to `table_id` and play ENDING_MATCH, one item
    a frame, as a gateway's stream handler takes them; each stored before the next."""
    items = [subscribe_item(table_id, p) for p in players]
    items += [action_item(table_id, players[seat], action, f"a{i}")
              for i, (seat, action) in enumerate(ENDING_MATCH)]
    for item in items:
        link.hold()
        later = shard.handle_frame(link, [item])
        await shard.durable()
        await link.flush()
        shard.settle(later)


def ticking_clock(start_ms: int = 1_000, step_ms: int = 3) -> Callable[[], int]:
    """A shard's rules clock that moves `step_ms` on at every reading."""
    now = [start_ms]

    def clock() -> int:
        now[0] += step_ms
        return now[0]
    return clock


def recording_link(shard: Shard) -> tuple[GatewayLink, list[table_pb2.ConnectResponse]]:
    """A gateway's link to `shard`, in process: the frames the shard sends on it are kept in
    the list (a test may clear it to drop them)."""
    sent: list[table_pb2.ConnectResponse] = []

    async def write(frame: table_pb2.ConnectResponse) -> None:
        sent.append(frame)

    link = GatewayLink("gw", write, window_s=0, gated=True)
    shard.links.add(link)
    return link, sent
