"""Classic bots on the network (issue 16, parts 2 and 3): a shard, matchmaking and the gateway
as real processes on loopback (mutual TLS between them), the rules clock x10. A person's app
creates a friendly classic table with 2 jokers and the 36-point opening (C2, C8); four
`ClassicInviteBot`s join it by invite code through the gateway and play its single hand to
the end through their Play streams (`classic_action`, `classic_snapshot`, heartbeats), one of
them losing its stream mid-game and resuming it (`Join{last_seq}`, its action in flight sent
again with the same id). Every bot sees the session's end; the hand is won by a player who
melded out (C9) or, if the stock ran out first (the seats, and so the bots' play, follow the
joins' arrival), by the fewest points in hand (C10); no refusal the bots' views could have
predicted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import grpc
import pytest

from machiavelox._gen.v1 import classic_pb2, matchmaking_pb2, matchmaking_pb2_grpc
from machiavelox.bots.classic_player import ClassicInviteBot, ClassicOutcome
from machiavelox.local.processes import Proc, check_all_clean, free_port, start
from tests.support.agora import tokens
from tests.support.client import bearer

pytestmark = pytest.mark.timeout(90)

KEY = "test-key-0123456789abcdef"
SCALE = 10  # the rules clock
SEED = 3  # the shard's deals
VARIANTS = classic_pb2.ClassicVariants(players=4, jokers=2, opening=36)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("classic-bots")
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
            "MACHIAVELOX_GATEWAY_RESYNC_RATE": "50", "MACHIAVELOX_GATEWAY_RESYNC_BURST": "100"},
            tmp)
        yield procs
    finally:
        check_all_clean(reversed(list(procs.values())))


async def test_four_classic_bots_play_a_session_to_its_end_through_the_gateway(
        cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"]
    names = ["cb1", "cb2", "cb3", "cb4"]
    toks = await tokens(gateway, names[0])
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        created = await matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(
                ruleset=classic_pb2.RULESET_CLASSIC, classic=VARIANTS),
            metadata=bearer(toks[names[0]]), timeout=10)
        bots = [ClassicInviteBot(name, ch, created.invite_code, time_scale=SCALE,
                                 max_game_s=75, drop_after=3 if i == 1 else None)
                for i, name in enumerate(names)]
        outcomes: list[ClassicOutcome] = await asyncio.gather(
            *(bot.run_classic() for bot in bots))
    assert len({o.table_id for o in outcomes}) == 1
    assert sorted(o.seat for o in outcomes if o.seat is not None) == list(range(4))
    for o in outcomes:
        assert o.result is not None and o.result.reason == "single", o  # the session ended
        assert o.predictable == [], (o.player, o.predictable)
        hand = o.last_hand
        assert hand is not None and hand.ending in ("out", "stock"), hand
        # C9 (melded out) or C10 (the stock ran out: the fewest points in hand win): either
        # way the winners pay nothing and everyone else pays for the cards they still hold
        won = {w - 1 for w in hand.winners}  # (Seat p1 = 1)
        assert won and all((hand.points[s] == 0) == (s in won) for s in range(4)), hand
        assert hand.ending == "stock" or len(won) == 1, hand
    assert outcomes[1].resumes >= 1  # the dropped stream came back
    assert sum(o.actions for o in outcomes) > 20
    winners = {tuple(o.result.winners) for o in outcomes if o.result is not None}
    assert len(winners) == 1  # every bot saw the same end
