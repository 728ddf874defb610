"""Attacks on the agorà (docs/security.md, "The agorà"), over real processes on loopback: a
matchmaking and a gateway relaying it, both started as `machiavelox up` does; each test has its
own pair. Apps reach matchmaking through the gateway (the attacker's way in); some calls go to
matchmaking directly as a gateway would (mutual TLS, the gateway's certificate) to show the
limits are matchmaking's own, per player, whatever path a call takes.

No table is ever created here (no lobby fills, no group of three queues), so the shard the two
are configured with is an address nobody listens on.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import matchmaking_pb2, matchmaking_pb2_grpc, table_pb2
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, free_port, start
from machiavelox.matchmaking.codes import code_ref, new_code
from tests.support.agora import STEP_S, next_update, reason, tokens
from tests.support.client import bearer

KEY = "security-test-key-0123456789"
SINGLE = matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_SINGLE)
LONG = matchmaking_pb2.CreateFriendlyTableRequest(kind=table_pb2.MATCH_KIND_LONG)

pytestmark = pytest.mark.timeout(90)


@dataclass
class Agora:
    matchmaking: Proc
    gateway: Proc

    def metric(self, name: str, labels: str = "") -> float:
        """One series of matchmaking's /metrics (0 when absent); `labels` in the order the
        exposition writes them (sorted by name)."""
        port = self.matchmaking.env["MACHIAVELOX_METRICS_PORT"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        wanted = name + (f"{{{labels}}}" if labels else "")
        for line in text.splitlines():
            head, _, value = line.rpartition(" ")
            if head == wanted:
                return float(value)
        return 0.0

    def logs(self) -> str:
        return self.matchmaking.log_path.read_text() + self.gateway.log_path.read_text()


@pytest.fixture
def agora(tmp_path: Path) -> Iterator[Callable[..., Agora]]:
    """Starts matchmaking (with extra settings) and a gateway relaying it."""
    procs: list[Proc] = []

    def make(**settings: str) -> Agora:
        nowhere = f"shard-0=127.0.0.1:{free_port()}"
        matchmaking = start("matchmaking", "matchmaking", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_MATCHMAKING_SHARDS": nowhere,
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_METRICS_PORT": str(free_port()), "MACHIAVELOX_GRACE_S": "1",
            **{f"MACHIAVELOX_MATCHMAKING_{k}": v for k, v in settings.items()}}, tmp_path)
        procs.append(matchmaking)
        gateway = start("gateway", "gateway", {
            "MACHIAVELOX_TOKEN_KEY": KEY, "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
            "MACHIAVELOX_GATEWAY_SHARDS": nowhere, "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS": matchmaking.address,
            "MACHIAVELOX_GRACE_S": "1"}, tmp_path)
        procs.append(gateway)
        return Agora(matchmaking, gateway)

    try:
        yield make
    finally:
        check_all_clean(reversed(procs))  # the gateway first, then matchmaking




async def ending(call: Any, updates: int = 15) -> grpc.aio.AioRpcError:
    """Read a stream to its end, which must be a refusal after at most `updates` Waiting
    updates (one a second)."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        for _ in range(updates):
            response = await asyncio.wait_for(call.read(), STEP_S)
            assert response is not grpc.aio.EOF, "the stream ended with OK"
            assert response.update.WhichOneof("kind") == "waiting", response
    return err.value


