"""gRPC keepalive (HTTP/2 pings with a timeout) on every connection we make or accept (issue 13,
item 5): a connection that stopped carrying bytes without closing (a half-open link: a peer
that vanished, a network path that blackholes) is seen within `DETECT_S` and closed, so the
streams over it end and their owners act (a gateway reconnects to its shard and tells the
sessions `table/unavailable`; a shard forgets a vanished gateway's subscriptions).

Clients ping every `PING_S` whether or not data flows, and give up after `PING_TIMEOUT_S`
without the ack: a dead link is seen within PING_S + PING_TIMEOUT_S. Servers ping their clients
alike (a client of ours that vanished, or an app's phone gone off the network, is dropped in
the same time), and accept a client's pings no more often than every `MIN_CLIENT_PING_S`: a
client that pings faster gets GOAWAY after `PING_STRIKES` bad pings (a ping costs the server
little, but a flood of them must not buy anything).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

PING_S = 2.0
PING_TIMEOUT_S = 2.0
DETECT_S = PING_S + PING_TIMEOUT_S  # (<= 5 s: the bound)
MIN_CLIENT_PING_S = 1.0
PING_STRIKES = 2

Options = list[tuple[str, Any]]

CLIENT: Options = [
    ("grpc.keepalive_time_ms", int(PING_S * 1000)),
    ("grpc.keepalive_timeout_ms", int(PING_TIMEOUT_S * 1000)),
    # (gRPC core >= 1.6x times a keepalive ping out with its ping timeout, 60 s by default)
    ("grpc.http2.ping_timeout_ms", int(PING_TIMEOUT_S * 1000)),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),  # (long quiet streams are pinged too)
]

SERVER: Options = [
    ("grpc.keepalive_time_ms", int(PING_S * 1000)),
    ("grpc.keepalive_timeout_ms", int(PING_TIMEOUT_S * 1000)),
    ("grpc.http2.ping_timeout_ms", int(PING_TIMEOUT_S * 1000)),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
    # (GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS: its string has no "recv")
    ("grpc.http2.min_ping_interval_without_data_ms", int(MIN_CLIENT_PING_S * 1000)),
    ("grpc.http2.max_ping_strikes", PING_STRIKES),
]


def with_options(base: Options, options: Sequence[tuple[str, Any]]) -> Options:
    """`base`, with `options` added (an option of both: the one in `options`)."""
    given = {name for name, _ in options}
    return [*(o for o in base if o[0] not in given), *options]
