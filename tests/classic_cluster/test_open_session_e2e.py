"""An open classic session ended by its players between two hands (C11), end to end: scoring
(on PostgreSQL, as deployed), a shard, matchmaking and the gateway as real processes on
loopback (`cluster.classic_cluster`: mutual TLS between them, the rules clock x10, so the
pause between two hands, 10 s of table time, is 1 s).

An app creates a friendly two-player classic table with an `open` session through
matchmaking (the gateway); a `ClassicInviteBot` joins it by code and the app joins too. Both
play through their gateway Play streams: the bot as it plays any table, the app drawing on
each of its turns (C5). What it proves:

- `end_session` sent while the hand is in play (on the app's own turn, so nothing else moves)
  is refused `session/hand-in-play` (C11) and changes nothing: the same seq, the same view, the
  same turn; the hand goes on.
- Once the hand has ended (`hand-ended`), the app sends `end_session` in the pause before the
  next deal: it is accepted, the session's `ended` event reaches both seats (the app's stream;
  the bot, which never ends a session itself, stops on the ended view its own stream brought)
  and no second hand is dealt. Both see the same result: reason `open`, the lowest total
  winning (ties share it), the standings lowest total first.
- Scoring has it: a SubscribeResults subscriber reading from before the table existed gets
  report 1 (the hand, the session going on) and report 2 (the same hand and the session's end,
  `match_ended`), both ruleset classic; GetStandings (PostgreSQL) answers that end.
- The seats are free again: both join a new friendly table by code (no `ticket/seated`;
  matchmaking's seat check is slowed to an hour, so only the session's end in scoring's log,
  read by `matchmaking/results.py`, can free them). Without the report of the players' end
  (`classic_results.py`) the last two steps fail, as they do if `end_session` is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import (
    classic_pb2,
    common_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
)
from machiavelox.bots.classic_player import ClassicInviteBot, ClassicOutcome
from machiavelox.classic import Seat
from machiavelox.local.processes import Proc, aio_channel
from tests.classic_cluster.cluster import SCALE, Cluster, classic_cluster, followed
from tests.classic_cluster.test_friendly import Player
from tests.classic_cluster.test_session_e2e import join_when_free
from tests.services.matchmaking.test_lost_tables import until_assigned
from tests.support.agora import next_update, tokens
from tests.support.client import bearer

pytestmark = pytest.mark.timeout(90)

CLASSIC = classic_pb2.RULESET_CLASSIC
OPEN = classic_pb2.ClassicVariants(players=2, session=classic_pb2.CLASSIC_SESSION_KIND_OPEN)
APP, BOT = "open-app", "open-bot"
MAX_GAME_S = 60.0  # the most the bot plays (then the test fails)
MAX_READS = 2000  # the most messages the app reads in the hand (79 draws at most end it)
STEP_S = 10.0  # the longest the app waits for one message


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    with classic_cluster(tmp_path_factory.mktemp("classic-open"), "test_classic_open", {
            "MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S": "3600"}) as procs:  # results.py frees
        yield procs


@pytest.fixture
async def cluster(processes: dict[str, Proc]) -> AsyncIterator[Cluster]:
    """The processes, and a subscriber of scoring's log for the test."""
    async with followed(processes) as out:
        yield out


def on_turn(view: classic_pb2.ClassicView, seat: Seat) -> bool:
    return view.phase == classic_pb2.CLASSIC_PHASE_PLAYING and \
        view.turn == classic_codec.seat_to_pb(seat)


def still(snap: classic_pb2.ClassicSnapshot) -> tuple[int, classic_pb2.ClassicView]:
    """A snapshot but for the table's clock (a refused action lets table time pass)."""
    view = classic_pb2.ClassicView()
    view.CopyFrom(snap.view)
    view.now_ms = 0
    return snap.seq, view


async def until_my_turn(app: Player) -> None:
    """Read the app's stream until it is its turn (the first snapshot, or a `turn` event)."""
    if on_turn(app.snapshots()[-1].view, app.seat):
        return
    me = classic_codec.seat_to_pb(app.seat)
    await app.client.until(lambda r: r.WhichOneof("kind") == "event"
                           and r.event.kind == "turn" and r.event.player == me, STEP_S)


async def draw_to_the_hand_end(app: Player) -> common_pb2.Event:
    """The app draws on each of its turns (C5; the last draw from an empty stock ends the hand,
    C10) while the bot plays its own; the `hand-ended` event."""
    me = classic_codec.seat_to_pb(app.seat)
    app.act(classic.Draw(app.seat))  # (on turn now)
    for _ in range(MAX_READS):
        r = await app.client.next(STEP_S)
        kind = r.WhichOneof("kind")
        assert kind != "refused", r  # a draw on the app's own turn is always legal (C5)
        if kind != "event":
            continue
        if r.event.kind == "hand-ended":
            return r.event
        if r.event.kind == "turn" and r.event.player == me:
            app.act(classic.Draw(app.seat))
    raise AssertionError(f"the hand did not end in {MAX_READS} messages")


