"""What the shard tells its tables about signs of life (issue 13, item 1; table/liveness.py):
first-hand evidence from the player's own gateway outranks the presence service, and what
nobody can see is unknown, never absence. The real Shard in process, its clock driven by the
test.

Would fail if a silence from presence counted while the player's gateway vouches for them, if a
silence were dated before the last first-hand sign, if a broken stream from presence left its
last word standing (the absence count running on), or if another gateway's link could vouch for
a session it does not hold.
"""

from __future__ import annotations

from machiavelox import rules
from machiavelox._gen.v1 import table_pb2
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.host import TableHost
from machiavelox.table.liveness import ALIVE, LEASE_MS, Heard
from machiavelox.table.shard import Shard
from tests.support.shard_items import subscribe_item

PLAYERS = ["ann", "bob", "cy"]
TABLE = "shard-0.t"
P1 = rules.Seat.P1


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


async def _noop(frame: table_pb2.ConnectResponse) -> None:
    return None


def shard() -> tuple[Shard, Clock, TableHost, GatewayLink]:
    clock = Clock()
    s = Shard("shard-0", 10, clock)
    host = s.create_table(TABLE, PLAYERS, rules.MatchKind.SINGLE, False)
    return s, clock, host, GatewayLink("gw-1", _noop)


def vouch(s: Shard, link: GatewayLink, player: str) -> None:
    s.handle(link, table_pb2.GatewayItem(table_id=TABLE, player_id=player,
                                         liveness=table_pb2.LivenessItem(alive=True)))


def absence(host: TableHost) -> int | None:
    """ann's absence count start, table time (None: not running)."""
    return host.match.table.players[P1].absence_since_ms


async def test_a_vouched_player_stays_alive_whatever_presence_says() -> None:
    s, clock, host, link = shard()
    s.handle(link, subscribe_item(TABLE, "ann"))
    s.presence("ann", Heard("silent", clock.ms - 30_000))  # presence lost her heartbeats
    s.liveness_tick()
    assert absence(host) is None
    for _ in range(10):  # her gateway keeps vouching: 100 s, never absent
        clock.ms += 10_000
        vouch(s, link, "ann")
        s.reassess_all()
    assert absence(host) is None
    last_sign = clock.ms
    clock.ms += LEASE_MS  # then her stream goes quiet: the lease runs out
    s.reassess_all()
    # silent, but dated at the last first-hand sign, not at presence's older one
    assert absence(host) == host.to_table_ms(last_sign)


async def test_a_broken_presence_stream_makes_everyone_unknown() -> None:
    s, clock, host, _ = shard()
    s.presence("ann", Heard("silent", clock.ms - 5_000))
    s.liveness_tick()
    assert absence(host) is not None
    s.presence_unknown()  # the shard lost its stream to presence
    assert absence(host) is None
    assert host.match.table.players[P1].unknown
    clock.ms += 60_000
    s.presence("ann", Heard("silent", clock.ms - 80_000))  # back: silent all along, it says
    s.liveness_tick()
    assert absence(host) == host.to_table_ms(clock.ms)  # counted from now (never backdated)
    s.presence("ann", ALIVE)
    s.liveness_tick()
    assert absence(host) is None


async def test_only_the_sessions_own_gateway_vouches() -> None:
    s, clock, host, link = shard()
    s.handle(link, subscribe_item(TABLE, "ann"))
    clock.ms += LEASE_MS
    other = GatewayLink("gw-2", _noop)
    vouch(s, other, "ann")  # a link that does not hold ann's session
    s.presence("ann", Heard("silent", clock.ms - 1_000))
    s.liveness_tick()
    assert absence(host) is not None


async def test_silences_known_in_one_tick_are_judged_together() -> None:
    """M11.3: after an outage presence makes all three silences known one message at a time,
    a millisecond apart; the shard applies them at one instant, so they mature together:
    everyone gone, not a winner by a millisecond."""
    s, clock, host, _ = shard()
    s.presence_unknown()
    clock.ms += 30_000
    for player in PLAYERS:
        s.presence(player, Heard("silent", clock.ms - 60_000))
        clock.ms += 1
    s.liveness_tick()
    starts = {p.absence_since_ms for p in host.match.table.players}
    assert len(starts) == 1
    clock.ms += 91_000
    host.advance(clock.ms)
    result = host.match.smazzate[0].result
    assert result is not None and result.ending == "everyone-gone"
