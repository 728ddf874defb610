"""M1 setup, M4 hand/tallone/pozzetto, P5 views."""

from __future__ import annotations

import pytest

from machiavelox.rules import (
    ALL_CARDS,
    Declare,
    Draw,
    IllegalActionError,
    Table,
    shuffled_deal,
    view_for,
)

from .sim.positions import P1, P2, P3, cards, position


def test_a_deal_has_104_cards_two_removed_and_three_talloni_of_34() -> None:
    """M1.1-M1.4."""
    deal = shuffled_deal(7)
    assert len(deal.removed) == 2
    assert [len(t) for t in deal.talloni] == [34, 34, 34]
    assert deal.all_dealt() == set(ALL_CARDS)
    assert deal.hands == ((), (), ())
    assert shuffled_deal(7) == deal and shuffled_deal(8) != deal


def test_unseeded_deals_differ() -> None:
    """M1 decision: a cryptographically secure shuffle when no seed is given."""
    assert shuffled_deal().talloni != shuffled_deal().talloni


def test_draw_takes_the_top_of_ones_own_tallone() -> None:
    """M4.2: one card at a time from one's own tallone."""
    t = position(talloni=("5H 6H", "9S", ""), drawn=())
    t.apply(Draw(P1), 0)
    assert t.players[P1].hand == set(cards("5H"))
    assert len(t.players[P1].tallone) == 1 and t.players[P1].drawn
    with pytest.raises(IllegalActionError) as err:
        t.apply(Draw(P3), 0)
    assert err.value.code == "draw/empty-tallone"


def test_no_draw_with_cards_in_the_pozzetto() -> None:
    """M4.4 / M5.3.5."""
    t = position(talloni=("5H", "", ""), hands=("KH", "", ""))
    t.apply(Declare(P1, cards("KH")), 0)
    with pytest.raises(IllegalActionError) as err:
        t.apply(Draw(P1), 1)
    assert err.value.code == "draw/pozzetto"
    assert t.players[P1].tallone == list(cards("5H"))


def test_views_hide_opponents_hands_and_every_tallone() -> None:
    """P5: own hand and counts; opponents only counts and face-up pozzetti; no tallone order."""
    t = Table(shuffled_deal(3))
    for _ in range(3):
        for p in (P1, P2, P3):
            t.apply(Draw(p), 0)
    mine = sorted(t.players[P2].hand)[:1]
    t.apply(Declare(P2, tuple(mine)), 1)
    v = view_for(t, P1)
    assert set(v.hand) == t.players[P1].hand
    assert v.seats[P2].hand_count == 2 and v.seats[P2].pozzetto == tuple(mine)
    assert v.seats[P3].tallone_count == 31
    assert v.removed == t.removed  # P1
    visible = set(v.hand) | set(v.removed) | {c for s in v.seats for c in s.pozzetto}
    for p in (P2, P3):
        assert not (t.players[p].hand & visible)
    for ps in t.players:
        assert not (set(ps.tallone) & visible)
