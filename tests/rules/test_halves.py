"""Halves of a run across an undo (M3 interior-removal decision, M5.4.3-M5.4.4, M5.5).

An interior removal splits a run in two; when the chain undoes that removal, the halves join
again (board.py, "meld identity across undo"). Work that another player did on one half is then
work on the whole meld: it is judged there, it depends on the removal exactly when it needed it,
and the meld it touches is shown as theirs, on trial.

The same holds in the judgement's "without the trial work" replays (M5.4.3): there a removal
may cut a run that the table never cut, and the card left alone is irregular work.

Found by the property tests (a meld such as [6♦ 7♦] or [8♠] left irregular with no open calata
touching it, as the invariant of M3/M5.4/M5.5.4 sees it) and shrunk to the positions below; the
same stories are in tests/scenarios/chain/: halves-join-again.mxs,
emptied-half-needs-the-split.mxs, irregular-anyway-needs-nothing.mxs,
split-only-without-trial-work.mxs, pieces-of-one-meld.mxs and
end-card-interior-without-trial.mxs.
"""

from __future__ import annotations

from machiavelox.rules import (
    Attach,
    Cancel,
    CardStatus,
    Conclude,
    Declare,
    Move,
    Place,
    card,
    meld_status,
)

from .sim.invariants import check_all, open_touch
from .sim.positions import P1, P2, P3, cards, kinds, meld_with, melds, position


def test_a_card_taken_from_a_half_works_on_the_joined_meld() -> None:
    """M5.5.5, M5.4.3, P2: p2 took the 5♠ out of the high half of p1's split; p1's removal is
    undone, so the 5♠ comes out of the whole run (leaving 3-4 and 6-7♠). p2 did not need the
    split (the meld is irregular either way), so p2 keeps that work, on trial: both melds are
    p2's, shown on trial, and p2's 40 s decide them."""
    t = position(table=("3S 4S 5S 6S 7S", "5H 5C 5D"), hands=("KD", "QH", ""))
    t.apply(Declare(P1, cards("KD")), 1000)
    t.apply(Move(P1, card("4S"), meld_with(t, "3S"), None), 1000)  # [3S] and [5S 6S 7S]
    t.apply(Declare(P2, cards("QH")), 2000)
    t.apply(Move(P2, card("5S"), meld_with(t, "6S"), meld_with(t, "5H")), 2000)
    ev = t.apply(Cancel(P1), 3000)
    assert "cancelled p1" in kinds(ev) and not any(k.startswith("chain") for k in kinds(ev))
    assert melds(t) == [["3S#1", "4S#1"], ["5C#1", "5D#1", "5H#1", "5S#1"], ["6S#1", "7S#1"]]
    for c in ("3S", "6S"):
        mid = meld_with(t, c)
        assert open_touch(t, mid), f"p2's open calata works on {t.board.melds[mid]}"
        assert meld_status(t, mid) is CardStatus.TRIAL
    check_all(t)
    ev = t.advance(42_000)
    assert "failed p2" in kinds(ev)
    assert melds(t) == [["3S#1", "4S#1", "5S#1", "6S#1", "7S#1"], ["5C#1", "5D#1", "5H#1"]]
    check_all(t)


def test_emptying_a_half_needs_the_removal_that_left_it() -> None:
    """M5.4.4 (removals on trial count when needed), M5.5.2: p2 takes the lone 4♠ that p1's
    interior removal left. The [4♠] is gone only thanks to that removal: without it, taking the
    4♠ would leave 2-3♠. So p2 needs it, and falls with it (M5.5.5: p2's calata stays open)."""
    t = position(table=("2S 3S 4S", "4D 4C 4H"), hands=("KD", "QH", ""))
    t.apply(Declare(P1, cards("KD")), 1000)
    t.apply(Move(P1, card("3S"), meld_with(t, "2S"), None), 1000)  # [2S] and [4S]
    t.apply(Declare(P2, cards("QH")), 2000)
    t.apply(Move(P2, card("4S"), meld_with(t, "4S"), meld_with(t, "4D")), 2000)
    p1_move = t.calate[1].ops[0]
    p2_cal = t.open_calata(P2)
    assert p2_cal is not None and not p2_cal.fail_ops
    assert p2_cal.needs == {p2_cal.ops[0]: frozenset({p1_move})}
    ev = t.apply(Cancel(P1), 3000)
    assert "chain p2 by p1" in kinds(ev)
    assert melds(t) == [["2S#1", "3S#1", "4S#1"], ["4C#1", "4D#1", "4H#1"]]
    assert t.open_calata(P2) is not None and t.players[P2].pozzetto == set(cards("QH"))
    check_all(t)


