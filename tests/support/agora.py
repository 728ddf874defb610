"""Helpers of the tests that call the agorà (matchmaking, directly or through the gateway)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from machiavelox._gen.v1 import matchmaking_pb2
from machiavelox.local.processes import Proc, aio_channel
from machiavelox.platform.errors import REASON_KEY
from tests.support.client import login

STEP_S = 10.0  # the longest any single expected answer may take


def reason(err: grpc.aio.AioRpcError) -> str | None:
    """The machine-readable reason of a refusal (the `machiavelox-reason` trailer)."""
    for key, value in err.trailing_metadata() or ():
        if key == REASON_KEY:
            return str(value)
    return None


async def tokens(gateway: Proc, *names: str) -> dict[str, str]:
    """Development tokens for `names`, from the gateway's Login."""
    async with aio_channel(gateway, "gateway") as ch:
        return {name: await login(ch, name) for name in names}


async def next_update(call: Any) -> matchmaking_pb2.TicketUpdate:
    """The stream's next update; its refusal raised as AioRpcError."""
    response = await asyncio.wait_for(call.read(), STEP_S)
    assert response is not grpc.aio.EOF, "the stream ended without a word"
    update: matchmaking_pb2.TicketUpdate = response.update
    return update
