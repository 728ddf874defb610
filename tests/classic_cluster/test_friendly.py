"""Friendly classic Machiavelli tables end to end (issue 16, part 2): a shard, matchmaking and
the gateway as real processes on loopback (mutual TLS between them), the rules clock x10;
every agorà call and every Play stream goes through the gateway, as an app's would.

- four players log in, one creates a friendly classic table (two jokers, the 36-point
  opening: C2, C8), the three others join by code, the table is placed with their four seats
  and starts; they play turns through their Play streams (two batched, two not): an opening
  or a meld when the hand allows (C5, C8), else a draw; an `end` with nothing played (C5) and
  an action out of turn (C4) are refused with their reasons and change nothing; a malformed
  classic action ends its stream at once (INVALID_ARGUMENT `request/bad-card`); no snapshot
  nor event ever shows a player another's hand (P5); a Play stream cut while others play
  resumes with `last_seq`: exactly the missed events, no gap, no duplicate; the gateway's
  action metrics name the classic verbs;
- a six-player three-deck table (C1) is created and starts: 15 cards each;
- variants no table can play (six players, two decks) are refused at creation with the
  engine's reason `variant/players-decks`, and no lobby is left; classic variants on a
  Machiavelox table, and classic practice tables, are refused too;
- a Machiavelox friendly table is made as before (three seats, a Machiavelox snapshot).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import (
    bots_pb2,
    classic_pb2,
    common_pb2,
    gateway_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    table_pb2,
)
from machiavelox.classic import Seat
from machiavelox.local.processes import Proc, check_all_clean, free_port, start
from machiavelox.platform.errors import REASON_KEY
from tests.observability.conftest import scrape, value
from tests.services.matchmaking.test_matchmaking_processes import assignment
from tests.support.agora import reason, tokens
from tests.support.client import PlayClient, bearer

from .opening import melds_in, opening

pytestmark = pytest.mark.timeout(60)

KEY = "test-key-0123456789abcdef"
SEED = 1  # the shard's deals (MACHIAVELOX_TABLE_DEAL_SEED): a first player who can open
SCALE = 10  # the rules clock
TURNS = 6  # turns played at the four-player table
VARIANTS = classic_pb2.ClassicVariants(players=4, jokers=2, opening=36)
CLASSIC = classic_pb2.RULESET_CLASSIC


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("classic-friendly")
    procs: dict[str, Proc] = {}
    try:
        shard_port = free_port()
        shards = f"shard-0=127.0.0.1:{shard_port}"
        procs["shard"] = start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_TABLE_PORT": str(shard_port),
            "MACHIAVELOX_DATA_DIR": str(tmp), "MACHIAVELOX_SCORING_ADDRESS": "",
            "MACHIAVELOX_TABLE_TIME_SCALE": str(SCALE),
            "MACHIAVELOX_TABLE_DEAL_SEED": str(SEED)}, tmp)
        procs["matchmaking"] = start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": shards,
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50"}, tmp)
        procs["gateway"] = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": shards, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": procs["matchmaking"].address,
            "MACHIAVELOX_GATEWAY_RESYNC_RATE": "20", "MACHIAVELOX_GATEWAY_RESYNC_BURST": "40",
            "MACHIAVELOX_METRICS_PORT": str(free_port())}, tmp)
        yield procs
    finally:
        check_all_clean(reversed(list(procs.values())))


# ------------------------------------------------------------------------------ the agorà
async def seated(gateway: Proc, names: list[str],
                 request: matchmaking_pb2.CreateFriendlyTableRequest
                 ) -> tuple[dict[str, str], matchmaking_pb2.Assignment]:
    """`names[0]` creates a friendly table, everyone joins it by code in order (through the
    gateway); their tokens and the assignment they all got."""
    toks = await tokens(gateway, *names)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        created = await stub.CreateFriendlyTable(request, metadata=bearer(toks[names[0]]),
                                                 timeout=10)
        again = await stub.CreateFriendlyTable(request, metadata=bearer(toks[names[0]]),
                                               timeout=10)
        assert again.invite_code == created.invite_code  # a retried creation: the same lobby
        calls = [stub.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
            invite_code=created.invite_code), metadata=bearer(toks[name])) for name in names]
        got = []
        for call in calls:  # (each waits in turn: seats in join order)
            got.append((await assignment(call))[1])
        for call in calls:
            call.cancel()
    assert all(a == got[0] for a in got), "one table for all"
    assert list(got[0].player_ids) == names
    return toks, got[0]


async def refused_creation(gateway: Proc, name: str,
                           request: matchmaking_pb2.CreateFriendlyTableRequest
                           ) -> grpc.aio.AioRpcError:
    toks = await tokens(gateway, name)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.CreateFriendlyTable(request, metadata=bearer(toks[name]), timeout=10)
    return caught.value


# ------------------------------------------------------------------------------ playing
class Player:
    """One app's Play stream at a classic table (a `PlayClient`), read step by step."""

    def __init__(self, ch: grpc.aio.Channel, name: str, token: str, seat: Seat) -> None:
        self.name, self.seat = name, seat
        self.client = PlayClient(ch, token)
        self._ids = 0

    def act(self, action: classic.ClassicAction) -> str:
        self._ids += 1
        action_id = f"{self.name}-{self._ids}"
        self.client.send_raw(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id=action_id, classic_action=classic_codec.action_to_pb(action))))
        return action_id

    async def outcome(self, action: classic.ClassicAction) -> gateway_pb2.PlayResponse:
        """Its ack or refusal."""
        action_id = self.act(action)
        return await self.client.until(
            lambda r: r.WhichOneof("kind") in ("ack", "refused")
            and getattr(r, r.WhichOneof("kind")).client_action_id == action_id)

    async def view(self) -> classic_pb2.ClassicSnapshot:
        """A fresh snapshot (Resync): events go on after it."""
        self.client.send_raw(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
        got = await self.client.until(lambda r: r.WhichOneof("kind") == "classic_snapshot")
        return got.classic_snapshot

    def events(self) -> list[common_pb2.Event]:
        return [r.event for r in self.client.received if r.WhichOneof("kind") == "event"]

    def snapshots(self) -> list[classic_pb2.ClassicSnapshot]:
        return [r.classic_snapshot for r in self.client.received
                if r.WhichOneof("kind") == "classic_snapshot"]

    async def caught_up(self, seq: int) -> None:
        if not self.events() or self.events()[-1].seq < seq:
            await self.client.until(lambda r: r.WhichOneof("kind") == "event"
                                    and r.event.seq >= seq)


def hand_of(view: classic_pb2.ClassicView) -> list[classic.ClassicCard]:
    return [classic.card_at(c.index) for c in view.hand]


def check_private(players: list[Player]) -> None:
    """P5: every snapshot a player got shows their own hand only (of the others, counts),
    and the face of a drawn or penalty card reaches its drawer only."""
    for player in players:
        for snap in player.snapshots():
            view = snap.view
            assert classic_codec.seat_from_pb(view.viewer) == player.seat
            assert len(view.hand) == view.seats[player.seat].hand_count
        for ev in player.events():
            if ev.cards and ev.kind in ("drew", "penalty"):
                assert classic_codec.seat_from_pb(ev.player) == player.seat, ev
    latest = [p.snapshots()[-1].view for p in players]
    for i, view in enumerate(latest):
        for other in latest[i + 1:]:
            assert not {c.index for c in view.hand} & {c.index for c in other.hand}


def consecutive(player: Player) -> list[int]:
    seqs = [ev.seq for ev in player.events()]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "no gap, no duplicate"
    return seqs


async def play_turn(players: list[Player], ask: Player) -> gateway_pb2.PlayResponse:
    """The player on turn (as `ask` sees it) plays it: the opening or a meld when the hand
    allows (C5, C8), else a draw (which ends the turn); the last outcome."""
    view = (await ask.view()).view
    who = players[classic_codec.seat_from_pb(view.turn)]
    mine = (await who.view()).view
    hand = hand_of(mine)
    melds = (opening(hand, VARIANTS.opening) if not mine.seats[who.seat].opened
             else melds_in(hand)[:1])
    for meld in melds or ():
        done = await who.outcome(classic.Meld(who.seat, meld))
        assert done.WhichOneof("kind") == "ack", done
    done = await who.outcome(classic.End(who.seat) if melds else classic.Draw(who.seat))
    assert done.WhichOneof("kind") == "ack", done
    return done


async def resume(ch: grpc.aio.Channel, player: Player, table_id: str, token: str,
                 upto: int) -> list[int]:
    """`player`'s app opens a new Play stream from the last event it had; the seqs it gets
    until `upto` (events only: no snapshot)."""
    had = consecutive(player)[-1]
    player.client = PlayClient(ch, token)
    player.client.open(table_id, last_seq=had)
    seqs: list[int] = []
    while not seqs or seqs[-1] < upto:
        r = await player.client.next()
        assert r.WhichOneof("kind") == "event", r
        seqs.append(r.event.seq)
    assert seqs == list(range(had + 1, upto + 1)), "no gap, no duplicate"
    return seqs


def actions_counted(gateway: Proc, kind: str) -> float:
    return value(scrape(int(gateway.env["MACHIAVELOX_METRICS_PORT"])),
                 "machiavelox_gateway_actions_total", kind=kind)


# ------------------------------------------------------------------------------ the tests
async def test_four_friends_play_a_classic_table_through_the_gateway(
        cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    names = ["ann", "bob", "cy", "dan"]
    toks, table = await seated(gateway, names, matchmaking_pb2.CreateFriendlyTableRequest(
        ruleset=CLASSIC, classic=VARIANTS))
    assert table.table_id.startswith("shard-0.")
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        players = [Player(ch, n, toks[n], Seat(i)) for i, n in enumerate(names)]
        for i, p in enumerate(players):
            p.client.open(table.table_id, batched=i % 2 == 1)
            first = await p.client.next()
            assert first.WhichOneof("kind") == "classic_snapshot", first
            view = first.classic_snapshot.view
            assert first.classic_snapshot.seq == 1 and len(view.seats) == 4  # (C4's turn)
            assert len(view.hand) == 13 and view.variants.jokers == 2  # C1, C2
            assert view.variants.opening == 36 and view.stock_count == 106 - 52
        check_private(players)
        start = players[0].snapshots()[0].view
        on_turn = players[classic_codec.seat_from_pb(start.turn)]
        other = players[(on_turn.seat + 1) % 4]
        # refusals with their reasons, and nothing changed (C5, C4)
        nothing = await on_turn.outcome(classic.End(on_turn.seat))
        assert nothing.WhichOneof("kind") == "refused"
        assert nothing.refused.refusal.code == "end/nothing-played"
        early = await other.outcome(classic.Draw(other.seat))
        assert early.refused.refusal.code == "turn/not-yours"
        after = await on_turn.view()
        assert after.seq == 1 and after.view.hand == on_turn.snapshots()[0].view.hand
        assert not after.view.table and after.view.turn == start.turn
        # turns through the Play streams
        for _ in range(TURNS):
            await play_turn(players, players[0])
        last = (await players[0].view()).seq
        assert last > TURNS, "every turn made events"
        kinds = {e.kind for p in players for e in p.events()}
        assert {"opened", "melded", "drew", "turn"} <= kinds, kinds  # C8, C5
        for p in players:
            await p.caught_up(last)
        # a stream dropped while the others play resumes exactly where it was
        turn = classic_codec.seat_from_pb((await players[0].view()).view.turn)
        gone, ask = players[(turn + 1) % 4], players[turn]
        gone.client.cut()
        missed = await play_turn(players, ask)  # (on turn: not the one gone)
        now = (await ask.view()).seq
        assert missed.ack.seq <= now
        await resume(ch, gone, table.table_id, toks[gone.name], now)
        # a malformed classic action ends its stream at once (the gateway's check)
        turn = classic_codec.seat_from_pb((await ask.view()).view.turn)
        bad = players[(turn + 2) % 4]
        bad.client.send_raw(gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id="bad", classic_action=classic_pb2.ClassicAction(
                meld=common_pb2.Cards(cards=[common_pb2.Card(index=500)] * 3)))))
        with pytest.raises(grpc.aio.AioRpcError):
            await bad.client.until(lambda r: False)
        assert await bad.client.call.code() == grpc.StatusCode.INVALID_ARGUMENT
        trailers = dict(await bad.client.call.trailing_metadata() or ())
        assert trailers.get(REASON_KEY) == "request/bad-card"
        # ... and changed nothing: the table plays on, the app comes back to it
        await play_turn(players, ask)  # (on turn: not the one whose stream ended)
        end = (await ask.view()).seq
        await resume(ch, bad, table.table_id, toks[bad.name], end)
        for p in players:
            await p.caught_up(end)
            consecutive(p)
            await p.view()
        check_private(players)
        for p in players:
            await p.client.close()
    assert actions_counted(gateway, "classic-draw") + actions_counted(
        gateway, "classic-end") >= TURNS
    assert actions_counted(gateway, "classic-end") >= 1  # (the refused one at least)