def test_a_meld_irregular_either_way_needs_no_trial_work() -> None:
    """M5.4.3, M5.4.5, M5.5.3: p2 leaves [6♠ 7♠] whatever p1's trial work does (with it, or
    without any of it). That work is not needed, so p2 is not in order (its calata does not
    conclude by itself), and when p1 gives up nothing of p2's falls; at p2's 40 s only the
    irregular gesture falls, the 10♥ elsewhere stays."""
    t = position(table=("5S 6S 7S", "5H 5C 5D", "JH QH KH"), hands=("3S 4S KD", "10H", ""))
    t.apply(Declare(P1, cards("3S 4S KD")), 1000)
    t.apply(Place(P1, card("4S"), meld_with(t, "5S")), 1000)
    t.apply(Place(P1, card("3S"), meld_with(t, "5S")), 1000)
    t.apply(Move(P1, card("4S"), meld_with(t, "5S"), None), 1000)  # [3S] and [5S 6S 7S]
    t.apply(Declare(P2, cards("10H")), 2000)
    t.apply(Move(P2, card("5S"), meld_with(t, "6S"), meld_with(t, "5H")), 2000)
    t.apply(Place(P2, card("10H"), meld_with(t, "JH")), 2000)
    p2_cal = t.open_calata(P2)
    assert p2_cal is not None, "p2's [6S 7S] is irregular: no automatic conclusion"
    assert p2_cal.fail_ops == {p2_cal.ops[0]} and not p2_cal.needs
    ev = t.apply(Cancel(P1), 3000)
    assert not any(k.startswith("chain") for k in kinds(ev))
    assert t.open_calata(P2) is not None
    ev = t.advance(42_000)
    assert "failed p2" in kinds(ev)
    assert melds(t) == [["10H#1", "JH#1", "KH#1", "QH#1"], ["5C#1", "5D#1", "5H#1"],
                        ["5S#1", "6S#1", "7S#1"]]
    assert not t.players[P2].hand and not t.players[P2].pozzetto
    check_all(t)


def test_a_removal_that_cuts_the_run_only_without_trial_work() -> None:
    """M5.4.3, M5.4.5: p1 brings the 7♠ to 4-5-6♠, adds the 8♠, takes the 7♠ back. On the table
    p2's stray J♦ makes the meld shapeless, so nothing is cut; judged without the J♦ (trial
    work counts neither for nor against) the 7♠ leaves 4-5-6♠ and a lone 8♠: irregular, so
    p1's work falls at its conclusion instead of being confirmed over a wound."""
    t = position(table=("4S 5S 6S", "7S 7H 7D 7C"), hands=("8S KD", "JD", ""))
    t.apply(Attach(P2, card("JD"), meld_with(t, "4S")), 1000)
    t.apply(Declare(P1, cards("8S KD")), 2000)
    t.apply(Move(P1, card("7S"), meld_with(t, "7H"), meld_with(t, "4S")), 2000)
    t.apply(Place(P1, card("8S"), meld_with(t, "4S")), 2000)
    t.apply(Move(P1, card("7S"), meld_with(t, "4S"), meld_with(t, "7H")), 2000)
    p1_cal = t.open_calata(P1)
    assert p1_cal is not None and p1_cal.fail_ops == set(p1_cal.ops)
    ev = t.apply(Conclude(P1), 3000)
    assert "failed p1" in kinds(ev)
    assert t.players[P1].hand == set(cards("8S KD"))
    assert melds(t) == [["4S#1", "5S#1", "6S#1", "JD#1"], ["7C#1", "7D#1", "7H#1", "7S#1"]]
    check_all(t)
    ev = t.advance(41_000)
    assert "failed p2" in kinds(ev)
    assert melds(t) == [["4S#1", "5S#1", "6S#1"], ["7C#1", "7D#1", "7H#1", "7S#1"]]
    check_all(t)


