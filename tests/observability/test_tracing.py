"""Traces exported over OTLP/gRPC to a real receiver in its own process: server spans per RPC
that continue the caller's trace (W3C traceparent in the metadata), one trace across
matchmaking and a shard for a placement, one trace per action across the gateway and the
shard, and a lost conflict (M6.4) linked to the action that won it."""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable
from typing import Any

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import (
    matchmaking_pb2,
    matchmaking_pb2_grpc,
    presence_pb2,
    presence_pb2_grpc,
    scoring_pb2,
    scoring_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)
from machiavelox.local.processes import aio_channel
from machiavelox.platform.telemetry import Attr, SpanName
from tests.support.client import PlayClient, hmac_bearer, login
from tests.support.otlp_receiver import Receiver, Span

from .conftest import KEY, Services

pytestmark = pytest.mark.timeout(120)


def new_traceparent() -> tuple[str, str, str]:
    """(traceparent, trace id, span id) of a sampled span the test pretends to be in."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def find(spans: list[Span], **want: Any) -> list[Span]:
    return [s for s in spans if all(s.get(k) == v for k, v in want.items())]


def has(**want: Any) -> Callable[[list[Span]], bool]:
    return lambda spans: bool(find(spans, **want))


async def test_server_spans_continue_the_callers_trace(traced_services: Services,
                                                       receiver: Receiver) -> None:
    scoring = traced_services.scoring()
    presence = traced_services.presence()
    shard = traced_services.shard("shard-0")
    matchmaking = traced_services.matchmaking({"shard-0": shard})
    calls = {}  # method -> (trace id, parent span id)

    async with aio_channel(scoring, "results-reader") as ch:
        stub = scoring_pb2_grpc.ScoringServiceStub(ch)
        tp, tid, sid = new_traceparent()
        await stub.GetLeaderboard(scoring_pb2.GetLeaderboardRequest(),
                                  metadata=(("traceparent", tp),), timeout=5)
        calls["machiavelox.v1.ScoringService/GetLeaderboard"] = (tid, sid)
        tp, tid, sid = new_traceparent()
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.GetStandings(scoring_pb2.GetStandingsRequest(),
                                    metadata=(("traceparent", tp),), timeout=5)
        calls["machiavelox.v1.ScoringService/GetStandings"] = (tid, sid)
    async with aio_channel(presence, "gateway") as ch:
        tp, tid, sid = new_traceparent()
        await presence_pb2_grpc.PresenceServiceStub(ch).Heartbeat(
            presence_pb2.HeartbeatRequest(player_id="ann"), metadata=(("traceparent", tp),),
            timeout=5)
        calls["machiavelox.v1.PresenceService/Heartbeat"] = (tid, sid)
    async with aio_channel(matchmaking, "gateway") as ch:
        tp, tid, sid = new_traceparent()
        await matchmaking_pb2_grpc.MatchmakingServiceStub(ch).CreateFriendlyTable(
            matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE),
            metadata=(*hmac_bearer(KEY, "ann"), ("traceparent", tp)), timeout=5)
        calls["machiavelox.v1.MatchmakingService/CreateFriendlyTable"] = (tid, sid)
    # A call without a traceparent starts a trace of its own.
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).GetLoad(table_pb2.GetLoadRequest(),
                                                                    timeout=5)

    spans = receiver.wait_for(lambda got: all(
        find(got, name=name, trace_id=tid) for name, (tid, _) in calls.items())
        and bool(find(got, name="machiavelox.v1.TableAuthorityService/GetLoad")))
    services = {"ScoringService": "machiavelox-scoring", "PresenceService": "machiavelox-presence",
                "MatchmakingService": "machiavelox-matchmaking"}
    for name, (trace_id, parent) in calls.items():
        [span] = find(spans, name=name, trace_id=trace_id)
        assert span["kind"] == "SERVER"
        assert span["parent_span_id"] == parent, "the caller's span is the parent"
        assert span["service"] == services[name.split(".")[-1].split("/")[0]]
        service, _, method = name.partition("/")
        assert span["attributes"][Attr.RPC_SYSTEM] == "grpc"
        assert span["attributes"][Attr.RPC_SERVICE] == service
        assert span["attributes"][Attr.RPC_METHOD] == method
    refused = find(spans, name="machiavelox.v1.ScoringService/GetStandings")[0]
    invalid = grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert refused["attributes"][Attr.RPC_GRPC_STATUS_CODE] == invalid
    assert refused["attributes"][Attr.REASON] == "standings/invalid"
    assert refused["status"] == "UNSET", "a refusal is an answer, not a server error"
    ok = find(spans, name="machiavelox.v1.ScoringService/GetLeaderboard")[0]
    assert ok["attributes"][Attr.RPC_GRPC_STATUS_CODE] == 0
    [root] = find(spans, name="machiavelox.v1.TableAuthorityService/GetLoad")
    assert root["parent_span_id"] == "" and root["service"] == "machiavelox-table"
    assert not [s for s in spans if s["name"].startswith("grpc.health")], "probes untraced"
    assert {s["resource"].get("service.namespace") for s in spans} == {"machiavelox"}


async def test_a_placement_is_one_trace_from_matchmaking_to_the_shard(
        traced_services: Services, receiver: Receiver) -> None:
    shard = traced_services.shard("shard-0")
    matchmaking = traced_services.matchmaking({"shard-0": shard})
    players = ("ann", "bob", "cy")
    async with aio_channel(matchmaking, "gateway") as ch:
        stub = matchmaking_pb2_grpc.MatchmakingServiceStub(ch)
        streams = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=hmac_bearer(KEY, p))
                   for p in players]
        tables = set()
        for stream in streams:
            async for reply in stream:
                if reply.update.WhichOneof("kind") == "assignment":
                    tables.add(reply.update.assignment.table_id)
                    break
            stream.cancel()
    [table_id] = tables

    spans = receiver.wait_for(lambda got: bool(
        find(got, name=SpanName.MATCHMAKING_PLACE)
        and find(got, name="machiavelox.v1.TableAuthorityService/CreateTable", kind="SERVER")
        and len(find(got, name="machiavelox.v1.MatchmakingService/Enqueue")) == 3))
    [place] = find(spans, name=SpanName.MATCHMAKING_PLACE)
    assert place["service"] == "machiavelox-matchmaking" and place["parent_span_id"] == ""
    in_trace = find(spans, trace_id=place["trace_id"])
    [client] = find(in_trace, name="machiavelox.v1.TableAuthorityService/CreateTable",
                    kind="CLIENT")
    [server] = find(in_trace, name="machiavelox.v1.TableAuthorityService/CreateTable",
                    kind="SERVER")
    assert client["service"] == "machiavelox-matchmaking"
    assert client["parent_span_id"] == place["span_id"]
    assert server["service"] == "machiavelox-table"
    assert server["parent_span_id"] == client["span_id"], "parent-child across processes"
    assert server["attributes"][Attr.RPC_GRPC_STATUS_CODE] == 0
    # The placement links to the Enqueue stream of each player it seated.
    enqueues = {s["span_id"]
                for s in find(spans, name="machiavelox.v1.MatchmakingService/Enqueue")}
    assert {link["span_id"] for link in place["links"]} == enqueues
    assert {link["attributes"][Attr.PLAYER] for link in place["links"]} == set(players)
    assert table_id.startswith("shard-0.")


async def test_one_action_is_one_trace_across_the_gateway_and_the_shard(
        traced_services: Services, receiver: Receiver) -> None:
    shard = traced_services.shard("shard-0")
    gateway = traced_services.gateway({"shard-0": shard})
    table = "shard-0.traced"
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table, player_ids=["ann", "bob", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE, competitive=True),
            timeout=5)
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        clients = {}
        for name in ("ann", "bob", "cy"):
            client = PlayClient(ch, await login(ch, name))
            client.open(table)
            await client.until(lambda r: r.WhichOneof("kind") == "snapshot")
            clients[name] = client
        clients["ann"].act(rules.Draw(rules.Seat.P1))
        await clients["ann"].until(lambda r: r.WhichOneof("kind") == "ack")
        for client in clients.values():
            await client.until(lambda r: r.WhichOneof("kind") == "event")
            await client.close()

    spans = receiver.wait_for(lambda got: bool(find(got, name=SpanName.GATEWAY_ACTION)) and len(
        find(got, name=SpanName.GATEWAY_DELIVER)) >= 3, timeout_s=10)
    [action] = find(spans, name=SpanName.GATEWAY_ACTION)
    assert action["service"] == "machiavelox-gateway" and action["parent_span_id"] == ""
    attrs = action["attributes"]
    assert attrs[Attr.PLAYER] == "ann" and attrs[Attr.TABLE] == table
    assert attrs[Attr.ACTION_KIND] == "draw" and attrs[Attr.OUTCOME] == "accepted"
    trace = {s["span_id"]: s for s in find(spans, trace_id=action["trace_id"])}

    def descends(span: Span) -> bool:
        while span["parent_span_id"]:
            if span["parent_span_id"] == action["span_id"]:
                return True
            parent = trace.get(span["parent_span_id"])
            if parent is None:
                return False
            span = parent
        return False

    [queued] = [s for s in trace.values() if s["name"] == SpanName.SHARD_QUEUE]
    [applied] = [s for s in trace.values() if s["name"] == SpanName.SHARD_APPLY]
    for span in (queued, applied):
        assert span["service"] == "machiavelox-table" and descends(span)
    assert applied["attributes"][Attr.SEQ] == 1
    assert applied["attributes"][Attr.ARRIVAL] == 1
    assert applied["attributes"][Attr.OUTCOME] == "accepted"
    delivered = [s for s in trace.values() if s["name"] == SpanName.GATEWAY_DELIVER]
    assert {s["attributes"][Attr.PLAYER] for s in delivered} == {"ann", "bob", "cy"}
    assert all(descends(s) for s in delivered)


def contended_card(seed: int) -> tuple[int, tuple[rules.Card, ...]] | None:
    """With the deal of `seed`: how many draws give p1 a regular meld of three, and the meld."""
    deal = rules.shuffled_deal(seed)
    for draws in range(3, 12):
        for trio in itertools.combinations(deal.talloni[0][:draws], 3):
            if rules.is_regular(trio):
                return draws, trio
    return None


async def test_a_lost_conflict_links_to_the_winning_action(traced_services: Services,
                                                            receiver: Receiver) -> None:
    """p1 puts down a meld; p2 takes one of its cards (a hold, M6.1); p3 tries to take the
    same card and is refused card/held: p2 was faster (M6.4). p3's spans name p2's sequence
    number and link to p2's shard.apply span."""
    seed, (draws, trio) = next((s, found) for s in range(1000)
                               if (found := contended_card(s)) is not None)
    deal = rules.shuffled_deal(seed)
    shard = traced_services.shard("shard-0", MACHIAVELOX_TABLE_DEAL_SEED=str(seed))
    gateway = traced_services.gateway({"shard-0": shard})
    table = "shard-0.contended"
    async with aio_channel(shard, "matchmaking") as ch:
        await table_pb2_grpc.TableAuthorityServiceStub(ch).CreateTable(
            table_pb2.CreateTableRequest(table_id=table, player_ids=["ann", "bob", "cy"],
                                         kind=table_pb2.MATCH_KIND_SINGLE, competitive=True),
            timeout=5)
    card = trio[0]
    async with grpc.aio.insecure_channel(gateway.address) as ch:
        clients = {}
        for name in ("ann", "bob", "cy"):
            clients[name] = PlayClient(ch, await login(ch, name))
            clients[name].open(table, batched=True)
            await clients[name].until(lambda r: r.WhichOneof("kind") == "snapshot")

        async def play(name: str, action: rules.Action) -> Any:
            action_id = clients[name].act(action)
            return await clients[name].until(
                lambda r: r.WhichOneof("kind") in ("ack", "refused")
                and getattr(r, r.WhichOneof("kind")).client_action_id == action_id)

        for _ in range(draws):
            await play("ann", rules.Draw(rules.Seat.P1))
        await play("ann", rules.Declare(rules.Seat.P1, trio))
        direct = await play("ann", rules.Direct(rules.Seat.P1, trio))
        assert direct.WhichOneof("kind") == "ack"
        meld = 1  # the first meld of the table
        for name, seat in (("bob", rules.Seat.P2), ("cy", rules.Seat.P3)):
            await play(name, rules.Draw(seat))
            await play(name, rules.Declare(seat, (deal.talloni[seat][0],)))
        won = await play("bob", rules.Take(rules.Seat.P2, card, meld))
        assert won.WhichOneof("kind") == "ack", won
        lost = await play("cy", rules.Take(rules.Seat.P3, card, meld))
        assert lost.WhichOneof("kind") == "refused"
        assert lost.refused.refusal.code == "card/held"
        for client in clients.values():
            await client.close()

    def applied_take(spans: list[Span], player: str) -> list[Span]:
        return [s for s in find(spans, name=SpanName.SHARD_APPLY)
                if s["attributes"][Attr.PLAYER] == player
                and s["attributes"][Attr.ACTION_KIND] == "take"]

    def exported(got: list[Span]) -> bool:
        """Both shard spans and the loser's gateway span are in: each process exports its
        own batches, so the shard's may come before the gateway's."""
        losers = applied_take(got, "cy")
        return bool(losers) and bool(applied_take(got, "bob")) and bool(
            find(got, name=SpanName.GATEWAY_ACTION, trace_id=losers[0]["trace_id"]))

    spans = receiver.wait_for(exported, timeout_s=10)
    [winner] = applied_take(spans, "bob")
    [loser] = applied_take(spans, "cy")
    assert winner["attributes"][Attr.SEQ] == won.ack.seq
    assert loser["attributes"][Attr.OUTCOME] == "refused"
    assert loser["attributes"][Attr.REFUSAL_CODE] == "card/held"
    assert loser["attributes"][Attr.WINNER_SEQ] == won.ack.seq
    assert [(link["trace_id"], link["span_id"]) for link in loser["links"]] == [
        (winner["trace_id"], winner["span_id"])]
    assert loser["trace_id"] != winner["trace_id"]  # two actions, two traces, one link
    [gateway_side] = [s for s in find(spans, name=SpanName.GATEWAY_ACTION,
                                      trace_id=loser["trace_id"])]
    assert gateway_side["attributes"][Attr.REFUSAL_CODE] == "card/held"
