"""Seeded long matches (`Match(MatchKind.LONG, ...)`, M13): the complete agents play every
smazzata as `simulation.play_smazzata` does; between smazzate (M13.4) the next deal comes from
outside (`deal_next`), players say `Ready` or now and then `Leave`. Every call is recorded, so
that the match can be replayed from its first deal and its calls.
"""

from __future__ import annotations

import contextlib
import random

from machiavelox.rules import (
    SEATS,
    Action,
    Deal,
    Leave,
    Match,
    MatchKind,
    Phase,
    Ready,
    RulesError,
)

from .agents import COMPLETE, Agents
from .endings import check_ending, check_match_end, check_match_totals
from .invariants import snapshot
from .positions import SHORT, seeded_deal
from .simulation import ACTIVE_STEPS, MAX_GAME_MS, Simulation, Stats
from .watch import Driver, Watch

Call = tuple[str, object, int]  # ("apply", action, t) | ("deal", deal, t) | ("advance", None, t)
MAX_MATCH_MS = 100 * 3600 * 1000


def replay_match(first: Deal, calls: list[Call]) -> Match:
    m = Match(MatchKind.LONG, first)
    for kind, what, at in calls:
        if kind == "apply":
            assert isinstance(what, Action)
            with contextlib.suppress(RulesError):
                m.apply(what, at)
        elif kind == "deal":
            assert isinstance(what, Deal)
            m.deal_next(what, at)
        else:
            m.advance(at)
    return m


def play_long_match(seed: int, stats: Stats) -> Match:
    """A long match from its seed, to its end (M13.3 or M13.5); every smazzata checked as in
    `play_smazzata`, the totals between smazzate, and the match's replay from its calls."""
    rng = random.Random(seed)
    first = seeded_deal(rng, SHORT)
    match = Match(MatchKind.LONG, first)
    calls: list[Call] = []

    def m_apply(action: Action, at: int) -> object:
        calls.append(("apply", action, at))
        return match.apply(action, at)

    def m_advance(at: int) -> object:
        calls.append(("advance", None, at))
        return match.advance(at)

    agents = Agents(rng, match.table, COMPLETE)
    sim = Simulation(agents, Driver(m_apply, m_advance), stats, Watch())
    steps = 0
    dealt = 1  # deals given so far
    while match.result is None:
        assert match.now_ms < MAX_MATCH_MS, "the long match never ends"
        if match.phase == Phase.PAUSE.value:
            # between smazzate (M13.4): the totals so far; the target is not reached (M13.3)
            check_match_totals(match)
            assert max(match.totals) < 150, f"M13.3: the match goes on at {match.totals}"
            at = match.now_ms + rng.randint(0, 20_000)
            if dealt < len(match.smazzate) + 1 and rng.random() < 0.6:
                dealt += 1
                deal = seeded_deal(rng, SHORT)
                calls.append(("deal", deal, at))
                match.deal_next(deal, at)
                continue
            action = agents.comeback(at)
            if action is None:
                who = rng.choice(SEATS)
                action = (Leave(who) if rng.random() < 0.01 else
                          None if who in agents.silent_until else Ready(who))
            if action is None:
                m_advance(at)
            else:
                with contextlib.suppress(RulesError):
                    m_apply(action, at)
            continue
        if match.table is not agents.table:  # the next smazzata has started
            agents.table, agents.plans, sim.watch, steps = match.table, {}, Watch(), 0
        t = agents.table
        steps += 1
        if steps <= ACTIVE_STEPS and t.now_ms - t.start_ms < MAX_GAME_MS // 2:
            sim.step(careful=steps % 8 == 0)
        else:
            sim.drive_to_end()
        if t.phase is Phase.ENDED:
            check_ending(t)
            stats.endings[t.result.ending if t.result else "?"] += 1
    check_match_end(match)
    if match.table.result is not None:
        check_ending(match.table)
    stats.endings["match-" + (match.result.reason if match.result else "?")] += 1
    stats.events["smazzate"] += len(match.smazzate)
    # the match replays from its deals and its calls (match.py: deals come from outside)
    again = replay_match(first, calls)
    assert again.result == match.result and again.totals == match.totals
    assert [str(e) for e in again.events] == [str(e) for e in match.events]
    assert len(again.smazzate) == len(match.smazzate)
    for a, b in zip(again.smazzate, match.smazzate, strict=True):
        assert snapshot(a) == snapshot(b), "a smazzata of the match replays differently"
    return match
