"""The floor of the cluster bench: a raw two-hop gRPC echo (a helper process, not a test).

    python tests/bench/echo_server.py echo --port P
    python tests/bench/echo_server.py forward --port P --upstream 127.0.0.1:Q

`echo` serves one generic bidirectional method that sends every message back as it came.
`forward` serves the same method to clients and relays every client stream over ONE
long-lived multiplexed bidirectional stream to the echo server: each message gets a 4-byte
stream id in front on the way up, and the pump routes the answers back by that id. Messages
are raw bytes (no protobuf), so this is the cost of gRPC and asyncio alone: the leanest shape
of the gateway -> shard path. The hop between the two is in the same transport as the
gateway-shard stream of the bench (bench_common.bench_pki: mutual TLS with the forwarder as a
gateway and the echo server as a shard, unless the bench runs with --internal-tls off); the
client's hop to the forwarder is plaintext, as apps' to the gateway are behind the load
balancer.

Each process prints `ready` on stdout once it serves, stops on SIGTERM or when its standard
input closes (the bench is gone), and in any case after `--max-s` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
from bench_common import internal_channel, internal_tls

SERVICE = "bench.Echo"
METHOD = f"/{SERVICE}/Stream"


async def _until_stopped(max_s: float) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def stdin_closed() -> None:
        await asyncio.to_thread(sys.stdin.read)
        stop.set()

    watcher = asyncio.create_task(stdin_closed())
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), max_s)
    watcher.cancel()


def _server(port: int, handler: Any, internal: bool) -> grpc.aio.Server:
    """`internal`: in the bench's internal transport (as a shard's port), else plaintext."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        SERVICE, {"Stream": grpc.stream_stream_rpc_method_handler(handler)}),))
    address = f"127.0.0.1:{port}"
    bound = (internal_tls("table").add_port(server, address) if internal
             else server.add_insecure_port(address))
    if bound == 0:
        raise OSError(f"cannot listen on port {port}")
    return server


async def echo(port: int, max_s: float) -> None:
    async def stream(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        async for message in requests:
            yield message

    server = _server(port, stream, internal=True)
    await server.start()
    print("ready", flush=True)
    await _until_stopped(max_s)
    await server.stop(0.5)


class Forwarder:
    """Client streams multiplexed onto one upstream stream, answers routed back by id."""

    def __init__(self, upstream: str) -> None:
        self.channel = internal_channel(upstream, "gateway")
        self.call: Any = None
        self.lock = asyncio.Lock()  # one writer at a time on the upstream stream
        self.routes: dict[int, asyncio.Queue[bytes | None]] = {}
        self.next_id = 0

    async def open(self) -> None:
        await self.channel.channel_ready()
        self.call = self.channel.stream_stream(METHOD)()

    async def pump(self) -> None:
        while True:
            message = await self.call.read()
            if message is grpc.aio.EOF:
                return
            route = self.routes.get(int.from_bytes(message[:4], "big"))
            if route is not None:
                route.put_nowait(message[4:])

    async def stream(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        self.next_id += 1
        sid = self.next_id
        prefix = sid.to_bytes(4, "big")
        out: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.routes[sid] = out

        async def up() -> None:
            async for message in requests:
                async with self.lock:
                    await self.call.write(prefix + message)
            out.put_nowait(None)

        reader = asyncio.create_task(up())
        try:
            while True:
                answer = await out.get()
                if answer is None:
                    return
                yield answer
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            del self.routes[sid]


async def forward(port: int, upstream: str, max_s: float) -> None:
    fwd = Forwarder(upstream)
    await fwd.open()
    pump = asyncio.create_task(fwd.pump())
    server = _server(port, fwd.stream, internal=False)
    await server.start()
    print("ready", flush=True)
    await _until_stopped(max_s)
    await server.stop(0.5)
    pump.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pump
    await fwd.channel.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["echo", "forward"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", default="")
    parser.add_argument("--max-s", type=float, default=1800.0)
    args = parser.parse_args()
    if args.role == "echo":
        asyncio.run(echo(args.port, args.max_s))
    else:
        asyncio.run(forward(args.port, args.upstream, args.max_s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