# ---------------------------------------------------------------------------------- attacks
async def test_a_player_creating_lobbies_in_a_loop_holds_one(
        agora: Callable[..., Agora]) -> None:
    """One player opened 6,700 lobbies in 15 s. Proves: creating in a loop gives back the one
    open lobby (same kind), another kind is refused FAILED_PRECONDITION `lobby/open`, and the
    loop itself is paced (RESOURCE_EXHAUSTED `rate/limited` past the burst), through the
    gateway's relay and directly alike, while another player creates as usual. Without the
    defence every call makes a new lobby with a new code."""
    cluster = agora(CREATE_FRIENDLY_RATE="0.01", CREATE_FRIENDLY_BURST="8")
    toks = await tokens(cluster.gateway, "mallory", "ann")
    codes: set[str] = set()
    refused: list[str | None] = []
    async with aio_channel(cluster.gateway, "gateway") as gw, \
            aio_channel(cluster.matchmaking, "gateway") as mm:
        relay, direct = (matchmaking_pb2_grpc.MatchmakingServiceStub(ch) for ch in (gw, mm))
        for i in range(40):
            stub = relay if i % 2 == 0 else direct
            try:
                reply = await stub.CreateFriendlyTable(SINGLE, metadata=bearer(toks["mallory"]),
                                                       timeout=STEP_S)
                codes.add(reply.invite_code)
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
                assert (err.details() or "").count("rate/limited") == 1  # one prefix
                refused.append(reason(err))
        assert len(codes) == 1
        assert len(refused) == 40 - 8 and set(refused) == {"rate/limited"}
        assert cluster.metric("machiavelox_matchmaking_rate_limited_total",
                              'call="create_friendly"') == 40 - 8

        theirs = await relay.CreateFriendlyTable(LONG, metadata=bearer(toks["ann"]),
                                                 timeout=STEP_S)
        assert theirs.invite_code not in codes  # another player is not slowed down
        for stub in (relay, direct):  # ann's open lobby is a long one
            with pytest.raises(grpc.aio.AioRpcError) as open_one:
                await stub.CreateFriendlyTable(SINGLE, metadata=bearer(toks["ann"]),
                                               timeout=STEP_S)
            assert open_one.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert reason(open_one.value) == "lobby/open"
            assert (open_one.value.details() or "").count("lobby/open") == 1


async def test_a_lobby_past_its_ttl_is_gone(agora: Callable[..., Agora]) -> None:
    """Lobbies never expired. Proves: with MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S=1 a lobby that
    did not fill ends its waiters' streams with NOT_FOUND `friendly/expired` (through the
    relay), its code is NOT_FOUND `friendly/unknown-code` from then on, and its players and
    creator are free again. Without the defence the waiters wait forever (the read times out)
    and the code keeps working."""
    cluster = agora(LOBBY_TTL_S="1")
    toks = await tokens(cluster.gateway, "host", "guest", "late")
    async with aio_channel(cluster.gateway, "gateway") as gw, \
            aio_channel(cluster.matchmaking, "gateway") as mm:
        relay, direct = (matchmaking_pb2_grpc.MatchmakingServiceStub(ch) for ch in (gw, mm))
        code = (await relay.CreateFriendlyTable(SINGLE, metadata=bearer(toks["host"]),
                                                timeout=STEP_S)).invite_code
        waiters = [relay.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
            invite_code=code), metadata=bearer(toks[name])) for name in ("host", "guest")]
        try:
            for call in waiters:
                assert (await next_update(call)).WhichOneof("kind") == "waiting"
            for call in waiters:
                err = await ending(call)
                assert (err.code(), reason(err)) == (grpc.StatusCode.NOT_FOUND,
                                                     "friendly/expired")
        finally:
            for call in waiters:
                call.cancel()
        assert cluster.metric("machiavelox_matchmaking_lobbies_expired_total") == 1
        assert cluster.metric("machiavelox_matchmaking_tickets_total",
                              'outcome="expired",queue="friendly"') == 2
        for stub in (relay, direct):
            err = await ending(stub.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
                invite_code=code), metadata=bearer(toks["late"])))
            assert (err.code(), reason(err)) == (grpc.StatusCode.NOT_FOUND,
                                                 "friendly/unknown-code")
        # the guest is free to queue, the host to create another lobby
        queued = relay.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["guest"]))
        try:
            assert (await next_update(queued)).WhichOneof("kind") == "waiting"
        finally:
            queued.cancel()
        fresh = await relay.CreateFriendlyTable(LONG, metadata=bearer(toks["host"]),
                                                timeout=STEP_S)
        assert fresh.invite_code != code


