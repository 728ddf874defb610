"""Token buckets: how fast one caller may do one thing (pace is a rule, docs/security.md).

A bucket holds up to `burst` tokens and gains `rate` tokens a second; each request takes one
(or `cost`) or is refused when the bucket has too few. Time is an argument (seconds on a
monotonic clock), so the limiter is deterministic and tested without sleeping.

`RateLimits` keeps one bucket per key (a player id; a table and player) with bounded memory: a
bucket that has refilled to `burst` is the same as no bucket, so full buckets are forgotten when
the table of keys grows past `max_keys`; if every bucket is still in use then, the oldest are
forgotten (they refill: a forgotten caller is given a full burst, never refused for it).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rate:
    """`per_s` requests a second on average, `burst` at once."""

    per_s: float
    burst: float

    def __post_init__(self) -> None:
        if self.per_s <= 0 or self.burst < 1:
            raise ValueError("a rate needs per_s > 0 and burst >= 1")


class TokenBucket:
    __slots__ = ("rate", "stamp", "tokens")

    def __init__(self, rate: Rate, now: float) -> None:
        self.rate = rate
        self.tokens = rate.burst
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.tokens = min(self.rate.burst, self.tokens + (now - self.stamp) * self.rate.per_s)
            self.stamp = now

    def take(self, now: float, cost: float = 1.0) -> bool:
        """Take `cost` tokens if there are that many (True), else change nothing (False).
        (On every action's path: `_refill` written out, no call.)"""
        tokens = self.tokens
        if now > self.stamp:
            tokens += (now - self.stamp) * self.rate.per_s
            if tokens > self.rate.burst:
                tokens = self.rate.burst
            self.stamp = now
        if tokens >= cost:
            self.tokens = tokens - cost
            return True
        self.tokens = tokens
        return False

    def retry_after_s(self, now: float, cost: float = 1.0) -> float:
        """How long until `take(cost)` would succeed (0: now)."""
        self._refill(now)
        return max(0.0, (cost - self.tokens) / self.rate.per_s)

    def full(self, now: float) -> bool:
        self._refill(now)
        return self.tokens >= self.rate.burst


class RateLimits:
    """One bucket per key, all at the same rate."""

    def __init__(self, rate: Rate, max_keys: int = 100_000) -> None:
        self.rate = rate
        self.max_keys = max_keys
        self._buckets: dict[Hashable, TokenBucket] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    def bucket(self, key: Hashable, now: float) -> TokenBucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_keys:
                self._forget(now)
            bucket = self._buckets[key] = TokenBucket(self.rate, now)
        return bucket

    def allow(self, key: Hashable, now: float, cost: float = 1.0) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self.bucket(key, now)
        return bucket.take(now, cost)

    def discard(self, key: Hashable) -> None:
        """The key is gone for good (a table that left): its bucket too."""
        self._buckets.pop(key, None)

    def _forget(self, now: float) -> None:
        """Forget the full buckets; if none is full, the older half (insertion order)."""
        full = [k for k, b in self._buckets.items() if b.full(now)]
        if not full:
            full = list(self._buckets)[: max(1, len(self._buckets) // 2)]
        for key in full:
            del self._buckets[key]
