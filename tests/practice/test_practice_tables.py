"""Practice tables seated by the cluster (issue 15): matchmaking opens the person's friendly
lobby and asks the bot host (`machiavelox bot-host`, its own process) for two bots of the
chosen level, which log in and join through the gateway like any app. Over a real cluster
(`machiavelox up`'s services on loopback, mutual TLS between them, the rules clock x20):

- a person (the client's own connection) asks for an `easy` practice table, joins it, the two
  server-side bots take the other seats, the person abandons (M11.3) and the bots play the
  smazzata to its end; its result is stored unrated (competitive=false, nobody of the table on
  the leaderboard, M13.1) and the bots are released (the host's gauge back to 0);
- a person asks for a four-player classic Machiavelli practice table (issue 16; any level: the
  classic bots have one strength), three classic bots of the host's join it, the person joins,
  sees the table start with four seats in their first classic snapshot and leaves; the bots
  play the hand to its end (the person's turns ended by absence, A1), each with its actions
  and no predictable refusal; the result is stored classic and unrated, and the three bots
  are released;
- the bot host refuses bots beyond its maximum (RESOURCE_EXHAUSTED `bots/full`, none
  started) and seats them again once the earlier ones are released (here: their time is up);
- SeatBots is refused to every role but matchmaking's (PERMISSION_DENIED `auth/role`);
- the bot host down: the practice request fails UNAVAILABLE `practice/unavailable`, and no
  lobby is left (the person may open a friendly table of the other kind at once).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import (
    bots_pb2,
    bots_pb2_grpc,
    classic_pb2,
    common_pb2,
    gateway_pb2,
    matchmaking_pb2,
    scoring_pb2,
    scoring_pb2_grpc,
)
from machiavelox.bots.responses import unbatch
from machiavelox.client.connection import Gateway, Incoming, Refused
from machiavelox.local.processes import Proc, aio_channel, start, wait_healthy
from machiavelox.local.up import launch, metrics_port, stop_all
from machiavelox.platform.errors import REASON_KEY
from machiavelox.platform.tls import ROLES
from tests.faults.results import read_log
from tests.observability.conftest import scrape, value

pytestmark = pytest.mark.timeout(90)
TIME_SCALE = 20.0
STEP_S = 20.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Proc]]:
    tmp = tmp_path_factory.mktemp("practice")
    procs = launch(0, tmp, tmp, time_scale=TIME_SCALE)
    yield procs
    assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"
    for proc in procs.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"


@pytest.fixture
async def person(cluster: dict[str, Proc]) -> AsyncIterator[Gateway]:
    gw = Gateway(cluster["gateway"].address)
    try:
        yield gw
    finally:
        await gw.close()


def bots_running(host: Proc) -> float:
    return value(scrape(metrics_port(host)), "machiavelox_bot_host_bots")


async def until(check: object, what: str, limit_s: float = STEP_S) -> None:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if callable(check) and check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"not in {limit_s} s: {what}")


def reason_of(err: grpc.aio.AioRpcError) -> str:
    return next((str(v) for k, v in err.trailing_metadata() or () if k == REASON_KEY), "")


async def test_an_easy_practice_table_is_played_to_its_end_unrated(
        cluster: dict[str, Proc], person: Gateway) -> None:
    player = await person.login("pat")
    code = await person.create_friendly(practice_level="easy")
    ticket = person.join_friendly(code)
    seated: list[str] = []

    async def wait() -> None:
        async for update in ticket.updates():
            if update.WhichOneof("kind") == "assignment":
                seated[:] = [update.assignment.table_id, *update.assignment.player_ids]
                ticket.cancel()
                return

    await asyncio.wait_for(wait(), STEP_S)
    table_id, *players = seated
    assert sorted(players) == ["pat", "pat-bot1", "pat-bot2"], "two bots of the host's"
    got: list[Incoming] = []
    session = person.session(table_id, got.append)
    running = asyncio.create_task(session.run())
    try:
        def snapshots() -> list[common_pb2.PlayerView]:
            return [m.snapshot.view for m in got if isinstance(m, gateway_pb2.PlayResponse)
                    and m.WhichOneof("kind") == "snapshot"]

        await until(lambda: bool(snapshots()), "the person's first snapshot")
        session.act(rules.Abandon(rules.Seat(players.index(player))))  # M11.3: the bots go on
        records = await read_log(cluster["scoring"],
                                 lambda r: r.result.table_id == table_id)
        result = records[-1].result
        assert result.competitive is False and result.match_ended, "a friendly table's result"
        assert sorted(result.player_ids) == sorted(players)
        played = {m.event.player for m in got if isinstance(m, gateway_pb2.PlayResponse)
                  and m.WhichOneof("kind") == "event"
                  and m.event.kind in ("drew", "direct", "attached", "placed", "moved")}
        assert len(played - {common_pb2.SEAT_UNSPECIFIED}) >= 2, "both bots played"
    finally:
        session.stop()
        await asyncio.wait_for(running, STEP_S)
    async with aio_channel(cluster["scoring"], "results-reader") as channel:
        board = await scoring_pb2_grpc.ScoringServiceStub(channel).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=100), timeout=5)
    assert not {row.player_id for row in board.rows} & set(players), "unrated (M13.1)"
    await until(lambda: bots_running(cluster["bot-host"]) == 0, "the bots released")
    done = [str(r.get("msg", "")) for r in cluster["bot-host"].logs()
            if str(r.get("msg", "")).startswith("bot done")]
    assert len(done) == 2, done
    for line in done:  # each bot played its smazzata to the end, at its level, as a view allows
        assert "no result" not in line and ", 0 actions" not in line, line
        assert line.endswith(", 0 predictable refusals"), line


async def test_a_classic_practice_table_is_played_to_its_end_by_the_hosts_classic_bots(
        cluster: dict[str, Proc], person: Gateway) -> None:
    host = cluster["bot-host"]
    player = await person.login("cleo")
    created = await person.agora.CreateFriendlyTable(matchmaking_pb2.CreateFriendlyTableRequest(
        ruleset=classic_pb2.RULESET_CLASSIC, classic=classic_pb2.ClassicVariants(players=4),
        practice_level=bots_pb2.BOT_LEVEL_MEDIUM), metadata=person.metadata, timeout=15)
    await until(lambda: bots_running(host) == 3, "three classic bots started")
    ticket = person.join_friendly(created.invite_code)
    seated: list[str] = []

    async def wait() -> None:
        async for update in ticket.updates():
            if update.WhichOneof("kind") == "assignment":
                seated[:] = [update.assignment.table_id, *update.assignment.player_ids]
                ticket.cancel()
                return

    await asyncio.wait_for(wait(), STEP_S)
    table_id, *players = seated
    assert sorted(players) == ["cleo", "cleo-bot1", "cleo-bot2", "cleo-bot3"], players
    # the table started: the person's first classic snapshot has its four seats
    call = person.stub.Play(metadata=person.metadata)
    await call.write(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=table_id)))

    async def first_snapshot() -> classic_pb2.ClassicView:
        async for message in call:
            for response in unbatch(message):
                if response.WhichOneof("kind") == "classic_snapshot":
                    return response.classic_snapshot.view
        raise AssertionError("the Play stream ended without a classic snapshot")

    try:
        view = await asyncio.wait_for(first_snapshot(), STEP_S)
    finally:
        call.cancel()  # the person leaves: their turns end by absence (A1), the bots go on
    assert len(view.seats) == 4 and view.viewer == players.index(player) + 1  # (p1 = 1)
    assert view.phase == classic_pb2.CLASSIC_PHASE_PLAYING
    records = await read_log(cluster["scoring"], lambda r: r.result.table_id == table_id
                             and r.result.match_ended)
    result = records[-1].result
    assert result.ruleset == classic_pb2.RULESET_CLASSIC and result.competitive is False
    assert list(result.player_ids) == players
    await until(lambda: bots_running(host) == 0, "the classic bots released")
    done = [str(r.get("msg", "")) for r in host.logs()
            if str(r.get("msg", "")).startswith("bot done")
            and str(r.get("player", "")).startswith("cleo-bot")]
    assert len(done) == 3, done
    for line in done:  # each bot played the session to its end, at least one action of its own
        assert line.startswith("bot done: single,") and ", 0 actions" not in line, line
        assert line.endswith(", 0 predictable refusals"), line


async def _seat(channel: grpc.aio.Channel, code: str, count: int,
                level: bots_pb2.BotLevel.ValueType = bots_pb2.BOT_LEVEL_EASY) -> list[str]:
    reply = await bots_pb2_grpc.BotHostServiceStub(channel).SeatBots(
        bots_pb2.SeatBotsRequest(invite_code=code, level=level, count=count,
                                 for_player="quin"), timeout=5)
    return list(reply.bot_ids)


async def test_the_bot_host_refuses_bots_beyond_its_maximum(
        cluster: dict[str, Proc], person: Gateway, tmp_path: Path) -> None:
    """A host of at most 3 bots, each stopped 6 s after its start (MAX_BOT_S): 2 + 2 is
    refused whole, 2 + 1 is not; once the first two are released 2 more are seated."""
    host = start("small-host", "bot-host", {
        "MACHIAVELOX_BOT_HOST_GATEWAY_ADDRESS": cluster["gateway"].address,
        "MACHIAVELOX_BOT_HOST_MAX_BOTS": "3", "MACHIAVELOX_BOT_HOST_MAX_BOT_S": "6",
        "MACHIAVELOX_BOT_HOST_TIME_SCALE": str(TIME_SCALE), "MACHIAVELOX_GRACE_S": "1",
        "MACHIAVELOX_METRICS_PORT": "0"}, tmp_path)
    try:
        await person.login("quin")
        code = await person.create_friendly()  # the bots wait in its lobby (nobody fills it)
        async with aio_channel(host, "matchmaking") as channel:
            assert await _seat(channel, code, 2) == ["quin-bot1", "quin-bot2"]
            with pytest.raises(grpc.aio.AioRpcError) as full:
                await _seat(channel, code, 2)
            assert full.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert reason_of(full.value) == "bots/full"
            with pytest.raises(grpc.aio.AioRpcError) as bad:
                await _seat(channel, code, 1, level=bots_pb2.BOT_LEVEL_UNSPECIFIED)
            assert reason_of(bad.value) == "bots/bad-level"
            # (a code of no lobby: this one fails to join and is released at once)
            assert await _seat(channel, "ABCDEFGHJK", 1) == ["quin-bot3"]
            await asyncio.sleep(7)  # every bot's time is up: all released
            for _ in range(20):
                try:
                    assert len(await _seat(channel, code, 2)) == 2
                    break
                except grpc.aio.AioRpcError as err:
                    assert reason_of(err) == "bots/full", err
                    await asyncio.sleep(0.5)
            else:
                raise AssertionError("the bots were never released")
    finally:
        host.check_clean()


@pytest.mark.parametrize("role", [r for r in ROLES if r != "matchmaking"])
async def test_seat_bots_is_refused_to_every_other_role(cluster: dict[str, Proc],
                                                       role: str) -> None:
    host = cluster["bot-host"]
    before = bots_running(host)
    async with aio_channel(host, role) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _seat(channel, "ABCDEFGHJK", 2)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert reason_of(refused.value) == "auth/role"
    assert bots_running(host) == before == 0, "no bot started"


async def test_the_bot_host_down_fails_the_request_and_leaves_no_lobby(
        cluster: dict[str, Proc], person: Gateway) -> None:
    host = cluster["bot-host"]
    host.popen.terminate()  # (not `stop`: the test starts it again)
    host.popen.wait(15)
    try:
        await person.login("rex")
        with pytest.raises(Refused) as down:
            await person.create_friendly(practice_level="easy")
        assert (down.value.status, down.value.reason) == ("UNAVAILABLE", "practice/unavailable")
        # no lobby left: a friendly table of the other kind opens at once (lobby/open if not)
        assert await person.create_friendly(long_match=True)
    finally:
        assert host.respawn()
        wait_healthy(host)
