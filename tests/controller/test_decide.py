"""The controller's pure decision, tested exhaustively over small clusters.

Every observation of up to three shards (each silent, or any of tables 0/1/full x draining x
serving), for many policies and memories, must satisfy the safety and liveness invariants
below; then a few scenarios spell the rules out, and a simulation runs rounds against a model
of shards whose tables come and go.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest

from machiavelox.controller.decide import (
    DRAIN,
    HOLD,
    RESUME,
    SCALE_DOWN,
    SCALE_UP,
    WAIT,
    Buffer,
    Decision,
    Memory,
    Observation,
    Policy,
    PolicyError,
    ShardLoad,
    decide,
    free_capacity,
)

CAP = 2
NOW = 100.0
STATES: list[ShardLoad | None] = [None] + [
    ShardLoad(tables=t, players=3 * t, capacity=CAP, draining=d, serving=s)
    for t in (0, 1, CAP) for d in (False, True) for s in (True, False)]
POLICIES = [Policy(lo, hi, Buffer.parse(buf), CAP, delay)
            for lo, hi in ((1, 1), (1, 2), (2, 3), (1, 3))
            for buf in ("0", "1", "2", "3", "5", "50%", "10%")
            for delay in (0.0, 10.0)]
MEMORIES = [Memory(), Memory(NOW - 5), Memory(NOW - 25)]


def observations(most: int) -> Iterator[Observation]:
    for n in range(most + 1):
        for shards in itertools.product(STATES, repeat=n):
            yield Observation(n, shards)


def check(obs: Observation, policy: Policy, memory: Memory, d: Decision) -> None:
    n = obs.replicas
    top = obs.shards[-1] if n else None
    required = policy.buffer.required(obs.tables)
    free = free_capacity(obs.shards, policy.shard_capacity)
    where = f"{obs} {policy} {memory} -> {d}"
    # safety: replicas go down only by one, only an empty shard that was drained
    if d.replicas < n:
        assert d.kind == SCALE_DOWN and d.replicas == n - 1, where
        assert top is not None and top.draining and top.serving and top.tables == 0, where
        assert d.drain is None and d.resume is None, where
    # only the highest ordinal is ever drained or resumed, never both at once
    assert d.drain in (None, n - 1) and d.resume in (None, n - 1), where
    assert d.drain is None or d.resume is None, where
    if d.drain is not None:
        assert d.kind == DRAIN and d.replicas == n, where
        assert top is not None and top.serving and not top.draining, where
    if d.resume is not None:
        assert top is not None and top.serving and top.draining, where
    # bounds
    assert d.replicas >= 0, where
    if d.replicas > n:
        assert d.kind == SCALE_UP, where
        assert d.replicas <= max(policy.max_replicas, policy.min_replicas), where
    if policy.min_replicas <= n <= policy.max_replicas:
        assert policy.min_replicas <= d.replicas <= policy.max_replicas, where
    if n < policy.min_replicas:
        assert d.replicas == policy.min_replicas, where
    if n > policy.max_replicas:
        assert d.replicas <= n and d.kind in (DRAIN, WAIT, SCALE_DOWN, HOLD), where
    # liveness: short of the buffer below the maximum -> capacity is added or given back
    if policy.min_replicas <= n < policy.max_replicas and free < required:
        assert d.replicas > n or d.resume is not None, where
        if d.replicas > n:  # enough shards asked for, and not one too many (no flapping)
            given_back = top.free if d.resume is not None and top is not None else 0
            added = (d.replicas - n) * policy.shard_capacity
            assert free + given_back + added >= required or d.replicas == policy.max_replicas
            assert free + given_back + added - policy.shard_capacity < required, where
    # scale-down starts only on real excess, after the delay, with every shard answering
    if d.kind == DRAIN and n <= policy.max_replicas:
        assert n > policy.min_replicas and None not in obs.shards, where
        assert top is not None
        assert free - top.free >= required, where
        if policy.scale_down_delay_s > 0:
            assert memory.excess_since is not None, where
            assert NOW - memory.excess_since >= policy.scale_down_delay_s, where
    # the memory only ever remembers a past moment
    assert d.memory.excess_since is None or d.memory.excess_since <= NOW, where
    # a stopping shard is never touched
    if top is not None and not top.serving:
        assert d.drain is None and d.resume is None, where


def test_every_small_cluster_satisfies_the_invariants() -> None:
    kinds: set[str] = set()
    count = 0
    for obs in observations(3):
        for policy in POLICIES:
            for memory in MEMORIES if policy.scale_down_delay_s else MEMORIES[:1]:
                d = decide(obs, policy, memory, NOW)
                check(obs, policy, memory, d)
                kinds.add(d.kind)
                count += 1
    assert kinds == {HOLD, SCALE_UP, RESUME, DRAIN, WAIT, SCALE_DOWN}
    assert count > 100_000


def test_the_decision_is_a_function_of_its_inputs() -> None:
    rng = random.Random(6)
    obs_list = list(observations(2))
    for _ in range(2000):
        obs, policy = rng.choice(obs_list), rng.choice(POLICIES)
        memory = rng.choice(MEMORIES)
        assert decide(obs, policy, memory, NOW) == decide(obs, policy, memory, NOW)


def load(tables: int, capacity: int = 10, draining: bool = False,
         serving: bool = True) -> ShardLoad:
    return ShardLoad(tables, tables * 3, capacity, draining, serving)


POLICY = Policy(min_replicas=1, max_replicas=4, buffer=Buffer(tables=5), shard_capacity=10)


def test_scales_up_when_the_buffer_runs_low() -> None:
    d = decide(Observation(2, (load(9), load(7))), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas) == (SCALE_UP, 3)  # 4 free < 5
    d = decide(Observation(1, (load(10),)), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas) == (SCALE_UP, 2)


def test_pods_still_starting_count_as_empty_shards() -> None:
    d = decide(Observation(3, (load(9), load(7), None)), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas) == (HOLD, 3)  # asked for already: not asked again


def test_never_beyond_the_maximum() -> None:
    d = decide(Observation(4, tuple(load(10) for _ in range(4))), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas) == (HOLD, 4) and "maximum" in d.reason


def test_resuming_the_drained_shard_comes_before_new_pods() -> None:
    d = decide(Observation(2, (load(9), load(2, draining=True))), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas, d.resume) == (RESUME, 2, 1)
    d = decide(Observation(2, (load(10), load(8, draining=True))), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas, d.resume) == (SCALE_UP, 3, 1)


def test_scale_down_is_drain_wait_then_one_replica_fewer() -> None:
    policy = Policy(1, 4, Buffer(tables=5), 10, scale_down_delay_s=60)
    obs = Observation(3, (load(1), load(0), load(2)))
    first = decide(obs, policy, Memory(), NOW)
    assert first.kind == HOLD and first.memory == Memory(NOW)
    early = decide(obs, policy, first.memory, NOW + 59)
    assert early.kind == HOLD and early.memory == Memory(NOW)
    drain = decide(obs, policy, first.memory, NOW + 60)
    assert (drain.kind, drain.drain, drain.replicas) == (DRAIN, 2, 3)
    wait = decide(Observation(3, (load(1), load(0), load(2, draining=True))), policy,
                  drain.memory, NOW + 61)
    assert (wait.kind, wait.replicas) == (WAIT, 3) and "2 tables" in wait.reason
    down = decide(Observation(3, (load(1), load(0), load(0, draining=True))), policy,
                  wait.memory, NOW + 62)
    assert (down.kind, down.replicas) == (SCALE_DOWN, 2)


def test_excess_must_last_without_interruption() -> None:
    policy = Policy(1, 4, Buffer(tables=5), 10, scale_down_delay_s=60)
    excess = Observation(2, (load(1), load(0)))
    busy = Observation(2, (load(9), load(0)))
    m = decide(excess, policy, Memory(), NOW).memory
    m = decide(busy, policy, m, NOW + 30).memory
    assert m == Memory()
    assert decide(excess, policy, m, NOW + 61).kind == HOLD


def test_no_scale_down_judged_while_a_shard_is_silent() -> None:
    d = decide(Observation(3, (load(0), None, load(0))), POLICY, Memory(), NOW)
    assert d.kind == HOLD and "not answering" in d.reason
    d = decide(Observation(3, (load(0), None, load(0, draining=True))), POLICY, Memory(), NOW)
    assert (d.kind, d.replicas) == (WAIT, 3)


def test_a_silent_draining_shard_is_never_scaled_away() -> None:
    policy = Policy(1, 1, Buffer(tables=0), 10)
    d = decide(Observation(2, (load(0), None)), policy, Memory(), NOW)
    assert (d.kind, d.replicas) == (HOLD, 2) and "cannot drain it safely" in d.reason


def test_above_the_maximum_drains_whatever_the_buffer() -> None:
    policy = Policy(1, 2, Buffer(tables=100), 10)
    obs = Observation(3, (load(10), load(10), load(10)))
    assert decide(obs, policy, Memory(), NOW).kind == DRAIN


def test_below_the_minimum_scales_up_and_resumes() -> None:
    policy = Policy(3, 4, Buffer(tables=0), 10)
    d = decide(Observation(2, (load(0), load(0, draining=True))), policy, Memory(), NOW)
    assert (d.kind, d.replicas, d.resume) == (SCALE_UP, 3, 1)
    d = decide(Observation(0, ()), policy, Memory(), NOW)
    assert (d.kind, d.replicas) == (SCALE_UP, 3)


def test_a_lower_shard_drained_by_someone_else_is_left_alone() -> None:
    d = decide(Observation(3, (load(0, draining=True), load(0), load(0))), POLICY, Memory(),
               NOW)
    assert d.resume is None and d.kind == DRAIN and d.drain == 2


def test_a_stopping_shard_is_not_drained_nor_resumed() -> None:
    d = decide(Observation(2, (load(0), load(0, serving=False))), POLICY, Memory(), NOW)
    assert d.kind == HOLD and d.drain is None and "stopping" in d.reason
    d = decide(Observation(2, (load(9), load(0, draining=True, serving=False))), POLICY,
               Memory(), NOW)
    assert d.resume is None and (d.kind, d.replicas) == (SCALE_UP, 3)


@pytest.mark.parametrize(("text", "in_play", "required"), [
    ("0", 50, 0), ("200", 0, 200), ("200", 10_000, 200),
    ("10%", 0, 0), ("10%", 90, 10), ("10%", 91, 11), ("50%", 7, 7), ("99%", 1, 99)])
def test_buffer_requirements(text: str, in_play: int, required: int) -> None:
    buffer = Buffer.parse(text)
    assert buffer.required(in_play) == required
    assert str(buffer) == text
    if buffer.percent is not None and in_play:
        free = required
        assert free / (free + in_play) >= buffer.percent / 100


@pytest.mark.parametrize(("text", "message"), [
    ("-1", "negative"), ("0%", "1% to 99%"), ("100%", "1% to 99%"), ("ten", "number of tables"),
    ("5.5", "number of tables"), ("%", "number of tables")])
def test_bad_buffers_are_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Buffer.parse(text)


@pytest.mark.parametrize(("lo", "hi", "cap", "message"), [
    (0, 3, 10, "min replicas must be at least 1"), (3, 2, 10, "must not be below min"),
    (1, 2, 0, "capacity must be at least 1")])
def test_impossible_policies_are_refused(lo: int, hi: int, cap: int, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy(lo, hi, Buffer(), cap)


class Model:
    """Shards as the controller sees them: pods that start, tables that come and go."""

    def __init__(self, rng: random.Random, capacity: int) -> None:
        self.rng = rng
        self.capacity = capacity
        self.replicas = 1
        self.tables: list[list[int]] = [[]]  # per ordinal: each table's remaining rounds
        self.draining: list[bool] = [False]
        self.up: list[bool] = [True]
        self.killed = 0

    def observe(self) -> Observation:
        return Observation(self.replicas, tuple(
            ShardLoad(len(t), 3 * len(t), self.capacity, d) if u else None
            for t, d, u in zip(self.tables, self.draining, self.up, strict=True)))

    def apply(self, d: Decision) -> None:
        for ordinal, flag in ((d.drain, True), (d.resume, False)):
            if ordinal is not None:
                self.draining[ordinal] = flag
        while self.replicas > d.replicas:  # the StatefulSet deletes the highest pods
            self.killed += len(self.tables.pop())
            self.draining.pop()
            self.up.pop()
            self.replicas -= 1
        while self.replicas < d.replicas:
            self.tables.append([])
            self.draining.append(False)
            self.up.append(False)
            self.replicas += 1

    def step(self, arrivals: int) -> None:
        self.up = [True] * self.replicas  # pods become ready by the next round
        for shard in self.tables:
            shard[:] = [left - 1 for left in shard if left > 1]
        for _ in range(arrivals):  # matchmaking: the least-loaded shard that accepts
            open_ = [i for i in range(self.replicas) if self.up[i] and not self.draining[i]
                     and len(self.tables[i]) < self.capacity]
            if open_:
                best = min(open_, key=lambda i: len(self.tables[i]))
                self.tables[best].append(self.rng.randint(1, 8))


@pytest.mark.parametrize("seed", range(8))
def test_simulated_traffic_never_loses_a_table_and_follows_the_load(seed: int) -> None:
    rng = random.Random(seed)
    policy = Policy(1, 6, Buffer.parse(rng.choice(["4", "10", "25%"])), 10,
                    scale_down_delay_s=3)
    model = Model(rng, 10)
    memory = Memory()
    peak = 0
    for now in range(300):
        rate = 12 if 60 <= now < 160 else 1  # a rush, then quiet
        d = decide(model.observe(), policy, memory, float(now))
        memory = d.memory
        model.apply(d)
        model.step(rng.randint(0, rate))
        peak = max(peak, model.replicas)
    assert model.killed == 0
    assert peak > 2  # it scaled up for the rush
    assert model.replicas <= 2  # and back down once quiet
    required = policy.buffer.required(model.observe().tables)
    assert free_capacity(model.observe().shards, 10) >= required
