"""Leader election with a Lease: two electors, the real `kubernetes` client, the fake API server.

Each elector's clock is a number the test moves, so expiry is exercised without waiting and
without timed assertions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from machiavelox.controller.kube import LeaseStore, api_client
from machiavelox.controller.lease import LeaderElector, LeaseRecord
from tests.controller.fake_kube import FakeKube, running

DURATION = 15.0
DEADLINE = 10.0


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with running(namespace="mx") as k:
        yield k


def elector(kube: FakeKube, name: str, clock: Callable[[], float],
            store: LeaseStore | None = None) -> LeaderElector:
    store = store or LeaseStore(api_client(kube.url, name), "mx", "mx-controller")
    return LeaderElector(store, name, DURATION, DEADLINE, clock=clock)


def agent(name: str) -> str:
    return f"machiavelox-controller/{name}"


def test_one_leads_the_other_follows_until_the_lease_expires(kube: FakeKube) -> None:
    clock = Clock()
    a, b = elector(kube, "a", clock), elector(kube, "b", clock)
    assert a.tick() and a.leading()
    assert not b.tick() and not b.leading() and b.holder == "a"
    lease = kube.leases["mx-controller"]["spec"]
    assert lease["holderIdentity"] == "a" and lease["leaseDurationSeconds"] == 15
    for _ in range(5):  # a renews in time: b never takes over
        clock.t += 5
        assert a.tick() and not b.tick()
    clock.t += DEADLINE  # a stops renewing (it hangs): it stops acting at its deadline...
    assert not a.leading()
    assert not b.tick()  # ...but b has seen the last renewal only 10 s ago
    clock.t += DURATION - DEADLINE
    assert b.tick() and b.leading()
    lease = kube.leases["mx-controller"]["spec"]
    assert lease["holderIdentity"] == "b" and lease["leaseTransitions"] == 1
    assert not a.tick() and a.holder == "b"  # a comes back: follows


def test_a_released_lease_is_taken_at_the_next_tick(kube: FakeKube) -> None:
    clock = Clock()
    a, b = elector(kube, "a", clock), elector(kube, "b", clock)
    assert a.tick() and not b.tick()
    a.release()
    assert not a.leading() and kube.leases["mx-controller"]["spec"].get("holderIdentity") is None
    assert b.tick() and b.leading()
    assert not a.tick()


def test_a_follower_never_releases(kube: FakeKube) -> None:
    clock = Clock()
    a, b = elector(kube, "a", clock), elector(kube, "b", clock)
    assert a.tick() and not b.tick()
    writes = len(kube.writes("leases"))
    b.release()
    assert len(kube.writes("leases")) == writes


def test_two_creators_at_once_one_wins(kube: FakeKube) -> None:
    clock = Clock()
    a = elector(kube, "a", clock)

    class RacingStore(LeaseStore):
        """b reads "no Lease", then a creates it before b does."""

        def get(self) -> LeaseRecord | None:
            record = super().get()
            if record is None:
                assert a.tick()
            return record

    b = elector(kube, "b", clock, RacingStore(api_client(kube.url, "b"), "mx", "mx-controller"))
    assert not b.tick() and not b.leading()
    assert a.leading() and kube.leases["mx-controller"]["spec"]["holderIdentity"] == "a"
    statuses = [r.status for r in kube.requests if r.verb == "create"]
    assert statuses == [201, 409]


def test_an_api_server_error_keeps_a_leader_only_until_its_deadline(kube: FakeKube) -> None:
    clock = Clock()
    a = elector(kube, "a", clock)
    assert a.tick()
    kube.partitioned.add(agent("a"))
    clock.t += 5
    assert a.tick()  # not renewed, but its last renewal is 5 s old
    clock.t += 5
    assert not a.tick() and not a.leading()
    kube.partitioned.clear()
    assert a.tick()  # nobody took it meanwhile: renewed


@pytest.mark.parametrize("seed", range(4))
def test_never_two_leaders_whatever_the_timing(kube: FakeKube, seed: int) -> None:
    """Random ticks, clock steps and partitions: at no moment do both believe they lead, and
    whenever both can reach the server long enough, one of them leads."""
    rng = random.Random(seed)
    clock = Clock()
    electors = {name: elector(kube, name, clock) for name in ("a", "b")}
    leaders_seen: set[str] = set()
    for step in range(300):
        roll = rng.random()
        if roll < 0.5:
            name = rng.choice("ab")
            electors[name].tick()
        elif roll < 0.8:
            clock.t += rng.choice([0.5, 2.0, 5.0, 9.0])
        elif roll < 0.9:
            kube.partitioned.symmetric_difference_update({agent(rng.choice("ab"))})
        else:
            name = rng.choice("ab")
            electors[name].release()
        leading = [n for n, e in electors.items() if e.leading()]
        assert len(leading) <= 1, f"step {step}: both lead"
        leaders_seen.update(leading)
    kube.partitioned.clear()
    for _ in range(4):  # both reach the server again: someone leads within a lease duration
        clock.t += DURATION / 2
        for e in electors.values():
            e.tick()
    assert sum(e.leading() for e in electors.values()) == 1
    assert leaders_seen == {"a", "b"}  # the lease changed hands
