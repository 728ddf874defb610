"""M5.4.3-M5.4.4: which trial cards of others a player's work needed, decided exactly (issue 14
item 1): no cap on the trial work looked at, strays never count, and where two trial cards
could serve, the one put on the table first counts (docs/rules-decisions.md).

Each test names what it would see without the part it proves; the property tests are in
test_trial_properties.py.
"""

from __future__ import annotations

import random

import pytest

from machiavelox.rules import Attach, Cancel, Declare, Move, Place, card
from machiavelox.rules.board import Board
from machiavelox.rules.cards import ALL_CARDS, Card
from machiavelox.rules.melds import is_regular
from machiavelox.rules.state import CalataStatus
from machiavelox.rules.structure import viable
from machiavelox.rules.trial import Judged, Search, _Branch, _first

from .sim.invariants import check_all
from .sim.oracle import oracle_judgement, order_key
from .sim.positions import P1, P2, P3, cards, kinds, meld_with, melds, position


def _strays(n: int) -> str:
    """`n` cards that fit no meld with 4-5-6♣ or with each other: other suits, ranks two
    apart, never three of one rank."""
    faces = [f"{r}{s}" for r in ("2", "4", "6", "8", "10", "Q") for s in "HDS"]
    return " ".join(faces[:n])


@pytest.mark.parametrize("strays", [0, 1, 6, 7, 12])
def test_the_needed_seven_is_found_behind_any_number_of_strays(strays: int) -> None:
    """M5.4.4 and §5.4 ("Attaccare carte a caso alle giocate degli altri per farle cadere
    diventa una strategia ineffettiva"): p2 puts `strays` stray cards on trial on 4-5-6♣, then
    p3 the 7♣, then p1 attaches the 8♣. p1's 8 needs p3's 7 and nothing of p2's, however many
    strays came first. (With the old search, which tried only the first 6 trial ops on a meld,
    7 or more strays hid the 7♣ and p1's correct work was judged irregular.)"""
    stray = _strays(strays)
    t = position(table=("4C 5C 6C",), hands=("8C", f"{stray} KD".strip(), "7C QD"))
    run = meld_with(t, "4C")
    t.apply(Declare(P2, cards(f"{stray} KD".strip())), 1000)  # the K♦ stays in the pozzetto
    for c in cards(stray):
        t.apply(Place(P2, c, run), 1000)
    t.apply(Declare(P3, cards("7C QD")), 1000)  # the Q♦ keeps p3's calata open
    t.apply(Place(P3, card("7C"), run), 1000)
    seven = t.ops[t.live[-1]]
    ev = t.apply(Attach(P1, card("8C"), run), 2000)
    assert "confirmed p1" in kinds(ev), kinds(ev)
    eight = next(op for op in t.ops.values() if op.player == P1)
    assert eight.needs == frozenset({seven.seq})  # M5.4.4: the 7, and only the 7
    check_all(t)
    ev = t.apply(Cancel(P3), 3000)  # the 7 goes back: the 8 that needed it goes too (M5.5)
    assert "chain p1 by p3" in kinds(ev)
    assert t.players[P1].hand == set(cards("8C"))
    check_all(t)


def test_of_two_copies_that_could_fill_the_gap_the_first_on_the_table_counts() -> None:
    """Decision (docs/rules-decisions.md, M5.4.4): p2 puts 7♣#1 on trial on 4-5-6♣, then p3
    the other 7♣; p1's 8♣ could stand on either (each alone fills the gap; both would be a
    repeat). The 7 that came first counts, the same choice as for two calate confirmed for one
    place (M6.4: the first to arrive keeps it): p1 needs p2's 7, not p3's. (Without a rule for
    copies, the answer would depend on the search's order.)"""
    t = position(table=("4C 5C 6C",), hands=("8C", "7C KD", "7C#2 QD"))
    run = meld_with(t, "4C")
    t.apply(Declare(P2, cards("7C KD")), 1000)
    t.apply(Place(P2, card("7C"), run), 1000)
    first = t.ops[t.live[-1]]
    t.apply(Declare(P3, cards("7C#2 QD")), 1500)
    t.apply(Place(P3, card("7C#2"), run), 1500)
    second = t.ops[t.live[-1]]
    ev = t.apply(Attach(P1, card("8C"), run), 2000)
    assert "confirmed p1" in kinds(ev)
    eight = next(op for op in t.ops.values() if op.player == P1)
    assert eight.needs == frozenset({first.seq})
    assert second.seq not in eight.needs
    check_all(t)