@contextlib.asynccontextmanager
async def running(bot: ClassicInviteBot) -> AsyncIterator[asyncio.Task[ClassicOutcome]]:
    """The bot playing (`run_classic`) in a task, cancelled on the way out if still running."""
    task = asyncio.create_task(bot.run_classic())
    try:
        yield task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_players_end_an_open_session_between_hands(cluster: Cluster) -> None:
    gateway = cluster.gateway
    toks = await tokens(gateway, APP)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        created = await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
            ruleset=CLASSIC, classic=OPEN), metadata=bearer(toks[APP]), timeout=10)
        joined = stub.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
            invite_code=created.invite_code), metadata=bearer(toks[APP]))
        assert (await next_update(joined)).WhichOneof("kind") == "waiting"
        bot = ClassicInviteBot(BOT, ch, created.invite_code, time_scale=SCALE,
                               max_game_s=MAX_GAME_S)
        async with running(bot) as playing:
            table = await until_assigned(joined)
            joined.cancel()
            names = list(table.player_ids)
            assert names == [APP, BOT]  # seats in join order
            app = Player(ch, APP, toks[APP], Seat(names.index(APP)))
            app.client.open(table.table_id)
            try:
                first = await app.client.next(STEP_S)
                assert first.WhichOneof("kind") == "classic_snapshot", first
                assert first.classic_snapshot.view.variants.session == OPEN.session

                # C11: not while a hand is in play; refused, and nothing changed
                await until_my_turn(app)
                before = await app.view()
                assert on_turn(before.view, app.seat)
                early = await app.outcome(classic.EndSession(app.seat))
                assert early.WhichOneof("kind") == "refused", early
                assert early.refused.refusal.code == "session/hand-in-play"
                after = await app.view()
                assert still(after) == still(before)  # the same seq and view: the same turn

                # the hand to its end, then end_session in the pause before the next deal
                hand_ended = await draw_to_the_hand_end(app)
                done = await app.outcome(classic.EndSession(app.seat))
                assert done.WhichOneof("kind") == "ack", (
                    "end_session in the pause was refused (the next hand dealt first?)", done)
                ended = await app.client.until(lambda r: r.WhichOneof("kind") == "event"
                                               and r.event.kind == "ended", STEP_S)
                assert ended.event.seq > hand_ended.seq
                final = (await app.view()).view
                outcome = await asyncio.wait_for(playing, MAX_GAME_S)
            finally:
                await app.client.close()
    kinds = [e.kind for e in app.events()]
    assert kinds.count("hand-ended") == 1 and "ended" in kinds
    assert kinds[kinds.index("hand-ended"):].count("turn") == 0  # no second hand was dealt
    # every seat saw the same end: reason open, the lowest total wins (C11)
    assert final.phase == classic_pb2.CLASSIC_PHASE_ENDED and final.hand_number == 1
    assert outcome.table_id == table.table_id and outcome.predictable == []
    assert outcome.result is not None and outcome.last_hand is not None
    result = final.result
    assert result == outcome.result and final.last_hand == outcome.last_hand
    assert result.reason == "open"
    totals = list(result.totals)
    assert totals == list(final.last_hand.scores)  # one hand: its scores are the totals
    low = min(totals)
    assert list(result.winners) == [classic_codec.seat_to_pb(Seat(s))
                                    for s, t in enumerate(totals) if t == low]
    assert [totals[s - 1] for s in result.standings] == sorted(totals)  # (Seat p1 = 1)

    # scoring: the hand's report, then the session's end, in its log and its store
    records = await cluster.results.until_ended(names)
    assert [r.table_id for r in records] == [table.table_id] * 2
    assert all(r.ruleset == CLASSIC and not r.competitive for r in records)
    assert [r.classic.report for r in records] == [1, 2]
    assert [len(r.classic.hands) for r in records] == [1, 1]
    assert [r.match_ended for r in records] == [False, True]
    assert not records[0].classic.HasField("session")
    assert records[0].classic.hands == records[1].classic.hands
    assert list(records[1].classic.hands[0].scores) == totals
    assert records[1].classic.session == result
    assert list(records[1].classic.standings) == list(result.standings)
    async with aio_channel(cluster.procs["scoring"], "results-reader") as sch:
        got = await scoring_pb2_grpc.ScoringServiceStub(sch).GetStandings(
            scoring_pb2.GetStandingsRequest(table_id=table.table_id), timeout=5)
    assert got.ruleset == CLASSIC and got.ended and got.hands == 1
    assert list(got.player_ids) == names and list(got.totals) == totals
    assert [row.seat for row in got.rows] == list(result.standings)
    assert {row.seat for row in got.rows if row.winner} == set(result.winners)

    # the seats are free: both join a new friendly table by code (results.py)
    toks = await tokens(gateway, *names)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        again = await stub.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
            ruleset=CLASSIC, classic=classic_pb2.ClassicVariants(players=2)),
            metadata=bearer(toks[APP]), timeout=10)
        calls = []
        try:
            for name in names:
                calls.append(await join_when_free(stub, toks[name], again.invite_code))
            assigned = await until_assigned(calls[-1])
        finally:
            for call in calls:
                call.cancel()
    assert list(assigned.player_ids) == names and assigned.table_id != table.table_id
