"""Classic cards (one index space with Machiavelox's, C1, C2) and the variant set (one frozen
value, validated at creation with stable codes)."""

from __future__ import annotations

import dataclasses

import pytest

from machiavelox import rules
from machiavelox.classic import (
    ALL_CLASSIC,
    JOKERS,
    Aces,
    Scoring,
    SessionKind,
    VariantError,
    Variants,
    card_at,
    deck,
    parse,
    shuffled_deal,
)


def test_the_first_104_cards_are_machiavelox_own() -> None:
    """Copies 1 and 2 are the very `rules.ALL_CARDS` instances: index i is the same card in
    both games; the third deck and the jokers extend the space."""
    for i, c in enumerate(rules.ALL_CARDS):
        assert card_at(i) is c
    assert parse("7H#3").index == 104 + 13 + 6
    assert str(parse("7H#3")) == "7H#3"
    assert [j.index for j in JOKERS] == [156, 157, 158, 159]
    assert parse("JK") is JOKERS[0] and parse("JK#4") is JOKERS[3]
    assert len({c.index for c in ALL_CLASSIC}) == 160
    with pytest.raises(ValueError):
        parse("7H#4")
    with pytest.raises(ValueError):
        parse("JK#5")


def test_decks() -> None:
    """C1, C2: a table's deck is its decks' naturals then its jokers, in index order."""
    assert len(deck(2, 0)) == 104
    assert len(deck(3, 4)) == 160
    assert deck(2, 2)[-1] is JOKERS[1]


def test_defaults_follow_seed_003() -> None:
    """Every default is seed 003's (RULES-NOTES C); the variant set cannot be changed."""
    v = Variants()
    assert (v.players, v.decks, v.jokers, v.aces, v.opening, v.turn_time_ms, v.penalty,
            v.scoring, v.session) == (4, 2, 0, Aces.LOW, 0, 0, 1, Scoring.FACE,
                                      SessionKind.SINGLE)
    assert v.hand_size == 13
    assert Variants(players=5, decks=3).hand_size == 15
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.players = 3  # type: ignore[misc]


@pytest.mark.parametrize(("fields", "code"), [
    ({"players": 1}, "variant/players"),
    ({"players": 7}, "variant/players"),
    ({"players": 6}, "variant/players-decks"),  # six players need three decks (C1)
    ({"players": 4, "decks": 3}, "variant/players-decks"),
    ({"decks": 4}, "variant/decks"),
    ({"jokers": 3}, "variant/jokers"),
    ({"opening": -1}, "variant/opening"),
    ({"turn_time_ms": -5}, "variant/turn-time"),
    ({"penalty": 2}, "variant/penalty"),
    ({"session": SessionKind.THRESHOLD}, "variant/session"),
    ({"session": SessionKind.HANDS, "session_n": 0}, "variant/session"),
    ({"session": SessionKind.OPEN, "session_n": 5}, "variant/session"),
])
def test_impossible_variants_are_refused_at_creation(fields: dict[str, object],
                                                     code: str) -> None:
    """Each impossible set raises a VariantError (a RulesError) with its stable code and a
    message that names the rule."""
    with pytest.raises(VariantError) as info:
        Variants(**fields)  # type: ignore[arg-type]
    assert info.value.code == code
    assert "(C" in info.value.message
    assert isinstance(info.value, rules.RulesError)


def test_valid_edges() -> None:
    """The extreme valid sets are accepted (fails if validation is stricter than C1, C11)."""
    Variants(players=2)
    Variants(players=5)
    Variants(players=5, decks=3)
    Variants(players=6, decks=3, jokers=4, session=SessionKind.ELIMINATION, session_n=101)


def test_shuffled_deal_is_c1_and_reproducible() -> None:
    """C1: 15 cards each with three decks, the rest the stock, every card dealt once; a seed
    reproduces the deal; C4: the cut varies with the seed unless the first player is given."""
    v = Variants(players=6, decks=3, jokers=4)
    a, b = shuffled_deal(v, 5), shuffled_deal(v, 5)
    assert a == b
    assert [len(h) for h in a.hands] == [15] * 6
    assert len(a.stock) == 160 - 90
    assert a.dealt() == set(deck(3, 4))
    assert shuffled_deal(v, 6) != a
    # the cut (C4) picks a first player from the seed; an explicit first wins
    firsts = {shuffled_deal(v, seed).first for seed in range(60)}
    assert len(firsts) > 1
    assert shuffled_deal(v, 5, first=v.seats[3]).first == v.seats[3]