async def test_a_six_player_table_with_three_decks_starts(cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    names = [f"six{i}" for i in range(6)]
    toks, table = await seated(gateway, names, matchmaking_pb2.CreateFriendlyTableRequest(
        ruleset=CLASSIC, classic=classic_pb2.ClassicVariants(players=6, decks=3)))
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        last = PlayClient(ch, toks[names[5]])
        last.open(table.table_id)
        first = await last.next()
        view = first.classic_snapshot.view
        assert len(view.seats) == 6 and len(view.hand) == 15  # C1
        assert view.stock_count == 156 - 6 * 15
        assert classic_codec.seat_from_pb(view.viewer) == Seat.P6
        await last.close()


async def test_variants_no_table_can_play_are_refused_at_creation(
        cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    bad = await refused_creation(gateway, "eve", matchmaking_pb2.CreateFriendlyTableRequest(
        ruleset=CLASSIC, classic=classic_pb2.ClassicVariants(players=6, decks=2)))
    assert bad.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert reason(bad) == "variant/players-decks"
    mixed = await refused_creation(gateway, "eve", matchmaking_pb2.CreateFriendlyTableRequest(
        kind=table_pb2.MATCH_KIND_SINGLE, classic=VARIANTS))
    assert (mixed.code(), reason(mixed)) == (grpc.StatusCode.INVALID_ARGUMENT,
                                             "table/bad-ruleset")
    practice = await refused_creation(gateway, "eve", matchmaking_pb2.CreateFriendlyTableRequest(
        ruleset=CLASSIC, classic=VARIANTS, practice_level=bots_pb2.BOT_LEVEL_EASY))
    assert reason(practice) == "practice/off"  # (this cluster runs no bot host)
    # nothing was left open: eve creates a Machiavelox table at once, then may not open a
    # classic one beside it
    toks = await tokens(gateway, "eve")
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
            kind=table_pb2.MATCH_KIND_SINGLE), metadata=bearer(toks["eve"]), timeout=10)
        with pytest.raises(grpc.aio.AioRpcError) as other:
            await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
                ruleset=CLASSIC, classic=VARIANTS), metadata=bearer(toks["eve"]), timeout=10)
        assert reason(other.value) == "lobby/open"


async def test_a_machiavelox_friendly_table_is_as_before(cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    names = ["mx1", "mx2", "mx3"]
    toks, table = await seated(gateway, names, matchmaking_pb2.CreateFriendlyTableRequest(
        kind=table_pb2.MATCH_KIND_SINGLE))
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        client = PlayClient(ch, toks["mx2"])
        client.open(table.table_id)
        first: Any = await client.next()
        assert first.WhichOneof("kind") == "snapshot" and len(first.snapshot.view.seats) == 3
        await client.close()

