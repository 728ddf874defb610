"""Classic meld validity (C2, C3): sets, runs, jokers, the three ways of playing the Ace, the
opening value of a meld (C8), and the agreement with Machiavelox's classification."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from machiavelox import rules
from machiavelox.classic import (
    Aces,
    ClassicCard,
    arrange,
    classify,
    is_valid,
    opening_value,
    parse,
    readings,
)
from machiavelox.classic.melds import why_invalid
from machiavelox.rules import Card, MeldKind, Suit

LOW, LOW_HIGH, CIRCULAR = Aces.LOW, Aces.LOW_HIGH, Aces.CIRCULAR


def meld(text: str) -> list[ClassicCard]:
    return [parse(t) for t in text.split()]


CASES = [
    # text, low, low-high, circular
    ("AS 2S 3S", True, True, True),
    ("QS KS AS", False, True, True),
    ("KS AS 2S", False, False, True),
    ("JS QS KS AS 2S", False, False, True),
    ("8H 8D 8C", True, True, True),
    ("8H 8D 8C 8S", True, True, True),
    ("8H 8H#2 8D", False, False, False),  # C3: suits all different
    ("4S 5S 7S", False, False, False),
    ("4S 5H 6S", False, False, False),
    ("4S 5S", False, False, False),
    ("5H JK 7H", True, True, True),  # C2: the joker is the 6
    ("5H 6H JK", True, True, True),
    ("JK 2S 3S", True, True, True),  # the joker is the Ace (or the 4)
    ("QH KH JK", True, True, True),  # the J (low), or the Ace too (low-high)
    ("KH JK AH", False, True, True),  # low-high: K A with the Q
    ("9S 9D JK", True, True, True),
    ("9S 9D 9C JK", True, True, True),
    ("9S 9D 9C 9H JK", False, False, False),  # a set has at most four cards
    ("5H JK JK", False, False, False),  # decision: two natural cards at least
    ("5H JK JK 8H", True, True, True),
    ("JK JK JK", False, False, False),
    ("5H JK 9H", False, False, False),  # one joker cannot fill three gaps
    ("AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS", True, True, True),
    ("AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS AS#2", False, True, False),
]


@pytest.mark.parametrize(("text", "low", "low_high", "circular"), CASES)
def test_meld_validity(text: str, low: bool, low_high: bool, circular: bool) -> None:
    """C2, C3 for each ace variant; a failure names the meld and the variant."""
    melds = meld(text)
    assert is_valid(melds, LOW) is low, f"{text} aces low"
    assert is_valid(melds, LOW_HIGH) is low_high, f"{text} aces low-high"
    assert is_valid(melds, CIRCULAR) is circular, f"{text} aces circular"
    for aces in Aces:
        assert (why_invalid(melds, aces) == "") is is_valid(melds, aces)


def test_kinds() -> None:
    """A valid meld's kind is Machiavelox's `MeldKind` (shared)."""
    assert classify(meld("9S 9D JK"), LOW) is MeldKind.SET
    assert classify(meld("5H JK 7H"), LOW) is MeldKind.RUN


def test_lone_joker_message_names_the_joker() -> None:
    """C2: the reason given for a lone joker says so (scenarios match words in refusals)."""
    assert "joker" in why_invalid([parse("JK")], LOW)
    assert "natural" in why_invalid(meld("5H JK JK"), LOW)


@pytest.mark.parametrize(("text", "aces", "value"), [
    ("10H JH QH KH", LOW, 40),
    ("AS 2S 3S", LOW, 6),  # C8: A = 1
    ("QS KS AS", LOW_HIGH, 21),  # A = 1 even above the King
    ("5H 6H JK", LOW, 18),  # decision: the most valuable reading (the 7, not the 4)
    ("QH KH JK", LOW, 30),  # the J
    ("9S 9D JK", LOW, 27),
    ("4S 5H 6S", LOW, 0),  # not a meld
])
def test_opening_value(text: str, aces: Aces, value: int) -> None:
    """C8 values: A 1, J/Q/K 10, a joker as the card it stands for (the most valuable)."""
    assert opening_value(meld(text), aces) == value


def test_readings_and_display() -> None:
    """A joker's place: 5 6 JK is shown 5 6 [7]; a set's joker takes a missing suit."""
    run = meld("JK 6H 5H")
    assert [r.faces[0][0] for r in readings(run, LOW)] == [4, 5]
    shown = arrange(run, LOW)
    assert [c.face for c, _ in shown] == ["5H", "6H", "JK"]
    assert shown[2][1] == (7, Suit.H)
    s = arrange(meld("JK 9D 9S"), LOW)
    assert [c.face for c, _ in s] == ["9S", "9D", "JK"]
    assert s[2][1] == (9, Suit.H)
    circle = arrange(meld("2S KS AS"), CIRCULAR)
    assert [c.face for c, _ in circle] == ["KS", "AS", "2S"]


_face = st.tuples(st.integers(1, 13), st.sampled_from(list(Suit)), st.integers(1, 2))


@settings(max_examples=400, deadline=None)
@given(st.one_of(
    st.lists(_face, min_size=1, max_size=13, unique=True),
    st.builds(lambda suit, start, n, copy: [((start + i - 1) % 13 + 1, suit, copy)
                                            for i in range(n)],
              st.sampled_from(list(Suit)), st.integers(1, 13), st.integers(3, 13),
              st.integers(1, 2)),
    st.builds(lambda rank, suits: [(rank, s, 1) for s in suits], st.integers(1, 13),
              st.lists(st.sampled_from(list(Suit)), min_size=3, max_size=5)),
))
def test_circular_agrees_with_machiavelox(faces: list[tuple[int, Suit, int]]) -> None:
    """Shared semantics: on natural cards and up to 13 of them, classic with circular aces
    classifies exactly as Machiavelox's `rules.classify` (M3), so the two can later share one
    classifier. Fails if either side's idea of a run or a set drifts."""
    melds = [Card(rank, suit, copy) for rank, suit, copy in faces]
    if len(set(melds)) != len(melds):
        return
    mine = [rules.card_at(c.index) for c in melds]
    assert classify(mine, CIRCULAR) == rules.classify(mine)