def test_the_later_copy_is_chosen_when_the_first_cannot_serve() -> None:
    """The earliest copy counts only among the ones that make the meld regular: p2's 7♣ on
    trial went to a meld the 8♣ is not on, so p1's 8 needs p3's 7♣#2 (the one on its meld)."""
    t = position(table=("4C 5C 6C", "7H 7S 7D"), hands=("8C", "7C KD", "7C#2 QD"))
    t.apply(Declare(P2, cards("7C KD")), 1000)
    t.apply(Place(P2, card("7C"), meld_with(t, "7H")), 1000)
    t.apply(Declare(P3, cards("7C#2 QD")), 1500)
    t.apply(Place(P3, card("7C#2"), meld_with(t, "4C")), 1500)
    second = t.ops[t.live[-1]]
    ev = t.apply(Attach(P1, card("8C"), meld_with(t, "4C")), 2000)
    assert "confirmed p1" in kinds(ev)
    eight = next(op for op in t.ops.values() if op.player == P1)
    assert eight.needs == frozenset({second.seq})


def test_a_set_needs_one_trial_suit_of_those_that_could_complete_it() -> None:
    """M3.4 and M5.4.4: p1 takes the 7♦ out of 7♥ 7♠ 7♦ (for its run); the set is left with
    two cards, and two trial cards on it could be its third: p2's 7♣ (first) and p3's 7♦#2.
    One is enough (a set of three), and the first counts; the stray 9♠ of p3 counts for
    nothing."""
    t = position(table=("7H 7S 7D", "5D 6D"), hands=("8D", "7C KC", "7D#2 9S QC"))
    sevens = meld_with(t, "7H")
    t.apply(Declare(P2, cards("7C KC")), 1000)
    t.apply(Place(P2, card("7C"), sevens), 1000)
    first = t.ops[t.live[-1]]
    t.apply(Declare(P3, cards("7D#2 9S QC")), 1200)
    t.apply(Place(P3, card("9S"), sevens), 1200)
    t.apply(Place(P3, card("7D#2"), sevens), 1200)
    t.apply(Declare(P1, cards("8D")), 2000)
    t.apply(Move(P1, card("7D"), sevens, meld_with(t, "5D")), 2000)
    ev = t.apply(Place(P1, card("8D"), meld_with(t, "5D")), 2000)
    assert "confirmed p1" in kinds(ev), kinds(ev)
    take = next(op for op in t.ops.values() if op.player == P1 and op.cards == (card("7D"),))
    assert take.needs == frozenset({first.seq})
    assert melds(t) == [["5D#1", "6D#1", "7D#1", "8D#1"],
                        ["7C#1", "7D#2", "7H#1", "7S#1", "9S#1"]]
    check_all(t)


def test_trial_work_that_never_helps_is_no_work_at_all() -> None:
    """M5.4.3: p1's own meld is irregular whatever the others' trial work does (a lone 8♣
    moved into a new meld): the verdict names the meld, needs nothing, and the brute-force
    oracle (tests/rules/sim/oracle.py) agrees."""
    t = position(table=("4C 5C 6C 7C 8C",), hands=("KD", "3C 9C QS", ""))
    run = meld_with(t, "4C")
    t.apply(Declare(P2, cards("3C 9C QS")), 1000)
    t.apply(Place(P2, card("3C"), run), 1000)
    t.apply(Place(P2, card("9C"), run), 1000)
    t.apply(Declare(P1, cards("KD")), 2000)
    t.apply(Move(P1, card("8C"), run, None), 2000)
    cal = t.open_calata(P1)
    assert cal is not None and cal.status is CalataStatus.OPEN
    assert cal.fail_ops and not cal.needs
    assert oracle_judgement(t, cal) == (frozenset(cal.fail_ops and {meld_with(t, "8C")}),
                                        cal.fail_ops, {})


