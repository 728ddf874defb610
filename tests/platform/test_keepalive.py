"""gRPC keepalive as we configure it (platform/keepalive.py; issue 13 item 5), on real channels
and servers over loopback.

Would fail if a quiet stream were ended by the server for pinging too often (a server option
with a name gRPC does not know keeps the 5-minute default: the stream dies with GOAWAY
`too_many_pings` after a few pings), or if a link that blackholes were not seen within
DETECT_S (the ping timeout left at gRPC's 60 s).
"""

from __future__ import annotations

import asyncio
import time

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from machiavelox.platform import keepalive
from tests.support.tcp_proxy import TcpProxy


async def _server() -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server(options=keepalive.SERVER)
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, port


async def _watch(address: str) -> tuple[grpc.aio.Channel, grpc.aio.UnaryStreamCall]:
    channel = grpc.aio.insecure_channel(address, options=keepalive.CLIENT)
    call = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
    first = await asyncio.wait_for(call.read(), 5)
    assert first.status == health_pb2.HealthCheckResponse.SERVING
    return channel, call


async def test_a_quiet_stream_lives_on() -> None:
    """Five pings' worth of silence (no data either way): the stream is still open."""
    server, port = await _server()
    channel, call = await _watch(f"127.0.0.1:{port}")
    try:
        with pytest.raises(TimeoutError):  # nothing to read, and no end of the stream
            await asyncio.wait_for(call.read(), 5 * keepalive.PING_S)
    finally:
        await channel.close()
        await server.stop(0)


async def test_a_blackholed_link_is_seen_within_the_bound() -> None:
    server, port = await _server()
    proxy = TcpProxy("127.0.0.1", port)
    await proxy.start()
    channel, call = await _watch(f"127.0.0.1:{proxy.port}")
    try:
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises(grpc.aio.AioRpcError) as ended:
            await asyncio.wait_for(call.read(), keepalive.DETECT_S + 10)
        assert ended.value.code() == grpc.StatusCode.UNAVAILABLE
        assert time.monotonic() - started < keepalive.DETECT_S + 3  # (not gRPC's 60 s)
    finally:
        await channel.close()
        await proxy.close()
        await server.stop(0)
