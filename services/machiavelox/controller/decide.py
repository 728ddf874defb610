"""The capacity controller's decision: a pure function of what it observed.

Inputs: the shard StatefulSet's replicas, each shard's load by ordinal (GetLoad and health, or
None when it did not answer), the policy and the one piece of memory kept between rounds (since
when the capacity has been in excess). Output: the replicas to ask for, at most one shard to
mark draining or resume, a reason for the log, and the memory for the next round.

The rules, in order:

1. Fewer shards than `min_replicas`: scale up to the minimum.
2. More than `max_replicas`: shrink by draining, one shard at a time, whatever the buffer.
3. Free table capacity below the buffer: first resume the shard being drained (that gives its
   free seats back without waiting for a pod), then add shards for what is still missing,
   never beyond `max_replicas`.
4. A drain in progress (the highest ordinal is draining): when its last table has ended, scale
   down by one; until then wait. Scaling down never happens otherwise, so a table in play is
   never killed by scaling.
5. Capacity in excess (the buffer is met even without the highest shard) for
   `scale_down_delay_s`: mark the highest shard draining. Matchmaking stops placing tables on
   it; rule 4 takes over.

Free capacity counts each serving, non-draining shard's capacity minus its tables in play. A
shard that does not answer counts as a whole empty shard of the nominal capacity (it is most
likely a pod still starting, just asked for), so the controller does not ask again for pods
already on their way; for the same reason no scale-down is judged while any shard is silent. A
shard whose health is NOT_SERVING is stopping: it counts for nothing and is never touched.

The StatefulSet always removes its highest ordinal when scaled down, so that is the only shard
the controller drains or resumes. A lower shard found draining was drained by someone else (an
operator, or its own stop): it counts as no capacity and is left alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

HOLD = "hold"  # nothing to do
SCALE_UP = "scale-up"  # more replicas (and maybe resume the drained shard)
RESUME = "resume"  # resume the shard being drained: enough capacity comes back
DRAIN = "drain"  # mark the highest shard draining
WAIT = "wait"  # the highest shard is draining: its tables are still in play
SCALE_DOWN = "scale-down"  # the drained shard is empty: one replica fewer


class PolicyError(ValueError):
    """A buffer or replica bound that cannot work."""


@dataclass(frozen=True)
class Buffer:
    """Free table capacity to keep: a number of tables, or a share of the capacity (Agones'
    buffer policy: `"200"` or `"10%"`)."""

    tables: int = 0
    percent: int | None = None  # 1..99: free seats >= percent of the capacity in service

    @classmethod
    def parse(cls, text: str) -> Buffer:
        raw = text.strip()
        number = raw[:-1] if raw.endswith("%") else raw
        if re.fullmatch(r"-?[0-9]+", number) is None:
            raise PolicyError(f"a buffer is a number of tables (200) or a percentage (10%), "
                              f"not {raw!r}")
        value = int(number)
        if raw.endswith("%"):
            if not 1 <= value <= 99:
                raise PolicyError(f"a buffer percentage must be 1% to 99%, not {raw!r}")
            return cls(percent=value)
        if value < 0:
            raise PolicyError(f"a buffer must not be negative, not {value}")
        return cls(tables=value)

    def required(self, in_play: int) -> int:
        """Free tables needed with `in_play` tables in play.

        With a percentage p, free / (free + in_play) >= p, so free >= in_play * p / (1 - p):
        the requirement depends only on the load, never on the capacity it asks for.
        """
        if self.percent is None:
            return self.tables
        return -(-in_play * self.percent // (100 - self.percent))

    def __str__(self) -> str:
        return f"{self.percent}%" if self.percent is not None else str(self.tables)


@dataclass(frozen=True)
class Policy:
    min_replicas: int
    max_replicas: int
    buffer: Buffer
    shard_capacity: int  # tables a shard accepts (MACHIAVELOX_TABLE_CAPACITY): for silent shards
    scale_down_delay_s: float = 0.0

    def __post_init__(self) -> None:
        if self.min_replicas < 1:
            raise PolicyError(f"min replicas must be at least 1, not {self.min_replicas}")
        if self.max_replicas < self.min_replicas:
            raise PolicyError(f"max replicas ({self.max_replicas}) must not be below min "
                              f"replicas ({self.min_replicas})")
        if self.shard_capacity < 1:
            raise PolicyError(f"shard capacity must be at least 1, not {self.shard_capacity}")
        if self.scale_down_delay_s < 0:
            raise PolicyError("the scale-down delay must not be negative")


@dataclass(frozen=True)
class ShardLoad:
    """One shard's answer to GetLoad, and whether its health is SERVING."""

    tables: int
    players: int
    capacity: int
    draining: bool
    serving: bool = True

    @property
    def free(self) -> int:
        return max(0, self.capacity - self.tables)


