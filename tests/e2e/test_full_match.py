"""The whole cluster in separate processes: bots queue, play to a winner, results flow."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc
import pytest

from machiavelox._gen.v1 import (
    common_pb2,
    gateway_pb2,
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
)
from machiavelox.bots.player import Bot, BotOutcome
from machiavelox.local.processes import Proc, aio_channel
from machiavelox.local.up import launch, stop_all
from machiavelox.platform.errors import REASON_KEY
from tests.support.client import login


@pytest.fixture
def full_cluster(tmp_path: Path) -> Iterator[dict[str, Proc]]:
    procs = launch(0, tmp_path, tmp_path, time_scale=40.0)
    yield procs
    assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"
    for proc in procs.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"


async def _subscribe(scoring: Proc, from_offset: int, want: int,
                     timeout: float = 60) -> list[scoring_pb2.ResultRecord]:
    out: list[scoring_pb2.ResultRecord] = []
    async with aio_channel(scoring, "results-reader") as ch:
        stream = scoring_pb2_grpc.ScoringServiceStub(ch).SubscribeResults(
            scoring_pb2.SubscribeResultsRequest(from_offset=from_offset))

        async def collect() -> None:
            async for item in stream:
                out.append(item.record)
                if len(out) >= want:
                    return

        await asyncio.wait_for(collect(), timeout)
        stream.cancel()
    return out


async def test_three_bots_play_to_the_end_and_results_flow(
        full_cluster: dict[str, Proc]) -> None:
    gw = full_cluster["gateway"].address  # the apps' only endpoint: the agorà too
    scoring = full_cluster["scoring"]
    live = asyncio.create_task(_subscribe(scoring, 1, 1))
    records: dict[str, list[gateway_pb2.PlayResponse]] = {}
    async with grpc.aio.insecure_channel(gw) as g:
        bots = []
        for name in ("ava", "ben", "cid"):
            records[name] = []
            bots.append(Bot(name, g, g, interval_s=0.05, max_game_s=240, record=records[name]))
        outcomes = await asyncio.gather(*(b.run() for b in bots))
    assert len({o.table_id for o in outcomes}) == 1, "the three are matched at one table"
    results = [o.result for o in outcomes]
    assert all(r is not None for r in results)
    # the result reached scoring and a subscriber that was already listening
    stored = await live
    assert stored[0].result.table_id == outcomes[0].table_id
    assert list(stored[0].result.result.scores) == list(results[0].scores)  # type: ignore[union-attr]
    # a subscriber resuming from its offset gets every record exactly as stored
    again = await _subscribe(scoring, stored[0].offset, 1)
    assert again[0] == stored[0]
    async with aio_channel(scoring, "results-reader") as ch:
        board = await scoring_pb2_grpc.ScoringServiceStub(ch).GetLeaderboard(
            scoring_pb2.GetLeaderboardRequest(limit=10), timeout=5)
    assert {row.player_id for row in board.rows} == {"ava", "ben", "cid"}
    assert sorted(row.points for row in board.rows) == sorted(results[0].scores)  # type: ignore[union-attr]
    _check_no_hidden_cards(outcomes, records)


def _check_no_hidden_cards(outcomes: Sequence[BotOutcome],
                           records: dict[str, list[gateway_pb2.PlayResponse]]) -> None:
    """P5 across every message each player received in the match: another player's drawn card
    is never shown; the own hand only ever holds cards the player drew itself."""
    seats = {o.player: o.seat for o in outcomes}
    drawn: dict[str, set[int]] = {name: set() for name in seats}
    for name, messages in records.items():
        me = seats[name] + 1
        for msg in messages:
            if msg.WhichOneof("kind") == "event" and msg.event.kind == "drew":
                if msg.event.player == me:
                    drawn[name].update(c.index for c in msg.event.cards)
                else:
                    assert not msg.event.cards, f"{name} saw another player's draw"
    for name, messages in records.items():
        for msg in messages:
            if msg.WhichOneof("kind") == "snapshot":
                hand = {c.index for c in msg.snapshot.view.hand}
                assert hand <= drawn[name], f"{name}'s view shows cards it never drew"
    seen_by = {name: {c.index for m in msgs for c in _cards(m)} for name, msgs in records.items()}
    for name in seats:
        others_draws = set().union(*(drawn[o] for o in seats if o != name))
        leaked = others_draws & seen_by[name] - _public(records[name])
        assert not leaked, f"{name} saw hidden cards {leaked}"


def _cards(msg: gateway_pb2.PlayResponse) -> list[common_pb2.Card]:
    kind = msg.WhichOneof("kind")
    if kind == "event":
        return list(msg.event.cards)
    if kind == "snapshot":
        return list(msg.snapshot.view.hand)
    return []


def _public(messages: list[gateway_pb2.PlayResponse]) -> set[int]:
    """Cards the player legitimately saw: on the table, in pozzetti, moved in public events."""
    out: set[int] = set()
    for msg in messages:
        kind = msg.WhichOneof("kind")
        if kind == "event" and msg.event.kind != "drew":
            out.update(c.index for c in msg.event.cards)
        elif kind == "snapshot":
            v = msg.snapshot.view
            out.update(tc.card.index for m in v.table for tc in m.cards)
            out.update(c.index for s in v.seats for c in s.pozzetto)
    return out




async def test_presence_drives_absence_at_the_table(full_cluster: dict[str, Proc]) -> None:
    """A seated player who never shows a sign of life is reported silent by presence and the
    shard's engine applies M11: abandoned after 90 s of table time (x40 here)."""
    from machiavelox._gen.v1 import common_pb2, table_pb2, table_pb2_grpc
    from tests.support.client import PlayClient, login

    async with aio_channel(full_cluster["shard-0"], "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id="shard-0.absent", player_ids=["al", "bo", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE), timeout=5)
    async with grpc.aio.insecure_channel(full_cluster["gateway"].address) as ch:
        al = PlayClient(ch, await login(ch, "al"))
        al.open("shard-0.absent")
        await al.next()
        status = None
        for _ in range(40):
            al.send_raw(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat()))
            al.send_raw(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()))
            snap = await al.until(lambda r: r.WhichOneof("kind") == "snapshot")
            status = snap.snapshot.view.seats[2].status
            if status == common_pb2.PLAYER_STATUS_ABANDONED:
                break
            await asyncio.sleep(0.25)
        assert status == common_pb2.PLAYER_STATUS_ABANDONED
        assert snap.snapshot.view.seats[0].status == common_pb2.PLAYER_STATUS_ACTIVE
        await al.close()


async def test_the_agora_through_the_gateway_relays_refusals(
        full_cluster: dict[str, Proc]) -> None:
    """Apps reach matchmaking only through the gateway: it refuses a bad token itself and
    relays matchmaking's own refusals with their status and reason."""
    async with grpc.aio.insecure_channel(full_cluster["gateway"].address) as ch:
        agora = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        anonymous = agora.Enqueue(matchmaking_pb2.EnqueueRequest())
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await anonymous.read()
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = (("authorization", f"Bearer {await login(ch, 'solo')}"),)
        first = agora.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=token)
        waiting = await first.read()
        assert waiting.update.WhichOneof("kind") == "waiting"
        second = agora.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=token)
        with pytest.raises(grpc.aio.AioRpcError) as twice:
            await second.read()
        assert twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        reasons = [v for k, v in twice.value.trailing_metadata() or () if k == REASON_KEY]
        assert reasons == ["ticket/duplicate"]
        cancelled = await agora.CancelTicket(matchmaking_pb2.CancelTicketRequest(
            ticket_id=waiting.update.ticket_id), metadata=token, timeout=5)
        assert cancelled.cancelled
        first.cancel()