def test_trial_work_on_every_piece_of_a_meld_is_left_out() -> None:
    """M5.4.3: p3 took the 9♦ out of 8-9-10♦ and then the 10♦ out of the piece left: both are
    trial work on that meld, so p1's J♦ on the [8♦] is judged on 8-9-10♦ + J♦ (regular, needing
    nothing), not on 8-9♦ + J♦ as if p3's second move had been made on the whole run."""
    t = position(table=("8D 9D 10D",), hands=("JD", "", "KC"))
    t.apply(Declare(P3, cards("KC")), 1000)
    t.apply(Move(P3, card("9D"), meld_with(t, "8D"), None), 1000)  # [8D] [10D] [9D]
    t.apply(Move(P3, card("10D"), meld_with(t, "10D"), meld_with(t, "9D")), 1000)
    ev = t.apply(Attach(P1, card("JD"), meld_with(t, "8D")), 2000)
    assert "confirmed p1" in kinds(ev)
    assert not t.ops[t.calate[2].ops[0]].needs
    check_all(t)
    ev = t.apply(Cancel(P3), 3000)
    assert not any(k.startswith("chain") for k in kinds(ev))
    assert melds(t) == [["10D#1", "8D#1", "9D#1", "JD#1"]]
    check_all(t)


def test_an_end_card_that_is_interior_without_trial_work() -> None:
    """M5.4.3-M5.4.4, M5.5.2, M5.5.8: p3's trial move takes the 10♣ off 5-10♣; p2 then takes
    the 9♣, an end card now. Without p3's removal it would cut the run into 5-8♣ and a lone
    10♣, so p2 needs that removal: when it falls, p2 falls with it, before p2's calata can
    become definitive (a consolidated p2 would leave the lone 10♣ a wound for ever)."""
    t = position(table=("5C 6C 7C 8C 9C 10C", "9H 9S 9D", "10H 10S 10D", "JH QH KH"),
                 hands=("2S 4D", "AH 2C", "3D 4H"))
    t.apply(Declare(P3, cards("3D")), 1000)
    t.apply(Move(P3, card("10C"), meld_with(t, "5C"), meld_with(t, "10H")), 1000)
    p3_move = frozenset(t.calate[1].ops)
    t.apply(Declare(P2, cards("AH")), 1000)
    t.apply(Move(P2, card("9C"), meld_with(t, "5C"), meld_with(t, "9H")), 1000)
    ev = t.apply(Place(P2, card("AH"), meld_with(t, "JH")), 1000)
    assert "confirmed p2" in kinds(ev)
    assert t.ops[t.calate[2].ops[0]].needs == p3_move
    t.apply(Declare(P1, cards("2S")), 1001)
    t.apply(Place(P1, card("2S"), meld_with(t, "5C")), 1001)
    ev = t.advance(41_000)
    assert "failed p3" in kinds(ev) and "chain p2 by p3" in kinds(ev)
    assert "consolidated p2" not in kinds(ev)
    assert t.players[P2].hand == set(cards("AH 2C"))
    check_all(t)
    t.advance(42_000)
    assert melds(t) == [["10C#1", "5C#1", "6C#1", "7C#1", "8C#1", "9C#1"],
                        ["10D#1", "10H#1", "10S#1"], ["9D#1", "9H#1", "9S#1"],
                        ["JH#1", "KH#1", "QH#1"]]
    check_all(t)
