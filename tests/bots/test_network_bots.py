"""The leveled bots on the network (bots/player.py, codec.view_from_pb).

- `codec.view_from_pb` is the inverse of `view_to_pb` on every view of a smazzata between
  solver bots (in-process, seeded), and on views with what such a game rarely shows (a held
  card, a tiebreak, reservations, a result): a network bot decides on exactly what an
  in-process one would, given only what the wire carries;
- the table notes learn from the events what the wire view lacks (M10.2's tied players, M6.5's
  reservations, which end with the owner's calata);
- three `hard` bots queue in the agorà of a real cluster (every service its own process on
  loopback, the rules clock 5 times faster, a seeded deal) and play their smazzata through the
  gateway to its end, with no refusal their view could have predicted;
- `machiavelox bots` takes `--level` (and rejects an unknown one).
"""

from __future__ import annotations

import asyncio
import functools
import io
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2
from machiavelox.bots.arena import LeveledBot, play
from machiavelox.bots.levels import LEVELS
from machiavelox.bots.main import main as bots_main
from machiavelox.bots.main import play as play_bots
from machiavelox.bots.mind import Decision
from machiavelox.bots.player import TableNotes
from machiavelox.local.processes import Proc
from machiavelox.local.up import launch, stop_all
from machiavelox.platform.errors import ServiceError
from machiavelox.rules.view import TableCard

P1, P2, P3 = rules.Seat.P1, rules.Seat.P2, rules.Seat.P3
SCALE = 5.0  # the rules clock: a calata's 40 s in 8 s of wall time
SEED = 1  # the cluster's deal (in-process, three hard bots close it in under a minute)


# ---------------------------------------------------------------------------- round trips
class Recorder:
    """A solver bot whose views are kept (arena.Player)."""

    def __init__(self, bot: LeveledBot, views: list[rules.PlayerView]) -> None:
        self.bot = bot
        self.seat = bot.seat
        self.views = views

    def decide(self, view: rules.PlayerView) -> Decision | None:
        self.views.append(view)
        return self.bot.decide(view)

    def accepted(self, action: rules.Action) -> None:
        self.bot.accepted(action)

    def refused(self, action: rules.Action) -> None:
        self.bot.refused(action)

    def idle(self) -> int:
        return self.bot.idle()


@functools.cache
def game_views(seed: int) -> list[rules.PlayerView]:
    views: list[rules.PlayerView] = []
    players = [Recorder(LeveledBot(rules.Seat(i), LEVELS[name], seed=seed + i), views)
               for i, name in enumerate(("hard", "medium", "hard"))]
    assert play(seed, list(players)).ending != "cut"
    return views


def wire_statuses(view: rules.PlayerView) -> list[str]:
    """The match's words for the seats, as the shard sends them (P4, M9.2)."""
    words = []
    for s in view.seats:
        if s.status != "active":
            words.append(s.status)
        elif s.dormant:
            words.append("dormant")
        elif view.phase == "frozen" and s.seat != view.stopper:
            words.append("frozen")
        else:
            words.append("active")
    return words


def on_the_wire(view: rules.PlayerView) -> rules.PlayerView:
    """`view` without what the wire does not carry (when a dormant player fell silent)."""
    s1, s2, s3 = (replace(s, silent_since_ms=None) for s in view.seats)
    return replace(view, seats=(s1, s2, s3))


def round_trip(view: rules.PlayerView, tiebreak: tuple[rules.Seat, ...] | None = None,
               reserved: tuple[tuple[rules.Card, rules.Seat], ...] = ()) -> rules.PlayerView:
    msg = codec.view_to_pb(view, "t-1", view.phase, wire_statuses(view))
    decoded = common_pb2.PlayerView.FromString(msg.SerializeToString())
    return codec.view_from_pb(decoded, tiebreak, reserved)


def test_view_from_pb_reads_back_every_view_of_a_game() -> None:
    views = game_views(0)
    assert len(views) > 100
    for view in views:
        assert round_trip(view, tiebreak=view.tiebreak, reserved=view.reserved) \
            == on_the_wire(view)
    cards = [tc for v in views for m in v.table for tc in m.cards]
    assert any(tc.status is rules.CardStatus.TRIAL and tc.trial_by is not None for tc in cards)
    assert any(s.zone for v in views for s in v.seats), "an open calata's zone (M6.6)"
    assert any(v.phase == "frozen" for v in views), "a Stop! (M9)"
    assert any(s.pozzetto for v in views for s in v.seats)


def test_view_from_pb_reads_holds_tiebreaks_reservations_and_results() -> None:
    view = next(v for v in game_views(0) if len(v.table) >= 2 and v.viewer == P1)
    meld = view.table[0]
    card = meld.cards[0].card
    held = replace(meld, cards=(replace(meld.cards[0], held_by=P2), *meld.cards[1:]))
    seats = list(view.seats)
    seats[P2] = replace(seats[P2], holding=card, calata_open=True)
    holding = replace(view, table=(held, *view.table[1:]), seats=(seats[0], seats[1], seats[2]),
                      reserved=((card, P2),))
    assert round_trip(holding, reserved=holding.reserved) == on_the_wire(holding)
    assert round_trip(holding).reserved == ((card, P2),), "M6.5: reservations are on the wire"
    older = codec.view_to_pb(holding, "t-1", holding.phase, wire_statuses(holding))
    del older.reserved[:]  # a server older than the field: what the events taught counts
    assert codec.view_from_pb(older, None, ((card, P2),)).reserved == ((card, P2),)

    tied = [replace(s, hand_count=0, pozzetto=()) if s.seat in (P1, P3) else s
            for s in view.seats]
    tiebreak = replace(view, phase="tiebreak", hand=(), seats=(tied[0], tied[1], tied[2]),
                       common=view.hand, tiebreak=(P1, P3), stopper=None)
    assert round_trip(tiebreak, tiebreak=(P1, P3)) == on_the_wire(tiebreak)
    assert round_trip(tiebreak).tiebreak == (P1, P3), "M10.2: the tied players are on the wire"
    older = codec.view_to_pb(tiebreak, "t-1", tiebreak.phase, wire_statuses(tiebreak))
    del older.tiebreak[:]  # a server older than the field: inferred from the cards uncovered
    assert codec.view_from_pb(older).tiebreak == (P1, P3)

    for result in (rules.SmazzataResult(P2, (-7, 50, -12), "closing"),
                   rules.SmazzataResult(None, (0, 0, -9), "draw", draw=(P1, P2))):
        ended = replace(view, phase="ended", result=result)
        assert round_trip(ended) == on_the_wire(ended)