@dataclass(frozen=True)
class Observation:
    replicas: int  # the StatefulSet's spec.replicas
    shards: tuple[ShardLoad | None, ...]  # by ordinal, one per replica; None: no answer

    def __post_init__(self) -> None:
        if self.replicas < 0 or len(self.shards) != self.replicas:
            raise ValueError(f"{len(self.shards)} shard loads for {self.replicas} replicas")

    @property
    def tables(self) -> int:
        return sum(s.tables for s in self.shards if s is not None)

    @property
    def players(self) -> int:
        return sum(s.players for s in self.shards if s is not None)


@dataclass(frozen=True)
class Memory:
    """What a round hands to the next: since when capacity has been in excess (monotonic s)."""

    excess_since: float | None = None


@dataclass(frozen=True)
class Decision:
    replicas: int
    kind: str
    reason: str
    drain: int | None = None  # the ordinal to mark draining
    resume: int | None = None  # the ordinal to resume (draining off)
    memory: Memory = Memory()


def free_capacity(shards: Sequence[ShardLoad | None], nominal: int) -> int:
    """Free tables in the shards that take new tables (silent shards: nominal, empty)."""
    total = 0
    for shard in shards:
        if shard is None:
            total += nominal
        elif shard.serving and not shard.draining:
            total += shard.free
    return total


def decide(obs: Observation, policy: Policy, memory: Memory, now: float) -> Decision:
    n = obs.replicas
    last = n - 1
    top = obs.shards[last] if n > 0 else None
    ours = top is not None and top.draining and top.serving  # a drain the controller resumes
    required = policy.buffer.required(obs.tables)
    free = free_capacity(obs.shards, policy.shard_capacity)

    if n < policy.min_replicas:
        return Decision(policy.min_replicas, SCALE_UP,
                        f"{n} shards, fewer than the minimum {policy.min_replicas}",
                        resume=last if ours else None)
    if n > policy.max_replicas:
        return _shrink(n, top, f"{n} shards, more than the maximum {policy.max_replicas}")
    if free < required:
        resume = None
        if ours and top is not None:
            free += top.free
            resume = last
            if free >= required:
                return Decision(n, RESUME, f"{free} free tables with shard {last} resumed, "
                                f"buffer {required}", resume=resume)
        short = required - free
        target = min(policy.max_replicas, n + math.ceil(short / policy.shard_capacity))
        if target == n:
            return Decision(n, HOLD, f"{short} tables short of the buffer {required}, but "
                            f"already at the maximum {policy.max_replicas} shards",
                            resume=resume)
        return Decision(target, SCALE_UP, f"{free} free tables, buffer {required}: "
                        f"{target - n} more shards", resume=resume)
    silent = [i for i, s in enumerate(obs.shards) if s is None]
    if ours:
        if n - 1 < policy.min_replicas:
            return Decision(n, RESUME, f"shard {last} resumed: {n} shards is the minimum",
                            resume=last)
        if silent and top is not None and top.tables == 0:
            return Decision(n, WAIT, f"shard {last} is empty, but shards {silent} are not "
                            "answering: no scale-down until they do")
        return _shrink(n, top, f"shard {last} draining, {free} free tables elsewhere, "
                       f"buffer {required}")
    if n <= policy.min_replicas:
        return Decision(n, HOLD, f"{free} free tables, buffer {required}, at the minimum "
                        f"{policy.min_replicas} shards")
    if silent:
        return Decision(n, HOLD, f"shards {silent} not answering: no scale-down judged")
    assert top is not None
    if not top.serving:
        return Decision(n, HOLD, f"shard {last} is stopping: no scale-down judged")
    without_top = free - (0 if top.draining else top.free)
    if without_top < required:
        return Decision(n, HOLD, f"{free} free tables, buffer {required}")
    since = memory.excess_since if memory.excess_since is not None else now
    waited = now - since
    if waited < policy.scale_down_delay_s:
        return Decision(n, HOLD, f"{without_top} free tables without shard {last}, buffer "
                        f"{required}: excess for {waited:.0f} of "
                        f"{policy.scale_down_delay_s:.0f} s", memory=Memory(since))
    return Decision(n, DRAIN, f"{without_top} free tables without shard {last}, buffer "
                    f"{required}: draining it", drain=last)


def _shrink(n: int, top: ShardLoad | None, why: str) -> Decision:
    """One step of removing the highest shard: drain it, wait for its tables, scale down."""
    last = n - 1
    if top is None:
        return Decision(n, HOLD, f"{why}; shard {last} not answering, cannot drain it safely")
    if not top.serving:
        return Decision(n, HOLD, f"{why}; shard {last} is stopping")
    if not top.draining:
        return Decision(n, DRAIN, f"{why}; draining shard {last}", drain=last)
    if top.tables > 0:
        return Decision(n, WAIT, f"{why}; waiting for {top.tables} tables to end on shard "
                        f"{last}")
    return Decision(n - 1, SCALE_DOWN, f"{why}; shard {last} is empty: scaling down")
