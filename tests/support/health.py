"""Waiting for a service process started by a test to serve (the standard health service)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc


async def wait_serving(channel: grpc.aio.Channel, service: str,
                       proc: subprocess.Popen[bytes], name: str, log: Callable[[], str],
                       timeout_s: float = 20.0) -> None:
    """Until `service` reports SERVING on `channel`; fails the test, with the process's log,
    if it exits first or is not serving after `timeout_s`."""
    health = health_pb2_grpc.HealthStub(channel)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with {proc.returncode} before it served:\n{log()}")
        try:
            reply = await health.Check(health_pb2.HealthCheckRequest(service=service),
                                       timeout=1.0)
            if reply.status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.aio.AioRpcError:
            pass
        await asyncio.sleep(0.05)
    pytest.fail(f"{name} not serving after {timeout_s} s:\n{log()}")
