"""M5.4.3-M5.4.4 and M5.5 with several players: trial cards, needs, chain cancellation."""

from __future__ import annotations

from machiavelox.rules import Attach, Cancel, Conclude, Declare, Move, Place, Table
from machiavelox.rules.state import CalataStatus

from .sim.positions import P1, P2, P3, cards, kinds, meld_with, melds, position


def test_disturbance_does_not_drag() -> None:
    """M5.4.3 / M5.5.2: the stray J♠ on 4-5-6♣ does not drag the 7♣ attached after it."""
    t = position(table=("4C 5C 6C",), hands=("JS", "7C", ""))
    m = meld_with(t, "4C")
    t.apply(Attach(P1, cards("JS")[0], m), 1000)
    ev = t.apply(Attach(P2, cards("7C")[0], m), 1000)
    assert "confirmed p2" in kinds(ev)
    assert t.open_calata(P1) is not None
    ev = t.advance(41_000)
    assert "failed p1" in kinds(ev) and not any(k.startswith("chain") for k in kinds(ev))
    assert melds(t) == [["4C#1", "5C#1", "6C#1", "7C#1"]]
    assert t.players[P1].hand == set(cards("JS"))


def _seven_on_trial() -> tuple[Table, int]:
    t = position(table=("4C 5C 6C", "7C 7H 7S"), hands=("7D KD", "8C", ""))
    t.apply(Declare(P1, cards("7D KD")), 0)
    t.apply(Move(P1, cards("7C")[0], meld_with(t, "7H"), meld_with(t, "4C")), 1000)
    ev = t.apply(Attach(P2, cards("8C")[0], meld_with(t, "4C")), 2000)
    assert "confirmed p2" in kinds(ev)  # M5.4.4: the 7♣ on trial counts: p2 needed it
    return t, 0


def test_the_seven_that_the_eight_needed_falls_and_drags_the_eight() -> None:
    """M5.4.4 + M5.5.1/2: when the 7♣ falls, the 8♣ that needed it falls too."""
    t, _ = _seven_on_trial()
    ev = t.apply(Conclude(P1), 3000)  # 7♥ 7♠ left a wound: p1's move falls
    assert "failed p1" in kinds(ev) and "chain p2 by p1" in kinds(ev)
    assert melds(t) == [["4C#1", "5C#1", "6C#1"], ["7C#1", "7H#1", "7S#1"]]
    assert t.players[P2].hand == set(cards("8C"))  # M5.5.7
    assert t.players[P1].hand == set(cards("7D KD"))


def test_the_seven_stays_and_so_does_the_eight() -> None:
    t, _ = _seven_on_trial()
    t.apply(Place(P1, cards("7D")[0], meld_with(t, "7H")), 3000)
    ev = t.apply(Conclude(P1), 3000)
    assert "confirmed p1" in kinds(ev) and not any(k.startswith("chain") for k in kinds(ev))
    assert melds(t) == [["4C#1", "5C#1", "6C#1", "7C#1", "8C#1"], ["7D#1", "7H#1", "7S#1"]]


def test_mend_of_a_removal_falls_with_it() -> None:
    """M5.5.2: I take a card from a meld, you mend it with yours, my calata falls: yours too."""
    t = position(table=("KH KS KD", "QD JD 10D"), hands=("9D", "KD#2", ""))
    t.apply(Declare(P1, cards("9D")), 0)
    t.apply(Move(P1, cards("KD")[0], meld_with(t, "KH"), meld_with(t, "QD")), 1000)
    ev = t.apply(Attach(P2, cards("KD#2")[0], meld_with(t, "KH")), 2000)
    assert "confirmed p2" in kinds(ev)
    ev = t.apply(Cancel(P1), 3000)
    assert "chain p2 by p1" in kinds(ev)
    assert melds(t) == [["10D#1", "JD#1", "QD#1"], ["KD#1", "KH#1", "KS#1"]]
    assert t.players[P2].hand == set(cards("KD#2"))


def test_confirmed_calata_reached_falls_whole_open_one_loses_the_piece() -> None:
    """M5.5.5: a confirmed calata reached by the chain falls whole; an open one stays open."""
    t = position(table=("4C 5C 6C", "7C 7H 7S", "2H 3H 4H"),
                 hands=("7D KD", "8C 5H", "9C 10C"))
    t.apply(Declare(P1, cards("7D KD")), 0)
    t.apply(Move(P1, cards("7C")[0], meld_with(t, "7H"), meld_with(t, "4C")), 1000)
    # p2: one calata with two gestures, the 8♣ needing p1's 7♣, the 5♥ independent.
    t.apply(Declare(P2, cards("8C 5H")), 1500)
    t.apply(Place(P2, cards("8C")[0], meld_with(t, "4C")), 2000)
    ev = t.apply(Place(P2, cards("5H")[0], meld_with(t, "2H")), 2000)
    assert "confirmed p2" in kinds(ev)
    # p3: an open calata building on p2's 8♣
    t.apply(Declare(P3, cards("9C 10C")), 2500)
    t.apply(Place(P3, cards("9C")[0], meld_with(t, "4C")), 3000)
    ev = t.apply(Conclude(P1), 4000)
    assert {"failed p1", "chain p2 by p1", "chain p3 by p1"} <= set(kinds(ev))
    assert t.players[P2].hand == set(cards("8C 5H"))  # whole calata, the 5♥ too
    assert t.open_calata(P3) is not None  # still open, lost only the 9♣
    assert t.players[P3].pozzetto == set(cards("9C 10C"))
    assert t.calate[2].status is CalataStatus.FELL
    assert melds(t) == [["2H#1", "3H#1", "4H#1"], ["4C#1", "5C#1", "6C#1"],
                        ["7C#1", "7H#1", "7S#1"]]
