"""What a server spends per player on gRPC alone: a stream per player against a message on one
shared stream (a script that prints figures, not a test; issue 13's agorà capacity).

    .venv/bin/python tests/bench/stream_cost_bench.py [--players N] [--rounds R]

A bare grpc.aio server in its own process (no interceptors, no TLS, no work: bytes in, bytes
out) and this process as its clients, on loopback. Each "player" is what an Enqueue is to a
matchmaking replica: a request in, a Waiting and an Assignment out. Four shapes, in
interleaved rounds (the machine's background load touches them alike):

- rpc: one server-streaming call per player (today's Enqueue: 8 channels, 200 at once);
- shared: every player a request on one bidirectional stream, answered with two writes;
- shared-1: the same, the two answers in one write;
- shared-batched: the same, every answer ready at once in one write (an outbox);
- both-batched: the requests too go 20 to a message (an outbox on the gateway's side).

Printed: the server's CPU per player (microseconds, from /proc: a server saturates at 1 /
that). What it tells: the part of a replica's cost per player that is gRPC's per call and
would go with a link that multiplexes the gateway's Enqueues (docs/architecture.md, "The
agorà", Capacity).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import AsyncIterator

import grpc

SHAPES = ("rpc", "shared", "shared-1", "shared-batched", "both-batched")
METHODS = {"shared": "Shared", "shared-1": "SharedOne", "shared-batched": "SharedBatched",
           "both-batched": "BothBatched"}
REQUEST = 40  # bytes: about an EnqueueRequest with its player's token reference
PER_MESSAGE = 20  # both-batched: requests a message
WAITING, ASSIGNMENT = b"w" * 20, b"a" * 60  # about the sizes of the two TicketUpdates
CHANNELS, AT_ONCE = 8, 200


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / 100


async def enqueue(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    await context.write(WAITING)
    await context.write(ASSIGNMENT)


async def shared(requests: AsyncIterator[bytes],
                 context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    async for request in requests:
        await context.write(WAITING + request[:8])
        await context.write(ASSIGNMENT + request[:8])


async def shared_one(requests: AsyncIterator[bytes],
                     context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    async for request in requests:
        await context.write(WAITING + ASSIGNMENT + request[:8])


async def shared_batched(requests: AsyncIterator[bytes],
                         context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def pump() -> None:
        async for request in requests:
            queue.put_nowait(request)
        queue.put_nowait(None)

    reader = asyncio.create_task(pump())
    done = False
    while not done:
        batch = [await queue.get()]
        while not queue.empty():
            batch.append(queue.get_nowait())
        done = batch[-1] is None
        ready = [r for r in batch if r is not None]
        if ready:
            await context.write(b"".join(WAITING + ASSIGNMENT + r[:8] for r in ready))
    await reader


async def both_batched(requests: AsyncIterator[bytes],
                       context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
    async for message in requests:
        ids = [message[i:i + 8] for i in range(0, len(message), REQUEST)]
        await context.write(b"".join(WAITING + ASSIGNMENT + x for x in ids))


async def serve(port: int) -> None:
    handlers = grpc.method_handlers_generic_handler("bench.Agora", {
        "Enqueue": grpc.unary_stream_rpc_method_handler(enqueue),
        "Shared": grpc.stream_stream_rpc_method_handler(shared),
        "SharedOne": grpc.stream_stream_rpc_method_handler(shared_one),
        "SharedBatched": grpc.stream_stream_rpc_method_handler(shared_batched),
        "BothBatched": grpc.stream_stream_rpc_method_handler(both_batched)})
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handlers,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


async def by_rpc(channels: list[grpc.aio.Channel], players: int) -> None:
    limit = asyncio.Semaphore(AT_ONCE)

    async def one(i: int) -> None:
        async with limit:
            call = channels[i % len(channels)].unary_stream("/bench.Agora/Enqueue")(
                b"x" * REQUEST)
            got = [reply async for reply in call]
            assert len(got) == 2

    await asyncio.gather(*(one(i) for i in range(players)))


async def by_stream(channel: grpc.aio.Channel, method: str, players: int) -> None:
    call = channel.stream_stream(f"/bench.Agora/{method}")()

    per = PER_MESSAGE if method == "BothBatched" else 1

    async def send() -> None:
        for first in range(0, players, per):
            await call.write(b"".join(i.to_bytes(8, "big") + b"x" * (REQUEST - 8)
                                      for i in range(first, min(players, first + per))))
        await call.done_writing()

    sender = asyncio.create_task(send())
    got = 0  # bytes answered: each player's Waiting and Assignment, with its id (once a write)
    async for reply in call:
        got += len(reply)
    await sender
    ids = 2 if method == "Shared" else 1
    assert got == players * (len(WAITING) + len(ASSIGNMENT) + 8 * ids), (method, got)


async def measure(port: int, pid: int, shape: str, players: int) -> float:
    """The server's CPU per player, in microseconds."""
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(CHANNELS)]
    try:
        for ch in channels:
            await ch.channel_ready()
        before = cpu_s(pid)
        if shape == "rpc":
            await by_rpc(channels, players)
        else:
            await by_stream(channels[0], METHODS[shape], players)
        return (cpu_s(pid) - before) / players * 1e6
    finally:
        for ch in channels:
            await ch.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--players", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    port = 50_999
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        got: dict[str, list[float]] = {shape: [] for shape in SHAPES}
        start = time.monotonic()
        for _ in range(args.rounds):
            for shape in SHAPES:
                got[shape].append(asyncio.run(measure(port, server.pid, shape, args.players)))
        print(f"{args.players:,} players a shape, {args.rounds} interleaved rounds "
              f"({time.monotonic() - start:.0f} s), grpcio {grpc.__version__}")
        for shape in SHAPES:
            xs = sorted(got[shape])
            print(f"  {shape:15} server CPU per player: median {xs[len(xs) // 2]:.0f} us "
                  f"(min {xs[0]:.0f}, max {xs[-1]:.0f})")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
