"""The items a gateway sends a shard on its Connect stream, as the tests build them."""

from __future__ import annotations

from machiavelox import codec, rules
from machiavelox._gen.v1 import table_pb2


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