async def test_guessing_invite_codes_is_throttled_and_finds_nothing(
        agora: Callable[..., Agora]) -> None:
    """Codes of 6 characters were guessed at ~400/s. Proves: a guessing loop (through the
    relay and directly, one player) gets its small burst of NOT_FOUND answers, then only
    RESOURCE_EXHAUSTED `rate/limited`, even for the right code, and never a seat; a friend
    with the code joins as usual; neither matchmaking's nor the gateway's log holds the code
    (matchmaking names it by `code_ref`). Without the defence every guess is answered and the
    logs carry the code."""
    cluster = agora(JOIN_FAILED_RATE="0.01", JOIN_FAILED_BURST="5")
    toks = await tokens(cluster.gateway, "host", "eve", "bob")
    outcomes: list[tuple[grpc.StatusCode, str | None]] = []
    async with aio_channel(cluster.gateway, "gateway") as gw, \
            aio_channel(cluster.matchmaking, "gateway") as mm:
        relay, direct = (matchmaking_pb2_grpc.MatchmakingServiceStub(ch) for ch in (gw, mm))
        code = (await relay.CreateFriendlyTable(SINGLE, metadata=bearer(toks["host"]),
                                                timeout=STEP_S)).invite_code
        host = relay.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
            invite_code=code), metadata=bearer(toks["host"]))
        friend: Any = None
        try:
            assert (await next_update(host)).WhichOneof("kind") == "waiting"
            guesses = ["X" * 4096, "not-a-code", *(new_code() for _ in range(58))]
            for i, guess in enumerate(g for g in guesses if g != code):
                stub = relay if i % 2 == 0 else direct
                err = await ending(stub.JoinFriendlyTable(
                    matchmaking_pb2.JoinFriendlyTableRequest(invite_code=guess),
                    metadata=bearer(toks["eve"])))
                outcomes.append((err.code(), reason(err)))
                assert len(err.details() or "") < 300  # no guess echoed back
            found = (grpc.StatusCode.NOT_FOUND, "friendly/unknown-code")
            limited = (grpc.StatusCode.RESOURCE_EXHAUSTED, "rate/limited")
            assert outcomes[:5] == [found] * 5
            assert outcomes[5:] == [limited] * (len(outcomes) - 5)
            err = await ending(relay.JoinFriendlyTable(  # the right code, now: refused too
                matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code),
                metadata=bearer(toks["eve"])))
            assert (err.code(), reason(err)) == limited
            assert cluster.metric("machiavelox_matchmaking_unknown_codes_total") == 5

            friend = relay.JoinFriendlyTable(matchmaking_pb2.JoinFriendlyTableRequest(
                invite_code=f"{code[:5]}-{code[5:]}".lower()), metadata=bearer(toks["bob"]))
            assert (await next_update(friend)).WhichOneof("kind") == "waiting"
        finally:
            host.cancel()
            if friend is not None:
                friend.cancel()
    logs = cluster.logs()
    assert code not in logs and code.lower() not in logs
    assert code_ref(code) in cluster.matchmaking.log_path.read_text()


