"""M5: the calata — direct melds, attaching, moving table cards, conclusion and judgement."""

from __future__ import annotations

import pytest

from machiavelox.rules import (
    Attach,
    Cancel,
    Conclude,
    Declare,
    Direct,
    Draw,
    IllegalActionError,
    InvalidActionError,
    Move,
    Place,
    Undeclare,
)
from machiavelox.rules.state import CalataStatus

from .sim.positions import P1, P2, cards, kinds, meld_with, melds, position


def test_direct_meld_from_the_pozzetto_only_if_regular() -> None:
    """M5.1: composed in the pozzetto, put down at once by one command, only if regular."""
    t = position(hands=("KH KD KC 2S", "", ""))
    t.apply(Declare(P1, cards("KH KD 2S")), 0)
    with pytest.raises(IllegalActionError) as err:
        t.apply(Direct(P1, cards("KH KD 2S")), 1)
    assert err.value.code == "meld/irregular"
    t.apply(Declare(P1, cards("KC")), 2)  # M5.3.4: more cards after the start
    ev = t.apply(Direct(P1, cards("KH KD KC")), 3)
    assert melds(t) == [["KC#1", "KD#1", "KH#1"]]
    assert "confirmed p1" not in kinds(ev)  # 2S still in the pozzetto: not concluded
    ev = t.apply(Undeclare(P1, cards("2S")), 4)
    assert "confirmed p1" in kinds(ev)
    assert t.players[P1].direct_meld_calate  # M8.2(2) acquired


def test_attach_concludes_by_itself_when_regular() -> None:
    """M5.2 and the calata-lifecycle decision (a): concluded as soon as the work is in order."""
    t = position(table=("4C 5C 6C",), hands=("7C 9H", "", ""))
    ev = t.apply(Attach(P1, cards("7C")[0], meld_with(t, "4C")), 1000)
    assert kinds(ev)[-1] == "confirmed p1"
    assert t.open_calata(P1) is None
    cal = t.calate[1]
    assert cal.status is CalataStatus.CONFIRMED and cal.consolidate_ms == 41_000
    ev = t.advance(41_000)
    assert kinds(ev) == ["consolidated p1"]  # M5.5.8


def test_no_play_from_the_hand_while_the_pozzetto_has_cards() -> None:
    """M5.3.2."""
    t = position(table=("4C 5C 6C",), hands=("7C KH", "", ""))
    t.apply(Declare(P1, cards("KH")), 0)
    with pytest.raises(IllegalActionError) as err:
        t.apply(Attach(P1, cards("7C")[0], meld_with(t, "4C")), 1)
    assert err.value.code == "attach/pozzetto"


def test_table_cards_need_a_declaration() -> None:
    """M5.3.1 / M6.2: without declared cards one does not touch table cards."""
    t = position(table=("4C 5C 6C 7C",), hands=("KH", "", ""))
    with pytest.raises(IllegalActionError) as err:
        t.apply(Move(P1, cards("7C")[0], meld_with(t, "4C"), None), 0)
    assert err.value.code == "take/not-declared"


def test_rearrangement_declare_move_place() -> None:
    """M5.3: declare, move, place; the calata concludes when the work is in order."""
    t = position(table=("5H 6H 7H 8H", "9S 9D 9C"), hands=("8S", "", ""))
    t.apply(Declare(P1, cards("8S")), 0)
    t.apply(Move(P1, cards("8H")[0], meld_with(t, "5H"), None), 1)  # 8H to a new meld
    assert t.open_calata(P1) is not None
    new = meld_with(t, "8H")
    ev = t.apply(Place(P1, cards("8S")[0], new), 2)  # 8H 8S: still a wound
    assert t.open_calata(P1) is not None and "confirmed p1" not in kinds(ev)
    assert melds(t) == [["5H#1", "6H#1", "7H#1"], ["8H#1", "8S#1"], ["9C#1", "9D#1", "9S#1"]]


def test_failed_calata_returns_only_the_irregular_work() -> None:
    """M5.4.5: what was done on melds left irregular falls; work left in order stays."""
    t = position(table=("5H 6H 7H 8H", "9S 9D 9C"), hands=("8S 10S JS", "", ""))
    t.apply(Declare(P1, cards("8S")), 0)
    t.apply(Move(P1, cards("8H")[0], meld_with(t, "5H"), None), 1)
    t.apply(Place(P1, cards("8S")[0], meld_with(t, "8H")), 2)
    ev = t.apply(Conclude(P1), 3)
    assert "failed p1" in kinds(ev)
    assert melds(t) == [["5H#1", "6H#1", "7H#1", "8H#1"], ["9C#1", "9D#1", "9S#1"]]
    assert t.players[P1].hand == set(cards("8S 10S JS"))


def test_independent_gestures_one_fails() -> None:
    """M5.5.3: unconnected work stays when another gesture of the same calata fails."""
    t = position(table=("4C 5C 6C", "9S 9D 9C"), hands=("7C JS", "", ""))
    m1, m2 = meld_with(t, "4C"), meld_with(t, "9S")
    t.apply(Attach(P1, cards("JS")[0], m1), 0)  # a wound
    t.apply(Attach(P1, cards("7C")[0], m1), 1)
    ev = t.advance(40_000)  # M5.4.6: at 40 s the calata concludes by itself
    assert "failed p1" in kinds(ev)
    assert t.players[P1].hand == set(cards("JS 7C"))
    assert m2 in t.board.melds


def test_void_rearrangement_without_own_cards() -> None:
    """M5.3.7: moves without placing any own card are cancelled whole."""
    t = position(table=("5H 6H 7H 8H", "9S 9D 9C 9H"), hands=("KS", "", ""))
    before = melds(t)
    t.apply(Declare(P1, cards("KS")), 0)
    t.apply(Move(P1, cards("9H")[0], meld_with(t, "9S"), meld_with(t, "5H")), 1)
    t.apply(Move(P1, cards("9H")[0], meld_with(t, "5H"), None), 2)
    ev = t.apply(Undeclare(P1, cards("KS")), 3)
    assert "failed p1" in kinds(ev)
    assert melds(t) == before


def test_annulla_removes_all_own_work() -> None:
    """M5.5.6: ANNULLA removes even the regular part."""
    t = position(table=("4C 5C 6C", "9S 9D 9C"), hands=("7C JS", "", ""))
    t.apply(Attach(P1, cards("JS")[0], meld_with(t, "4C")), 0)
    t.apply(Attach(P1, cards("7C")[0], meld_with(t, "4C")), 1)
    ev = t.apply(Cancel(P1), 2)
    assert "cancelled p1" in kinds(ev)
    assert melds(t) == [["4C#1", "5C#1", "6C#1"], ["9C#1", "9D#1", "9S#1"]]
    assert t.players[P1].hand == set(cards("7C JS"))


def test_unknown_meld_is_invalid_and_changes_nothing() -> None:
    t = position(table=("4C 5C 6C",), hands=("7C", "", ""))
    with pytest.raises(InvalidActionError):
        t.apply(Attach(P1, cards("7C")[0], 999), 0)
    assert t.open_calata(P1) is None and t.players[P1].hand == set(cards("7C"))
    with pytest.raises(IllegalActionError):
        t.apply(Draw(P2), 0)
