"""Token buckets (platform/ratelimit.py): pace is a rule (docs/security.md)."""

from __future__ import annotations

import pytest

from machiavelox.platform.ratelimit import Rate, RateLimits, TokenBucket


def test_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(Rate(per_s=10, burst=20), now=0.0)
    assert all(bucket.take(0.0) for _ in range(20))
    assert not bucket.take(0.0)  # the burst is spent
    assert bucket.retry_after_s(0.0) == pytest.approx(0.1)
    assert bucket.take(0.1)  # one token a tenth of a second
    assert not bucket.take(0.1)


def test_a_refused_take_changes_nothing() -> None:
    bucket = TokenBucket(Rate(per_s=1, burst=2), now=0.0)
    assert bucket.take(0.0, cost=2)
    before = bucket.tokens
    assert not bucket.take(0.0)
    assert bucket.tokens == before


def test_never_more_than_the_burst() -> None:
    bucket = TokenBucket(Rate(per_s=10, burst=5), now=0.0)
    assert sum(bucket.take(1000.0) for _ in range(10)) == 5


def test_a_clock_going_backwards_gives_nothing() -> None:
    bucket = TokenBucket(Rate(per_s=10, burst=1), now=5.0)
    assert bucket.take(5.0)
    assert not bucket.take(1.0)


def test_a_flood_is_held_to_the_rate() -> None:
    """1,000 requests a second for 10 s: burst + rate x time get through, no more."""
    limits = RateLimits(Rate(per_s=10, burst=20))
    passed = sum(limits.allow("flood", i / 1000) for i in range(10_000))
    assert passed == pytest.approx(20 + 10 * 10, abs=1)


def test_keys_are_independent() -> None:
    limits = RateLimits(Rate(per_s=1, burst=1))
    assert limits.allow("a", 0.0)
    assert not limits.allow("a", 0.0)
    assert limits.allow("b", 0.0)


def test_memory_is_bounded_and_a_forgotten_key_only_gains() -> None:
    limits = RateLimits(Rate(per_s=1, burst=3), max_keys=100)
    for i in range(1000):
        limits.allow(f"p{i}", 0.0)
    assert len(limits) <= 100
    limits.allow("busy", 0.0)
    limits.allow("busy", 0.0)
    for i in range(200):  # idle keys refill and are forgotten first
        limits.allow(f"q{i}", 10.0)
    assert len(limits) <= 100


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError):
        Rate(per_s=0, burst=1)
    with pytest.raises(ValueError):
        Rate(per_s=1, burst=0.5)