async def test_an_enqueue_and_cancel_flood_is_capped(agora: Callable[..., Agora]) -> None:
    """Enqueue and CancelTicket had no limit. Proves: one player queueing and cancelling in a
    loop, half through the relay and half directly, gets exactly the burst of each call
    (the bucket is the player's, whatever the path), then RESOURCE_EXHAUSTED `rate/limited`
    that changes nothing; another player queues as usual. Without the defence every one of
    the calls is served."""
    cluster = agora(ENQUEUE_RATE="0.01", ENQUEUE_BURST="5", CANCEL_RATE="0.01",
                    CANCEL_BURST="6")
    toks = await tokens(cluster.gateway, "mallory", "ann")
    admitted = 0
    limited: list[str | None] = []
    async with aio_channel(cluster.gateway, "gateway") as gw, \
            aio_channel(cluster.matchmaking, "gateway") as mm:
        relay, direct = (matchmaking_pb2_grpc.MatchmakingServiceStub(ch) for ch in (gw, mm))
        for i in range(30):
            stub = relay if i % 2 == 0 else direct
            call = stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["mallory"]))
            try:
                ticket = (await next_update(call)).ticket_id
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
                limited.append(reason(err))
                continue
            admitted += 1
            reply = await stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(
                ticket_id=ticket), metadata=bearer(toks["mallory"]), timeout=STEP_S)
            assert reply.cancelled
            for _ in range(100):  # the cancelled ticket's stream ends normally
                if await asyncio.wait_for(call.read(), STEP_S) is grpc.aio.EOF:
                    break
        assert admitted == 5 and limited == ["rate/limited"] * 25

        cancels: list[str | None] = []
        for i in range(20):  # 5 of the 6 cancels are spent: one more, then refusals
            stub = relay if i % 2 == 0 else direct
            try:
                reply = await stub.CancelTicket(matchmaking_pb2.CancelTicketRequest(
                    ticket_id="nothing"), metadata=bearer(toks["mallory"]), timeout=STEP_S)
                cancels.append("served" if not reply.cancelled else "cancelled?")
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
                cancels.append(reason(err))
        assert cancels == ["served"] + ["rate/limited"] * 19
        assert cluster.metric("machiavelox_matchmaking_rate_limited_total",
                              'call="enqueue"') == 25
        assert cluster.metric("machiavelox_matchmaking_rate_limited_total",
                              'call="cancel"') == 19

        other = relay.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["ann"]))
        try:
            assert (await next_update(other)).WhichOneof("kind") == "waiting"
        finally:
            other.cancel()


async def test_one_account_holds_one_seat_and_one_stream_for_it(
        agora: Callable[..., Agora]) -> None:
    """Fake accounts filled capacity. Proves what one account can hold: a queue ticket or a
    lobby seat, never both nor two (FAILED_PRECONDITION `ticket/duplicate`, through the relay
    and directly), and one JoinFriendlyTable stream for its seat: a newer one replaces the
    older, which ends FAILED_PRECONDITION `ticket/replaced` (so a loop of joins cannot pile
    up streams in matchmaking). A table therefore takes three accounts. Without the defence
    the older stream keeps waiting (the read times out)."""
    cluster = agora()
    toks = await tokens(cluster.gateway, "mallory", "ann")
    async with aio_channel(cluster.gateway, "gateway") as gw, \
            aio_channel(cluster.matchmaking, "gateway") as mm:
        relay, direct = (matchmaking_pb2_grpc.MatchmakingServiceStub(ch) for ch in (gw, mm))
        code = (await relay.CreateFriendlyTable(SINGLE, metadata=bearer(toks["ann"]),
                                                timeout=STEP_S)).invite_code
        join = matchmaking_pb2.JoinFriendlyTableRequest(invite_code=code)
        queued = relay.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(toks["mallory"]))
        streams: list[Any] = [queued]
        try:
            ticket = (await next_update(queued)).ticket_id
            for stub in (relay, direct):
                for call in (stub.JoinFriendlyTable(join, metadata=bearer(toks["mallory"])),
                             stub.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                          metadata=bearer(toks["mallory"]))):
                    err = await ending(call)
                    assert (err.code(), reason(err)) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                         "ticket/duplicate")
            assert (await relay.CancelTicket(matchmaking_pb2.CancelTicketRequest(
                ticket_id=ticket), metadata=bearer(toks["mallory"]), timeout=STEP_S)).cancelled

            older = relay.JoinFriendlyTable(join, metadata=bearer(toks["mallory"]))
            streams.append(older)
            assert (await next_update(older)).WhichOneof("kind") == "waiting"
            newer = direct.JoinFriendlyTable(join, metadata=bearer(toks["mallory"]))
            streams.append(newer)
            assert (await next_update(newer)).WhichOneof("kind") == "waiting"
            err = await ending(older)
            assert (err.code(), reason(err)) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                 "ticket/replaced")
            err = await ending(relay.Enqueue(matchmaking_pb2.EnqueueRequest(),
                                             metadata=bearer(toks["mallory"])))
            assert reason(err) == "ticket/duplicate"  # the lobby seat is still held
            assert cluster.metric("machiavelox_matchmaking_tickets_total",
                                  'outcome="replaced",queue="friendly"') == 1
        finally:
            for call in streams:
                call.cancel()
