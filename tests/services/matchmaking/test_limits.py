"""Each player's pace in the agorà (limits.py): pure, with time passed in."""

from __future__ import annotations

import pytest

from machiavelox.matchmaking.limits import (
    CALLS,
    DEFAULT_RATES,
    AgoraLimits,
    AgoraRates,
    Call,
    Limited,
)
from machiavelox.platform.ratelimit import Rate

RATES = AgoraRates(enqueue=Rate(1.0, 3), cancel=Rate(2.0, 2), create_friendly=Rate(0.5, 1),
                   join_friendly=Rate(1.0, 4), join_failed=Rate(0.1, 2))


def admitted(limits: AgoraLimits, call: Call, player: str, now_ms: int, tries: int) -> int:
    count = 0
    for _ in range(tries):
        try:
            limits.admit(call, player, now_ms)
            count += 1
        except Limited as err:
            assert err.reason == "rate/limited"
    return count


def test_each_call_has_its_own_bucket_per_player() -> None:
    limits = AgoraLimits(RATES)
    assert admitted(limits, "enqueue", "ann", 0, 10) == 3
    assert admitted(limits, "enqueue", "bob", 0, 10) == 3  # another player: own bucket
    assert admitted(limits, "cancel", "ann", 0, 10) == 2  # another call: own bucket
    with pytest.raises(Limited) as err:
        limits.admit("enqueue", "ann", 500)
    assert err.value.call == "enqueue" and err.value.retry_after_s == pytest.approx(0.5)
    assert "Enqueue" in err.value.message and "1 s" in err.value.message
    assert admitted(limits, "enqueue", "ann", 2_000, 10) == 2  # refilled at 1 a second
    assert admitted(limits, "create_friendly", "ann", 0, 5) == 1


def test_failed_joins_shut_every_join_until_they_refill() -> None:
    limits = AgoraLimits(RATES)
    for now_ms in (0, 1):  # two guesses: the failed-join burst
        limits.admit("join_friendly", "eve", now_ms)
        limits.join_failed("eve", now_ms)
    with pytest.raises(Limited) as err:  # even a good code: no attempt is looked at now
        limits.admit("join_friendly", "eve", 2)
    assert "unknown invite codes" in err.value.message
    assert err.value.retry_after_s == pytest.approx(10.0, abs=0.01)
    assert admitted(limits, "join_friendly", "ann", 2, 4) == 4  # others are not affected
    limits.admit("join_friendly", "eve", 10_002)  # one failed attempt refilled after 10 s
    limits.join_failed("eve", 10_002)
    with pytest.raises(Limited):
        limits.admit("join_friendly", "eve", 10_003)


def test_joins_that_succeed_are_limited_by_the_join_bucket_alone() -> None:
    limits = AgoraLimits(RATES)
    assert admitted(limits, "join_friendly", "ann", 0, 10) == 4


def test_the_defaults_leave_a_person_alone_and_stop_a_guesser() -> None:
    limits = AgoraLimits(DEFAULT_RATES)
    # a person: a few calls a minute of each kind, a mistyped code now and then
    for second in range(0, 600, 3):
        now_ms = second * 1000
        for call in CALLS:
            limits.admit(call, "ann", now_ms)
        if second % 30 == 0:
            limits.join_failed("ann", now_ms)
    # a guesser, one attempt every 10 ms for a minute: the burst, then one every 10 s (at
    # 10, 20, ... 50 s)
    guesses = 0
    for step in range(6_000):
        try:
            limits.admit("join_friendly", "eve", step * 10)
        except Limited:
            continue
        limits.join_failed("eve", step * 10)
        guesses += 1
    assert guesses == DEFAULT_RATES.join_failed.burst + 5
