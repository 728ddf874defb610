"""Attacks on the one stream a gateway shares with a shard (docs/security.md, "The shared
gateway-shard link"): no session can break it, it survives its own failures, and it routes only
to shards that can exist. Real gateway and shard processes on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import grpc
import pytest

from machiavelox import rules
from machiavelox._gen.v1 import gateway_pb2, gateway_pb2_grpc
from machiavelox.local.processes import start
from tests.security.gateway_shard import (
    app,
    cluster,
    conclude_request,
    create_table,
    draw_index,
    refusal_code,
    rss_kb,
    seated,
    shard_env,
)
from tests.support.client import PlayClient, bearer, login

ATTACKS = 100  # the race is not hit every time: enough tries that it is
# the pace rules out of the way (their own tests are in test_pace.py)
FAST = {"MACHIAVELOX_GATEWAY_ACTION_RATE": "1000", "MACHIAVELOX_GATEWAY_ACTION_BURST": "1000"}
FAST_SHARD = {"MACHIAVELOX_TABLE_ACTION_RATE": "1000", "MACHIAVELOX_TABLE_ACTION_BURST": "1000"}


async def test_hanging_up_mid_action_never_cuts_the_link(tmp_path: Path) -> None:
    """The finding: a player seated nowhere joins a table id of the real shard that does not
    exist there, sends one action and hangs up. The gateway ended that session while its
    reader was writing into the shared stream, which cancelled the whole stream for good.
    Proves: after many such sessions (hung up at once, after a yield, after the refusal), the
    link was never broken and the players of a real table on that shard keep playing."""
    with cluster(tmp_path, gateway=FAST, shard=FAST_SHARD) as c:
        await create_table(c.shard, "shard-0.real")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.real")
            token = await login(ch, "mallory")
            for i in range(ATTACKS):
                bad = PlayClient(ch, token)
                bad.open("shard-0.nowhere")
                bad.send_raw(conclude_request(f"x{i}"))
                if i % 3 == 1:
                    await asyncio.sleep(0)
                elif i % 3 == 2:
                    with contextlib.suppress(grpc.aio.AioRpcError, EOFError, TimeoutError):
                        await bad.next(2)
                bad.cut()
                ann.act(rules.Draw(rules.Seat.P1) if i == 0 else rules.Conclude(rules.Seat.P1))
                answer = await ann.until(lambda r: r.WhichOneof("kind") in ("ack", "refused"))
                assert refusal_code(answer) in ("", "calata/none"), answer
            assert c.metric(c.gateway, "machiavelox_gateway_shard_link_failures_total",
                            'shard="shard-0"') in (None, 0.0)
            assert c.metric(c.gateway, "machiavelox_gateway_shard_link_up",
                            'shard="shard-0"') == 1.0
            await ann.close()


async def test_a_dead_shard_is_told_in_band_and_the_link_comes_back(tmp_path: Path) -> None:
    """The shard is killed (SIGKILL) under a seated player. Proves: the link's gauge goes to 0
    and the gateway logs it at WARNING; an action sent while it is down is refused at once
    in-band with `table/unavailable` and its own id (never queued to vanish); every session of
    the shard is told `table/unavailable` in-band (NOTICE_S, 1 s); a shard started again on
    the same address is reconnected to by itself, and a table on it plays through the same
    gateway."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            c.shard.popen.send_signal(signal.SIGKILL)
            c.shard.popen.wait(10)
            c.procs.remove(c.shard)  # (killed: not to be checked for a clean stop)
            notice = await ann.until(lambda r: refusal_code(r) == "table/unavailable", 10)
            assert notice.refused.client_action_id == ""
            action_id = ann.act(rules.Draw(rules.Seat.P1))
            refused = await ann.until(lambda r: r.WhichOneof("kind") == "refused", 5)
            assert (refused.refused.client_action_id, refusal_code(refused)) == (
                action_id, "table/unavailable")
            assert c.metric(c.gateway, "machiavelox_gateway_shard_link_up",
                            'shard="shard-0"') == 0.0
            warnings = [r["msg"] for r in c.gateway.logs() if r.get("level") == "WARNING"]
            assert any("shard link down" in str(m) for m in warnings), warnings
            # a new session of that shard's tables is refused at once while it is down
            bob = PlayClient(ch, await login(ch, "bob"))
            bob.open("shard-0.t1")
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await bob.next(5)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            # the shard comes back (empty: durable tables are another issue's)
            port = c.shard.address.rsplit(":", 1)[1]
            again = start("shard-again", "table", shard_env(int(port)), tmp_path,
                          allow_errors=True)
            c.procs.append(again)
            await create_table(again, "shard-0.t2")
            for _ in range(100):  # bounded: the link retries within MAX_RETRY_S
                if c.metric(c.gateway, "machiavelox_gateway_shard_link_up",
                            'shard="shard-0"') == 1.0:
                    break
                await asyncio.sleep(0.1)
            cy = await seated(ch, "cy", "shard-0.t2")
            assert await draw_index(cy, rules.Seat.P3) == 1
            for client in (ann, bob, cy):
                await client.close()


