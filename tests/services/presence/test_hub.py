"""The hub and its rule in-process, no store: what watchers are told of facts and outages."""

from __future__ import annotations

import asyncio

import pytest

from machiavelox.presence.hub import Context, Fact, LivenessChange, LivenessHub, Watch, judge

SILENCE = 1000
STALE = 500
T0 = 1_700_000_000_000


def silent(player: str, silent_for: int, since: int) -> LivenessChange:
    return LivenessChange(player, False, silent_for_ms=silent_for, since_ms=since)


def alive(player: str, since: int) -> LivenessChange:
    return LivenessChange(player, True, since_ms=since)


def unknown(player: str) -> LivenessChange:
    return LivenessChange(player, False, unknown=True)


def vouched(now: int, until: int | None = None, since: int = T0 - 100_000) -> Context:
    return Context(now, now if until is None else until, since)


async def received(watch: Watch, count: int) -> list[LivenessChange]:
    out = []
    for _ in range(count):
        change = await asyncio.wait_for(watch.next(), 5.0)
        assert change is not None
        out.append(change)
    return out


async def nothing_more(watch: Watch, wait_s: float = 0.05) -> None:
    try:
        extra = await asyncio.wait_for(watch.next(), wait_s)
    except TimeoutError:
        return
    pytest.fail(f"unexpected change {extra}")


def test_the_rule() -> None:
    """judge: a silence is reported only for vouched time, counted from the later of the last
    sign of life and `known_from`; unknown when an outage is in the way; nothing while the
    beacons merely lag."""
    lapsed = Fact("p", False, T0)
    assert judge(Fact("p", True, T0), vouched(T0 + 10 * SILENCE), SILENCE, STALE) == alive(
        "p", T0)
    assert judge(lapsed, vouched(T0 + SILENCE), SILENCE, STALE) == silent("p", SILENCE, T0)
    # counted up to the oldest beacon, not to now
    assert judge(lapsed, vouched(T0 + SILENCE + 300, T0 + SILENCE + 100), SILENCE,
                 STALE) == silent("p", SILENCE + 100, T0)
    # beacons lagging by less than STALE: nothing yet; by more: unknown
    assert judge(lapsed, vouched(T0 + SILENCE + 10, T0 + SILENCE - 1), SILENCE, STALE) is None
    assert judge(lapsed, vouched(T0 + SILENCE + STALE + 10, T0 + 5), SILENCE,
                 STALE) == unknown("p")
    # presence could not tell until after the last sign of life: unknown, then counted from then
    back = T0 + 60_000
    assert judge(lapsed, vouched(back + 10, since=back), SILENCE, STALE) == unknown("p")
    assert judge(lapsed, vouched(back + SILENCE, since=back), SILENCE, STALE) == silent(
        "p", SILENCE, back)
    # never seen: silent for as long as presence has known
    assert judge(Fact("p", False, 0), vouched(back + 2 * SILENCE, since=back), SILENCE,
                 STALE) == silent("p", 2 * SILENCE, back)


async def test_an_outage_tells_unknown_once_and_the_return_the_truth() -> None:
    """lost(): every watcher unknown, once; a watch opened meanwhile unknown at once; facts
    learnt meanwhile kept; restore(): the truth, with silences counted from the return."""
    hub = LivenessHub(SILENCE, STALE)
    hub.restore(vouched(T0), [])
    watch = hub.watch(["a", "b"])
    hub.update(vouched(T0), [Fact("a", True, T0 - 10), Fact("b", False, T0 - 5 * SILENCE)])
    assert await received(watch, 2) == [alive("a", T0 - 10),
                                        silent("b", 5 * SILENCE, T0 - 5 * SILENCE)]
    hub.lost()
    hub.lost()
    assert await received(watch, 2) == [unknown("a"), unknown("b")]
    late = hub.watch(["b"])
    assert await received(late, 1) == [unknown("b")]
    hub.update(vouched(T0 + 100), [Fact("a", True, T0 + 50)])  # heard while out: not told yet
    await nothing_more(watch)
    back = T0 + 200
    hub.restore(vouched(back, since=back), [Fact("b", False, T0 - 5 * SILENCE)])
    assert await received(watch, 1) == [alive("a", T0 + 50)]  # b: still unknown
    await nothing_more(watch)
    hub.update(vouched(back + SILENCE - 1, since=back))
    await nothing_more(watch)
    hub.update(vouched(back + SILENCE, since=back))
    assert await received(watch, 1) == [silent("b", SILENCE, back)]
    assert await received(late, 1) == [silent("b", SILENCE, back)]


async def test_a_silence_is_counted_anew_when_presence_could_not_tell() -> None:
    """A context whose known_from moves past a silence's start (another replica back from an
    outage) turns that silence unknown until it is vouched again."""
    hub = LivenessHub(SILENCE, STALE)
    hub.restore(vouched(T0), [])
    watch = hub.watch(["b"])
    hub.update(None, [Fact("b", False, T0 - 2 * SILENCE)])
    assert await received(watch, 1) == [silent("b", 2 * SILENCE, T0 - 2 * SILENCE)]
    hub.update(vouched(T0 + 10, since=T0 + 5))
    assert await received(watch, 1) == [unknown("b")]
    hub.update(vouched(T0 + 5 + SILENCE, since=T0 + 5))
    assert await received(watch, 1) == [silent("b", SILENCE, T0 + 5)]
    hub.update(vouched(T0 + 5 + 2 * SILENCE, since=T0 + 5))  # the same silence: told once
    await nothing_more(watch)


async def test_resync_sends_only_what_a_watcher_missed() -> None:
    hub = LivenessHub(SILENCE, STALE)
    hub.restore(vouched(T0), [])
    watch = hub.watch(["p1", "p2"])
    hub.update(None, [Fact("p1", True, T0)])
    assert await received(watch, 1) == [alive("p1", T0)]
    hub.lost()
    assert await received(watch, 2) == [unknown("p1"), unknown("p2")]
    hub.restore(vouched(T0 + 10), [Fact("p1", True, T0), Fact("p2", True, T0 + 5)])
    assert sorted(await received(watch, 2), key=lambda c: c.player_id) == [
        alive("p1", T0), alive("p2", T0 + 5)]
    hub.update(None, [Fact("p2", True, T0 + 5), Fact("p3", True, T0)])  # known; not watched
    hub.update(None, [Fact("p1", False, T0 - 1)])  # older than what is known
    await nothing_more(watch)


async def test_a_lagging_watcher_is_closed() -> None:
    hub = LivenessHub(SILENCE, STALE, backlog=2)
    hub.restore(vouched(T0), [])
    watch = hub.watch(["p1"])
    for i in range(3):
        hub.update(None, [Fact("p1", True, T0 + 2 * i)])
    assert len(await received(watch, 2)) == 2
    assert await watch.next() is None
    assert watch.lagging
    hub.close()
    assert await hub.watch(["p1"]).next() is None  # after shutdown, watches end at once


async def test_unwatched_players_are_forgotten() -> None:
    hub = LivenessHub(SILENCE, STALE)
    hub.restore(vouched(T0), [])
    first = hub.watch(["p1"])
    hub.update(None, [Fact("p1", True, T0)])
    assert hub.missing(["p1", "p2"]) == ["p2"]
    hub.unwatch(first)
    assert hub.missing(["p1"]) == ["p1"] and hub.watched() == []