def test_view_from_pb_refuses_a_malformed_view() -> None:
    view = game_views(0)[0]
    msg = codec.view_to_pb(view, "t-1", view.phase, wire_statuses(view))
    short = common_pb2.PlayerView()
    short.CopyFrom(msg)
    del short.seats[2]
    phaseless = common_pb2.PlayerView()
    phaseless.CopyFrom(msg)
    phaseless.phase = common_pb2.PHASE_UNSPECIFIED
    bad_card = common_pb2.PlayerView()
    bad_card.CopyFrom(msg)
    bad_card.hand.add(index=104)
    for bad in (short, phaseless, bad_card):
        with pytest.raises(ServiceError):
            codec.view_from_pb(bad)


def test_table_notes_keep_what_the_events_said() -> None:
    view = next(v for v in game_views(0) if v.viewer == P1 and v.phase == "playing")
    seats = list(view.seats)
    seats[P2] = replace(seats[P2], calata_open=True)
    opened = replace(view, seats=(seats[0], seats[1], seats[2]))
    msg = codec.view_to_pb(opened, "t-1", opened.phase, wire_statuses(opened))
    card = rules.card_at(7)
    notes = TableNotes()
    notes.event(codec.event_to_pb(rules.Event(rules.EventKind.RESERVED, 10, P2, cards=(card,)),
                                  seq=4))
    assert notes.seq == 4
    assert notes.view(msg).reserved == ((card, P2),), "M6.5: reserved to p2"
    closed = codec.view_to_pb(view, "t-1", view.phase, wire_statuses(view))
    assert notes.view(closed).reserved == (), "no calata of p2's open: no reservation"
    notes.event(codec.event_to_pb(rules.Event(rules.EventKind.CONFIRMED, 11, P2), seq=5))
    assert notes.reserved == {}
    notes.event(codec.event_to_pb(rules.Event(rules.EventKind.TIEBREAK, 12, detail="p1 p3"),
                                  seq=6))
    assert notes.tiebreak == (P1, P3)
    notes.event(codec.event_to_pb(rules.Event(rules.EventKind.SMAZZATA, 13), seq=7))
    assert notes.tiebreak is None


# ---------------------------------------------------------------------------- the network
@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Proc]]:
    monkeypatch.setenv("MACHIAVELOX_TABLE_DEAL_SEED", str(SEED))  # the shards inherit it
    procs = launch(0, tmp_path, tmp_path, time_scale=SCALE)
    try:
        yield procs
    finally:
        assert stop_all(procs) == [], "every service stops cleanly on SIGTERM"


@pytest.mark.timeout(120)
async def test_three_hard_bots_play_a_smazzata_through_the_gateway(
        cluster: dict[str, Proc]) -> None:
    gateway = cluster["gateway"].address
    out = io.StringIO()
    outcomes = await asyncio.wait_for(
        play_bots(3, gateway, gateway, "", 0.2, "hard", out, level="hard", time_scale=SCALE),
        90)
    report = out.getvalue()
    assert len({o.table_id for o in outcomes}) == 1, report
    for o in outcomes:
        assert o.result is not None, report
        assert o.level == "hard"
        assert o.actions > 0
        assert o.predictable == [], (o.player, o.predictable)
    [result] = {(o.result.ending, o.result.winner) for o in outcomes if o.result is not None}
    assert result[0] in ("closing", "survivor", "silence", "tiebreak", "draw"), report
    assert " hard " in report
    for proc in cluster.values():
        errors = [r for r in proc.logs() if r.get("level") in ("ERROR", "CRITICAL")]
        assert not errors, f"{proc.name} logged errors: {errors}"


def test_the_bots_command_takes_a_level(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as shown:
        bots_main(["--help"])
    assert shown.value.code == 0
    assert "--level {basic,easy,medium,hard}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as refused:
        bots_main(["--level", "expert", "--scoring", ""])
    assert refused.value.code == 2
    assert "invalid choice: 'expert'" in capsys.readouterr().err


def test_a_card_on_trial_keeps_its_player_on_the_wire() -> None:
    """(TableCard's fields one by one: trial_by and held_by are different seats.)"""
    view = next(v for v in game_views(0) if v.table)
    meld = view.table[0]
    tc = TableCard(meld.cards[0].card, rules.CardStatus.TRIAL, P3, P2)
    odd = replace(view, table=(replace(meld, cards=(tc, *meld.cards[1:])), *view.table[1:]))
    back = round_trip(odd)
    assert back.table[0].cards[0] == tc
