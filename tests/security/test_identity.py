"""Attacks on player identity, over real processes: gateways and matchmaking that accept the
tokens of an identity provider (MACHIAVELOX_TOKEN_MODE=oidc) run by the test on loopback (its
discovery document and JWKS, keys made by the test), and the development Login.

What they prove: only a token the provider signed, for this service, in its validity, names a
player; everything else is UNAUTHENTICATED with its reason, at the gateway's Play, through the
agorà relay and at matchmaking itself; the provider can rotate its keys without a restart and
withdraw one; a provider that hangs or is down never makes a call hang and leaves the keys
already known working; the development Login is off unless turned on, and throttled when on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from machiavelox._gen.v1 import gateway_pb2, gateway_pb2_grpc, matchmaking_pb2
from machiavelox._gen.v1 import matchmaking_pb2_grpc as mm_grpc
from machiavelox.identity.tokens import HmacTokens
from machiavelox.local.processes import Proc, aio_channel, check_all_clean, free_port, start
from machiavelox.platform.errors import REASON_KEY
from tests.security.gateway_shard import PLAYERS, create_table
from tests.support.client import PlayClient, bearer
from tests.support.identity import Provider, crafted, ec_key, provider, rsa_key

KEY = "identity-test-key-0123456789"
RSA = rsa_key("rsa-1")
EC = ec_key("ec-1")
FORGER = rsa_key("rsa-1")  # the provider's kid, the attacker's key
CALL_S = 10.0  # every call's deadline: a hang fails as DEADLINE_EXCEEDED, never blocks


@dataclass
class Cluster:
    idp: Provider
    shard: Proc
    matchmaking: Proc
    gateway: Proc
    tmp: Path


def shard_map(shard: Proc) -> str:
    return f"shard-0={shard.address}"


def gateway_env(shard: Proc, **env: str) -> dict[str, str]:
    return {"MACHIAVELOX_GATEWAY_SHARDS": shard_map(shard), "MACHIAVELOX_PRESENCE_ADDRESS": "",
            "MACHIAVELOX_METRICS_PORT": str(free_port()), "MACHIAVELOX_GRACE_S": "1", **env}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("identity")
    idp = Provider()
    idp.publish(RSA, EC)
    procs: list[Proc] = []
    try:
        shard = start("shard", "table", {
            "MACHIAVELOX_SHARD_ID": "shard-0", "MACHIAVELOX_SCORING_ADDRESS": "",
            "MACHIAVELOX_METRICS_PORT": str(free_port()), "MACHIAVELOX_GRACE_S": "1"}, tmp)
        procs.append(shard)
        matchmaking = start("matchmaking", "matchmaking", {
            **idp.env(), "MACHIAVELOX_MATCHMAKING_SHARDS": shard_map(shard),
            "MACHIAVELOX_SCORING_ADDRESS": "", "MACHIAVELOX_MATCHMAKING_TICK_MS": "50",
            "MACHIAVELOX_METRICS_PORT": str(free_port()), "MACHIAVELOX_GRACE_S": "1"}, tmp)
        procs.append(matchmaking)
        gateway = start("gateway", "gateway", gateway_env(
            shard, **idp.env(), MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS=matchmaking.address),
            tmp)
        procs.append(gateway)
        yield Cluster(idp, shard, matchmaking, gateway, tmp)
    finally:
        check_all_clean(reversed(procs))
        idp.close()


@contextlib.contextmanager
def own_gateway(cluster: Cluster, env: dict[str, str]) -> Iterator[Proc]:
    """A gateway of the test's own (a fresh key cache, a fresh Login throttle)."""
    proc = start(f"gateway-{free_port()}", "gateway", gateway_env(cluster.shard, **env),
                 cluster.tmp)
    try:
        yield proc
    finally:
        check_all_clean([proc])


_tables = itertools.count(1)


async def new_table(cluster: Cluster) -> str:
    """A new table with PLAYERS seated, created on the shard as matchmaking does."""
    table_id = f"shard-0.identity-{next(_tables)}"
    await create_table(cluster.shard, table_id)
    return table_id


def reason(err: grpc.aio.AioRpcError) -> str:
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            return str(value)
    return ""


@contextlib.asynccontextmanager
async def playing(address: str, token: str, table_id: str) -> AsyncIterator[PlayClient]:
    async with grpc.aio.insecure_channel(address) as ch:
        client = PlayClient(ch, token)
        client.open(table_id)
        try:
            yield client
        finally:
            client.call.cancel()


async def plays(address: str, token: str, table_id: str) -> None:
    """The token's player joins `table_id` and gets the snapshot of their seat."""
    async with playing(address, token, table_id) as client:
        first = await client.next(CALL_S)
        assert first.WhichOneof("kind") == "snapshot", first


