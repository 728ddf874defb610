"""Classic Machiavelli tables on a real shard process, over real gRPC (issue 16, part 2).

One shard (its journal: SQLite in its data dir), created tables through CreateTable as
matchmaking would, played through the Connect stream as a gateway would:
- a 4-player table with two jokers and the 36-point opening (C2, C8) and 60 s turns (C7) at
  a rules clock ten times faster: a refused `end` (nothing played, C5) changes nothing; the
  first player opens with two melds (C8), the next lays a meld and the shard is killed by PID
  mid-turn, down longer than a turn; the restarted shard serves every seat the same events
  from the same seqs (no gap, no duplicate, the first one `interrupted`), the meld still on
  the table, the same player's turn still running (no `timeout`: the turn clock paused for
  the outage), then the turn given up (C6) restores the table;
- every seat's view and events show its own hand only (P5);
- a 6-player table with three decks (C1): 15 cards each;
- variants no table can play (six players with two decks) refused INVALID_ARGUMENT with the
  engine's reason `variant/players-decks`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, table_pb2, table_pb2_grpc
from machiavelox.classic import Seat
from machiavelox.local.processes import (
    Proc,
    aio_channel,
    check_all_clean,
    free_port,
    start,
    wait_healthy,
)
from machiavelox.platform.errors import REASON_KEY

from .opening import melds_in, opening
from .stream import ShardStream

SEED = 1  # the deal: p3 plays first and can open (K-Q-JK of diamonds + 2-3-4 of diamonds)
SCALE = 10  # the rules clock: a 60 s turn lasts 6 s of wall time
OUTAGE_S = 8.0  # longer than a turn at that speed
TABLE = "shard-0.classic"
PLAYERS = ["ann", "bob", "cy", "dan"]
VARIANTS = classic_pb2.ClassicVariants(players=4, decks=2, jokers=2, opening=36,
                                       turn_time_ms=60_000)


@pytest.fixture
def shard(tmp_path: Path) -> Iterator[Proc]:
    started: list[Proc] = []
    try:
        started.append(start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(free_port()),
            "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE),
            "MACHIAVELOX_TABLE_DEAL_SEED": str(SEED)}, tmp_path))
        yield started[0]
    finally:
        check_all_clean(started)


async def create(shard: Proc, table_id: str, players: list[str],
                 variants: classic_pb2.ClassicVariants) -> table_pb2.CreateTableResponse:
    async with aio_channel(shard, "matchmaking") as ch:
        made: table_pb2.CreateTableResponse = await table_pb2_grpc.TableAuthorityServiceStub(
            ch).CreateTable(table_pb2.CreateTableRequest(
                table_id=table_id, player_ids=players, ruleset=classic_pb2.RULESET_CLASSIC,
                classic=variants), timeout=10)
        return made


def hand_of(view: classic_pb2.ClassicView) -> list[classic.ClassicCard]:
    return [classic.card_at(c.index) for c in view.hand]


def seat_of(view: classic_pb2.ClassicView) -> Seat:
    return classic_codec.seat_from_pb(view.turn)


def check_private(views: dict[str, classic_pb2.ClassicView]) -> None:
    """P5: each view holds its own hand, and of the others only their counts."""
    for player, view in views.items():
        own = PLAYERS.index(player)
        assert classic_codec.seat_from_pb(view.viewer) == Seat(own)
        assert len(view.hand) == view.seats[own].hand_count
        for other, theirs in views.items():
            if other != player:
                assert not {c.index for c in view.hand} & {c.index for c in theirs.hand}
        assert sum(s.hand_count for s in view.seats) + view.stock_count == 104 + 2 \
            - sum(len(m.cards) for m in view.table)


async def test_a_classic_table_plays_survives_a_kill_and_hides_hands(shard: Proc) -> None:
    made = await create(shard, TABLE, PLAYERS, VARIANTS)
    assert made.table_id == TABLE
    async with aio_channel(shard, "gateway") as ch:
        stream = ShardStream(ch)
        views = {p: await stream.snapshot(TABLE, p) for p in PLAYERS}
        check_private(views)
        first = seat_of(views["ann"])
        assert {seat_of(v) for v in views.values()} == {first}
        assert all(len(v.hand) == 13 and v.stock_count == 106 - 52 for v in views.values())
        assert views["ann"].turn_ends_ms - views["ann"].turn_started_ms == 60_000
        p1 = PLAYERS[first]
        # C5: `end` with nothing played is refused, and changes nothing
        refused = await stream.outcome(p1, stream.act(TABLE, p1, classic.End(first)))
        assert isinstance(refused, common_pb2.Refusal)
        assert refused.code == "end/nothing-played"
        again = await stream.snapshot(TABLE, p1)
        assert list(again.hand) == list(views[p1].hand) and not again.table
        assert again.turn == views[p1].turn
        # C8: the opening, two melds from the hand worth 36 or more
        melds = opening(hand_of(views[p1]), 36)
        assert melds is not None, "the seeded deal lets the first player open"
        for meld in melds:
            ack = await stream.outcome(p1, stream.act(TABLE, p1, classic.Meld(first, meld)))
            assert isinstance(ack, common_pb2.Ack)
        ack = await stream.outcome(p1, stream.act(TABLE, p1, classic.End(first)))
        assert isinstance(ack, common_pb2.Ack)
        await stream.until(lambda: any(e.kind == "opened" for e in stream.of("dan").events))
        # the next player lays a meld, mid-turn: then the shard dies
        second = Seat((first + 1) % 4)
        p2 = PLAYERS[second]
        view2 = await stream.snapshot(TABLE, p2)
        assert seat_of(view2) == second and view2.seats[first].opened
        [laid, *_] = melds_in(hand_of(view2))
        ack = await stream.outcome(p2, stream.act(TABLE, p2, classic.Meld(second, laid)))
        assert isinstance(ack, common_pb2.Ack)
        last_seq = ack.seq
        await stream.until(lambda: all(stream.of(p).seqs[-1:] == [last_seq] for p in PLAYERS))
        views = {p: await stream.snapshot(TABLE, p) for p in PLAYERS}
        check_private(views)
        for player in PLAYERS:  # every event is a classic one, named by its enum too
            assert all(e.classic_kind != common_pb2.CLASSIC_EVENT_KIND_UNSPECIFIED
                       for e in stream.of(player).events)
        before = {p: list(stream.of(p).seqs) for p in PLAYERS}
        await stream.close()
    os.kill(shard.popen.pid, signal.SIGKILL)
    assert await asyncio.to_thread(shard.popen.wait, 10) == -signal.SIGKILL
    await asyncio.sleep(OUTAGE_S)
    assert shard.respawn()
    await asyncio.to_thread(wait_healthy, shard)
    async with aio_channel(shard, "gateway") as ch:
        stream = ShardStream(ch)
        for player in PLAYERS:  # each session resumes from its last seq
            stream.subscribe(TABLE, player, before[player][-1])
        await stream.until(lambda: all(stream.of(p).events for p in PLAYERS))
        for player in PLAYERS:
            got = stream.of(player).events
            assert got[0].seq == before[player][-1] + 1, "no gap, no duplicate"
            assert got[0].classic_kind == common_pb2.CLASSIC_EVENT_KIND_INTERRUPTED
            assert int(got[0].detail) >= OUTAGE_S * 1000
            assert all(e.kind != "timeout" for e in got), "the turn clock paused"
        after = await stream.snapshot(TABLE, p2)
        assert seat_of(after) == second and after.turn_changed
        assert [list(m.cards) for m in after.table] == [list(m.cards) for m in views[p2].table]
        assert 0 < after.time_left_ms <= 60_000
        # C6: the turn given up: the table as it was, the meld back in hand, a penalty card
        ack = await stream.outcome(p2, stream.act(TABLE, p2, classic.Restore(second)))
        assert isinstance(ack, common_pb2.Ack)
        await stream.until(lambda: any(e.kind == "penalty" for e in stream.of("ann").events))
        restored = await stream.snapshot(TABLE, p2)
        assert len(restored.table) == len(melds) and len(restored.hand) == 14
        penalty = {p: next(e for e in stream.of(p).events if e.kind == "penalty")
                   for p in PLAYERS}
        for player, ev in penalty.items():  # P5: the penalty card's face only to its owner
            assert ev.count == 1
            assert len(ev.cards) == (1 if player == p2 else 0)
        seqs = stream.of("cy").seqs
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        await stream.close()
        other = PLAYERS[(second + 1) % 4]  # a resume from the start: redacted alike (P5)
        replay = ShardStream(ch)
        replay.subscribe(TABLE, other, 1)
        await replay.until(lambda: any(e.kind == "penalty" for e in replay.of(other).events))
        assert not next(e for e in replay.of(other).events if e.kind == "penalty").cards
        await replay.close()


async def test_a_six_player_table_deals_three_decks(shard: Proc) -> None:
    players = [f"p{i}" for i in range(6)]
    await create(shard, "shard-0.six", players,
                 classic_pb2.ClassicVariants(players=6, decks=3))
    async with aio_channel(shard, "gateway") as ch:
        stream = ShardStream(ch)
        view = await stream.snapshot("shard-0.six", "p5")
        assert len(view.seats) == 6 and len(view.hand) == 15  # C1
        assert view.stock_count == 156 - 6 * 15
        assert classic_codec.seat_from_pb(view.viewer) == Seat.P6
        await stream.close()


async def test_variants_no_table_can_play_are_refused(shard: Proc) -> None:
    players = [f"p{i}" for i in range(6)]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await create(shard, "shard-0.bad", players,
                     classic_pb2.ClassicVariants(players=6, decks=2))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    reasons = dict(caught.value.trailing_metadata() or ())
    assert reasons.get(REASON_KEY) == "variant/players-decks"
    with pytest.raises(grpc.aio.AioRpcError) as wrong:  # C1: as many ids as seats
        await create(shard, "shard-0.three", players[:3], VARIANTS)
    assert wrong.value.code() == grpc.StatusCode.INVALID_ARGUMENT
