"""start_eagerly: a coroutine runs at once up to its first wait, then goes on by itself."""

from __future__ import annotations

import asyncio

import pytest

from machiavelox.platform.eager import start_eagerly


async def test_the_coroutine_runs_now_until_it_waits_then_goes_on_when_the_future_completes(
) -> None:
    steps: list[str] = []
    gate: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def work() -> None:
        steps.append("started")
        got = await gate
        steps.append(f"resumed with {got}")
        await asyncio.sleep(0)  # a bare yield too
        steps.append("done")

    start_eagerly(work(), on_error=lambda exc: steps.append(f"error {exc!r}"))
    assert steps == ["started"]  # in the caller's turn: no turn of the event loop needed
    gate.set_result(7)
    for _ in range(5):
        await asyncio.sleep(0)
    assert steps == ["started", "resumed with 7", "done"]


async def test_what_the_coroutine_raises_goes_to_on_error_never_to_the_caller() -> None:
    errors: list[BaseException] = []
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def fails_at_once() -> None:
        raise ValueError("at once")

    async def fails_later() -> None:
        await gate

    start_eagerly(fails_at_once(), on_error=errors.append)
    start_eagerly(fails_later(), on_error=errors.append)
    gate.set_exception(RuntimeError("later"))
    for _ in range(3):
        await asyncio.sleep(0)
    assert [type(e) for e in errors] == [ValueError, RuntimeError]


async def test_a_cancelled_future_ends_the_coroutine_with_cancelled_error() -> None:
    errors: list[BaseException] = []
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def waits() -> None:
        await gate

    start_eagerly(waits(), on_error=errors.append)
    gate.cancel()
    for _ in range(3):
        await asyncio.sleep(0)
    assert len(errors) == 1
    with pytest.raises(asyncio.CancelledError):
        raise errors[0]