async def play_refusal(address: str, token: str) -> tuple[Any, str]:
    """How a Play stream opened with `token` ends. The gateway reads the Join, then checks the
    token (so that the refusal never races the client's own write of it: a grpc-aio client
    whose write is in flight when the call ends sees INTERNAL, grpc/grpc#36066)."""
    async with grpc.aio.insecure_channel(address) as ch:
        call = gateway_pb2_grpc.GatewayServiceStub(ch).Play(metadata=bearer(token),
                                                            timeout=CALL_S)
        await call.write(gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id="shard-0.t")))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call.read()
    return refused.value.code(), reason(refused.value)


async def enqueue_refusal(channel: grpc.aio.Channel, token: str) -> tuple[Any, str]:
    call = mm_grpc.MatchmakingServiceStub(channel).Enqueue(
        matchmaking_pb2.EnqueueRequest(), metadata=bearer(token), timeout=CALL_S)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call.read()
    return refused.value.code(), reason(refused.value)


# ------------------------------------------------------------------------------ valid tokens
async def test_rs256_and_es256_tokens_queue_and_play(cluster: Cluster) -> None:
    """A player signed in with the provider (RSA or EC key) queues through the gateway's relay
    (gateway and matchmaking both verify), is seated, and plays."""
    idp = cluster.idp
    tokens = {"ann": RSA.sign(idp.claims("ann")), "bob": EC.sign(idp.claims("bob")),
              "cy": RSA.sign(idp.claims("cy"))}
    async with grpc.aio.insecure_channel(cluster.gateway.address) as ch:
        stub = mm_grpc.MatchmakingServiceStub(ch)
        calls = [stub.Enqueue(matchmaking_pb2.EnqueueRequest(), metadata=bearer(t),
                              timeout=30) for t in tokens.values()]
        try:
            tables = set()
            for call in calls:
                for _ in range(200):  # Waiting updates, then the Assignment
                    reply = await call.read()
                    assert reply is not grpc.aio.EOF
                    if reply.update.WhichOneof("kind") == "assignment":
                        assert sorted(reply.update.assignment.player_ids) == sorted(tokens)
                        tables.add(reply.update.assignment.table_id)
                        break
                else:
                    pytest.fail("no assignment")
        finally:
            for call in calls:
                call.cancel()
    [table_id] = tables
    for token in tokens.values():
        await plays(cluster.gateway.address, token, table_id)


# -------------------------------------------------------------------------------- bad tokens
def _expired(idp: Provider) -> str:
    return RSA.sign(idp.claims("ann", exp=int(time.time()) - 120))  # leeway: 30 s


def _not_yet(idp: Provider) -> str:
    return RSA.sign(idp.claims("ann", nbf=int(time.time()) + 120))


BAD: list[tuple[str, Callable[[Provider], str], str]] = [
    ("forged", lambda idp: FORGER.sign(idp.claims("ann")), "auth/bad-signature"),
    ("wrong audience", lambda idp: RSA.sign(idp.claims("ann", aud="another-api")),
     "auth/bad-audience"),
    ("wrong issuer", lambda idp: EC.sign(idp.claims("ann", iss="https://id.example")),
     "auth/bad-issuer"),
    ("expired", _expired, "auth/expired"),
    ("not yet valid", _not_yet, "auth/not-yet-valid"),
    ("alg none", lambda idp: crafted({"alg": "none", "kid": RSA.kid}, idp.claims("ann")),
     "auth/bad-algorithm"),
    ("HS256 signed with the public key", lambda idp: crafted(
        {"alg": "HS256", "kid": RSA.kid}, idp.claims("ann"), hmac_key=RSA.public_pem()),
     "auth/bad-algorithm"),
    ("no kid", lambda idp: RSA.sign(idp.claims("ann"), kid=None), "auth/no-key-id"),
    ("a name that is not a player id", lambda idp: RSA.sign(idp.claims("ann\n")),
     "auth/bad-player-id"),
    ("a development token", lambda idp: HmacTokens(KEY.encode()).issue("ann")[0],
     "auth/bad-token"),
]


@pytest.mark.parametrize(("make", "expected"), [(m, r) for _, m, r in BAD],
                         ids=[name for name, _, _ in BAD])
async def test_bad_tokens_are_refused_everywhere_with_their_reason(
        cluster: Cluster, make: Callable[[Provider], str], expected: str) -> None:
    """Each bad token is refused UNAUTHENTICATED with its reason by the gateway's Play, by the
    gateway's agorà relay (before relaying) and by matchmaking itself (its own verifier, built
    the same way), while a good token of the same player works on each."""
    token = make(cluster.idp)
    table_id = await new_table(cluster)
    unauth = grpc.StatusCode.UNAUTHENTICATED
    assert await play_refusal(cluster.gateway.address, token) == (unauth, expected)
    async with grpc.aio.insecure_channel(cluster.gateway.address) as ch:
        assert await enqueue_refusal(ch, token) == (unauth, expected)
    async with aio_channel(cluster.matchmaking, "gateway") as ch:
        assert await enqueue_refusal(ch, token) == (unauth, expected)
        good = RSA.sign(cluster.idp.claims("ann"))
        reply = await mm_grpc.MatchmakingServiceStub(ch).CancelTicket(
            matchmaking_pb2.CancelTicketRequest(ticket_id="none"), metadata=bearer(good),
            timeout=CALL_S)
        assert not reply.cancelled
    await plays(cluster.gateway.address, RSA.sign(cluster.idp.claims("ann")), table_id)