async def test_only_configured_shards_are_routed_to(tmp_path: Path) -> None:
    """The finding: the routing opened a link for any shard prefix it was given (2,000 bogus
    prefixes: +180 MB and a core busy reconnecting). Proves: a table id of a shard that is not
    configured is NOT_FOUND `table/unknown` at once, opens no link (no link series in the
    gateway's metrics), and 2,000 of them leave the gateway's memory about where it was (the
    template routing that opened links for any prefix is gone: only the list is routed);
    over-long table ids are INVALID_ARGUMENT; the real shard still plays."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            token = await login(ch, "mallory")
            metadata = bearer(token)
            before = rss_kb(c.gateway)

            stub = gateway_pb2_grpc.GatewayServiceStub(ch)

            async def bogus(table_id: str) -> grpc.StatusCode:
                call = stub.Play(iter([gateway_pb2.PlayRequest(
                    join=gateway_pb2.Join(table_id=table_id))]), metadata=metadata, timeout=10)
                with contextlib.suppress(grpc.aio.AioRpcError):
                    async for _ in call:
                        pass
                code: grpc.StatusCode = await call.code()
                return code

            for start_at in range(0, 2000, 200):
                codes = await asyncio.gather(*(bogus(f"bogus-{i}.t")
                                               for i in range(start_at, start_at + 200)))
                assert set(codes) == {grpc.StatusCode.NOT_FOUND}
            assert await bogus("x" * 200 + ".t") == grpc.StatusCode.INVALID_ARGUMENT
            assert await bogus("shard-0") == grpc.StatusCode.NOT_FOUND  # no table part
            links = c.series(c.gateway, "machiavelox_gateway_shard_link_up")
            assert links == [], links  # not even shard-0's: no session reached it
            assert rss_kb(c.gateway) - before < 40_000, (before, rss_kb(c.gateway))
            ann = await seated(ch, "ann", "shard-0.t1")
            ann.act(rules.Draw(rules.Seat.P1))
            await ann.until(lambda r: r.WhichOneof("kind") == "ack")
            await ann.close()


@pytest.mark.parametrize(("size", "code"), [(1024 * 1024, grpc.StatusCode.RESOURCE_EXHAUSTED),
                                            (1024, grpc.StatusCode.INVALID_ARGUMENT)],
                         ids=["1MB", "1kB"])
async def test_an_oversized_id_is_refused_and_reaches_no_shard(tmp_path: Path, size: int,
                                                               code: grpc.StatusCode) -> None:
    """The finding: a 4 MB `client_action_id` was forwarded (and became a span attribute);
    (1 MB here: gRPC's own default limit, 4 MiB, refused the original)
    in one frame to the shard, a few of them would pass the shard's message limit and fail the
    stream for every table. Proves: a request over 64 KiB is refused by gRPC before it is
    decoded, an id over 64 characters ends the stream with INVALID_ARGUMENT `request/bad-id`,
    the status stays short, and the table never saw the action (the next arrival is 1)."""
    with cluster(tmp_path) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            request = conclude_request("x" * size)
            ann.send_raw(request)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await ann.until(lambda r: False, 10)
            assert err.value.code() == code
            assert len(err.value.details() or "") < 200
            bob = await seated(ch, "bob", "shard-0.t1")
            assert await draw_index(bob, rules.Seat.P2) == 1
            await bob.close()


async def test_an_idle_link_is_closed_and_opened_again_on_use(tmp_path: Path) -> None:
    """Links are opened on first use and closed when idle (`gateway.linkIdleSeconds`, 1 s
    here). Proves: once the last session of a shard has left, its link closes (its series
    leaves the gateway's metrics and the shard logs the gateway's disconnection), and the next
    session opens it again and plays."""
    with cluster(tmp_path, gateway={"MACHIAVELOX_GATEWAY_LINK_IDLE_S": "1"}) as c:
        await create_table(c.shard, "shard-0.t1")
        async with app(c.gateway.address) as ch:
            ann = await seated(ch, "ann", "shard-0.t1")
            assert c.series(c.gateway, "machiavelox_gateway_shard_link_up") != []
            await ann.close()
            for _ in range(100):  # bounded: the janitor looks every idle_s / 4
                if not c.series(c.gateway, "machiavelox_gateway_shard_link_up"):
                    break
                await asyncio.sleep(0.1)
            assert c.series(c.gateway, "machiavelox_gateway_shard_link_up") == []
            assert any(r.get("msg") == "gateway disconnected" for r in c.shard.logs())
            bob = await seated(ch, "bob", "shard-0.t1")
            assert await draw_index(bob, rules.Seat.P2) == 1
            await bob.close()
