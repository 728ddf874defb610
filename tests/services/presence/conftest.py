"""Fixtures: real `machiavelox presence` processes on loopback, and an isolated Redis prefix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from .replicas import REDIS_URL, Launcher, delete_prefix, new_prefix

SILENCE_MS = 1000
"""Small, so tests are fast, but with room for a loaded machine (a replica whose sweep is late
by more than half of it is taken for one in an outage)."""


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted afterwards."""
    prefix = new_prefix()
    yield prefix
    delete_prefix(prefix)


@pytest.fixture(params=["memory", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def backend_env(backend: str, redis_prefix: str) -> dict[str, str]:
    env = {"MACHIAVELOX_PRESENCE_SILENCE_MS": str(SILENCE_MS),
           "MACHIAVELOX_LOG_LEVEL": "INFO", "MACHIAVELOX_GRACE_S": "2"}
    if backend == "redis":
        env["MACHIAVELOX_PRESENCE_REDIS_URL"] = REDIS_URL
        env["MACHIAVELOX_PRESENCE_KEY_PREFIX"] = redis_prefix
    return env


@pytest.fixture
async def launcher(tmp_path: Path, backend_env: dict[str, str]) -> AsyncIterator[Launcher]:
    launch = Launcher(tmp_path, backend_env)
    try:
        yield launch
    finally:
        await launch.stop_all_and_check()