def test_viable_is_the_structure_of_runs_and_sets() -> None:
    """trial.viable (what cuts the search): a run needs one suit and a stretch of the circle
    with every rank present (twice where the cards that stay are twice: round the circle,
    M3.3); a set, distinct suits, three of them present."""
    c = cards
    assert viable(c("4C 8C"), c("4C 5C 6C 7C 8C"))
    assert not viable(c("4C 8C"), c("4C 5C 6C 8C"))  # the 7 can never come
    assert viable(c("KC 2C"), c("QC KC AC 2C"))  # across the Ace (M3.2)
    assert not viable(c("4C JS"), c("4C 5C 6C JS"))  # a stray: no meld holds both
    assert viable(c("7H 7S"), c("7H 7S 7D"))
    assert not viable(c("7H 7H#2"), c("7H 7H#2 7S 7D"))  # a repeated suit: no set, no run
    assert not viable(c("7H 7S"), c("7H 7S"))  # two suits and no third
    circle = [x for x in ALL_CARDS if x.suit == card("AH").suit and x.copy == 1]
    assert viable(c("AH AH#2"), [*circle, card("AH#2")])  # 14 round the circle
    assert not viable(c("AH AH#2"), [*circle[:-1], card("AH#2")])  # the K is missing
    assert viable(c("3H 3H#2 4H#2"), [*circle, *c("3H#2 4H#2")])
    assert viable(c("3H 3H#2 5H#2"), [*circle, *c("3H#2 5H#2")])  # 3 4 5 ... 2 3, one 5
    # both 3s and both 5s must stay: the 4 would be needed twice too, and there is one
    assert not viable(c("3H 3H#2 5H 5H#2"), [*circle, *c("3H#2 5H#2")])


def test_order_key_is_smallest_then_first_arrived() -> None:
    """The order the brute-force search tries subsets in (itertools.combinations over the ops
    in arrival order): fewer ops first; among as many, the set holding the earliest op where
    they differ."""
    assert order_key({9}) < order_key({1, 2})
    assert order_key({1, 9}) < order_key({2, 3})
    assert order_key({1, 3}) < order_key({1, 4})


def test_the_search_orders_works_as_bits_as_order_key_does() -> None:
    """trial._first: the search keeps a work as bits (the k-th lowest trial op is bit k), and
    compares two by popcount, then by the lowest bit they differ in; that must be order_key's
    order on the ops the bits stand for, for every pair (equal works: neither goes first)."""
    rng = random.Random(14)
    seqs = sorted(rng.sample(range(1, 400), 24))
    for _ in range(5000):
        a, b = rng.getrandbits(len(seqs)), rng.getrandbits(len(seqs))
        if rng.random() < 0.3:  # as many ops: the tie-break decides
            b = int("".join(rng.sample(f"{a:0{len(seqs)}b}", len(seqs))), 2)
        work_a = {seq for k, seq in enumerate(seqs) if a >> k & 1}
        work_b = {seq for k, seq in enumerate(seqs) if b >> k & 1}
        assert _first(a, b) == (order_key(work_a) < order_key(work_b)), (work_a, work_b)
        assert _first(b, a) == (order_key(work_b) < order_key(work_a)), (work_a, work_b)


def test_a_search_with_no_step_on_trial_work_judges_the_lineage_as_it_is() -> None:
    """trial.Search when no step of the lineage stands on trial work (found by review: the
    first branch was never judged, so every answer was None): the lineage as it stands
    needs no work if it is regular, and has no answer if it is not."""
    for faces, want in (("4C 5C 6C", [frozenset()]), ("4C 5C 7C", [None])):
        board = Board()
        board.new_meld(1, cards(faces))
        judged = [Judged(1, dict.fromkeys(cards(faces)),
                         lambda b, _ids: is_regular(b.melds[1]))]
        assert Search([], board, [], {}, [], judged).run() == want, faces


def test_the_merge_key_keeps_faces_apart_with_nine_judged_melds() -> None:
    """trial.Search._key (found by review): a card's face and the judged melds it counts for
    were packed with 8 bits for the melds, so with 9 judged melds a 5♠ counting for the ninth
    made the same key as a 5♥ counting for none, and two different tables merged."""
    five_s, five_h = card("5S"), card("5H")
    judged = [Judged(100 + k, {five_s: None} if k == 8 else {}, lambda _b, _ids: True)
              for k in range(9)]

    def key_with(c: Card) -> object:
        board = Board()
        board.new_meld(100, [c])
        search = Search([], board, [], {}, [], judged)
        return search._key(_Branch(board, 0, 0, frozenset(), search.all), 0)

    assert key_with(five_s) != key_with(five_h)