# ------------------------------------------------------------------------------ key rotation
async def test_a_rotated_key_is_accepted_without_a_restart_and_a_withdrawn_one_refused(
        cluster: Cluster) -> None:
    """The provider replaces its key: a token of the new kid plays at its first use (the
    gateway fetches the key set off its event loop), the old key's token is refused."""
    old, new = rsa_key("old-1"), ec_key("new-1")
    with provider(old) as idp, own_gateway(cluster, idp.env()) as gateway:
        table_id = await new_table(cluster)
        old_token = old.sign(idp.claims("ann"))
        await plays(gateway.address, old_token, table_id)
        idp.publish(new)
        await plays(gateway.address, new.sign(idp.claims("bob")), table_id)
        code, why = await play_refusal(gateway.address, old_token)
        assert (code, why) == (grpc.StatusCode.UNAUTHENTICATED, "auth/unknown-key")


# -------------------------------------------------------------------------- provider trouble
async def test_a_provider_that_hangs_or_is_down_hangs_no_call(cluster: Cluster) -> None:
    """While the provider accepts connections and never answers, then while it is down: a
    token of a key already known keeps playing (past the key set's refresh time too), a token
    naming an unknown key is refused UNAUTHENTICATED at once (the fetch is bounded by
    MACHIAVELOX_OIDC_FETCH_TIMEOUT_S), never DEADLINE_EXCEEDED."""
    with provider(RSA) as idp, own_gateway(cluster, idp.env(
            OIDC_FETCH_TIMEOUT_S="1", OIDC_JWKS_REFRESH_S="1")) as gateway:
        table_id = await new_table(cluster)
        known = RSA.sign(idp.claims("ann"))
        await plays(gateway.address, known, table_id)
        idp.hang()
        await asyncio.sleep(1.2)  # the cached key set is due for a refresh
        refused = (grpc.StatusCode.UNAUTHENTICATED, "auth/unknown-key")
        for i in range(3):
            await plays(gateway.address, known, table_id)
            unknown = rsa_key(f"unknown-{i}").sign(idp.claims("bob"))
            assert await play_refusal(gateway.address, unknown) == refused
        idp.close()
        await plays(gateway.address, known, table_id)
        assert await play_refusal(gateway.address, EC.sign(idp.claims("bob"))) == refused


# ------------------------------------------------------------------------- development Login
async def login(address: str, player: str) -> gateway_pb2.LoginResponse:
    async with grpc.aio.insecure_channel(address) as ch:
        reply: gateway_pb2.LoginResponse = await gateway_pb2_grpc.GatewayServiceStub(
            ch).Login(gateway_pb2.LoginRequest(player=player), timeout=CALL_S)
        return reply


async def test_the_development_login_is_off_by_default(cluster: Cluster) -> None:
    """A gateway started without MACHIAVELOX_GATEWAY_DEV_LOGIN mints no token for anyone:
    in the default (development token) mode and in oidc mode alike."""
    with own_gateway(cluster, {"MACHIAVELOX_TOKEN_KEY": KEY}) as gateway:
        for address in (gateway.address, cluster.gateway.address):
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await login(address, "ann")
            assert refused.value.code() is grpc.StatusCode.UNIMPLEMENTED
            assert reason(refused.value) == "auth/login-disabled"


async def test_the_development_login_when_on_is_throttled_per_source(cluster: Cluster) -> None:
    """MACHIAVELOX_GATEWAY_DEV_LOGIN=true: Login mints tokens that play, but one address gets
    only the burst (here 3) at once; the next is RESOURCE_EXHAUSTED `rate/limited`."""
    with own_gateway(cluster, {"MACHIAVELOX_TOKEN_KEY": KEY,
                               "MACHIAVELOX_GATEWAY_DEV_LOGIN": "true",
                               "MACHIAVELOX_GATEWAY_LOGIN_RATE": "0.01",
                               "MACHIAVELOX_GATEWAY_LOGIN_BURST": "3"}) as gateway:
        table_id = await new_table(cluster)
        tokens = [(await login(gateway.address, name)).token for name in PLAYERS]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await login(gateway.address, "dan")
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert reason(refused.value) == "rate/limited"
        for token in tokens:
            await plays(gateway.address, token, table_id)
