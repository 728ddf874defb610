"""The classic engine directly: every refusal's stable code (and that it changes nothing),
deals that do not fit the table, session results and standings, and the views (P5)."""

from __future__ import annotations

import pytest

from machiavelox.classic import (
    Attach,
    ClassicAction,
    ClassicCard,
    ClassicDeal,
    Draw,
    End,
    EndSession,
    Joker,
    Meld,
    Move,
    Restore,
    Seat,
    Session,
    SessionKind,
    Swap,
    Variants,
    parse,
    view_for,
)
from machiavelox.rules import Card, IllegalActionError, InvalidActionError, RulesError

from .helpers import fingerprint

P1, P2, P3 = Seat.P1, Seat.P2, Seat.P3


def cards(text: str) -> tuple[ClassicCard, ...]:
    return tuple(parse(t) for t in text.split())


def nat(text: str) -> Card:
    c = parse(text)
    assert isinstance(c, Card)
    return c


def table_session(variants: Variants | None = None, **hands: str) -> Session:
    """p1..p3 with the given hands, a joker run and a run on the table, a stock of 4."""
    v = variants or Variants(players=3, jokers=2)
    deal = ClassicDeal(
        hands=tuple(cards(hands.get(f"p{i + 1}", "")) for i in range(v.players)),
        stock=cards("2D 3D 4D 5D"),
        table=(cards("5H JK 7H"), cards("4C 5C 6C 7C")))
    return Session(v, deal)


# (action, expected code) on a fresh table: p1 on turn holds 6H 8H 9H 10H KS
REFUSALS: list[tuple[ClassicAction, str]] = [
    (Draw(P2), "turn/not-yours"),
    (Meld(P1, cards("8H 9H")), "meld/too-few"),
    (Meld(P1, (nat("8H"), nat("8H"), nat("9H"))), "card/repeated"),
    (Meld(P1, cards("8H 9H QS")), "card/not-in-hand"),
    (Attach(P1, nat("8H"), 99), "meld/unknown"),
    (Attach(P1, nat("2S"), 1), "card/not-in-hand"),
    (Move(P1, nat("4C"), 1, None), "card/not-in-meld"),
    (Move(P1, nat("4C"), 2, 2), "move/same-meld"),
    (Move(P1, nat("4C"), 2, 99), "meld/unknown"),
    (Swap(P1, nat("8H"), Joker(1), 1), "swap/not-the-card"),
    (Swap(P1, nat("6H"), Joker(2), 1), "swap/no-joker"),
    (Swap(P1, nat("6H"), Joker(1), 2), "swap/no-joker"),
    (End(P1), "end/nothing-played"),
    (EndSession(P1), "session/not-open"),
]


@pytest.mark.parametrize(("action", "code"), REFUSALS, ids=[c for _, c in REFUSALS])
def test_refusals_have_stable_codes_and_change_nothing(action: ClassicAction,
                                                       code: str) -> None:
    """Each refusal raises the RulesError kind and code clients switch on, with the whole
    state (hands, table, stock, turn, events, log) exactly as before."""
    s = table_session(p1="6H 8H 9H 10H KS", p2="2S")
    before = fingerprint(s)
    with pytest.raises(RulesError) as info:
        s.apply(action, 0)
    assert info.value.code == code
    assert isinstance(info.value, (IllegalActionError, InvalidActionError))
    assert fingerprint(s) == before


def test_refusals_in_the_middle_of_a_turn() -> None:
    """C5: draw after a change and end with an invalid meld are refused, changing nothing."""
    s = table_session(p1="6H 8H 9H 10H KS 3S 4S", p2="2S")
    s.apply(Meld(P1, cards("3S 4S KS")), 0)
    checks: list[tuple[ClassicAction, str]] = [(Draw(P1), "draw/table-changed"),
                                               (End(P1), "end/invalid-meld")]
    for action, code in checks:
        before = fingerprint(s)
        with pytest.raises(RulesError) as info:
            s.apply(action, 0)
        assert info.value.code == code
        assert fingerprint(s) == before


def test_opening_refusals() -> None:
    """C8: short of the threshold, and manipulation in the opening turn, each its own code."""
    v = Variants(players=3, jokers=2, opening=36)
    s = table_session(v, p1="6H 8H 9H 10H KS 2S 3S 4S")
    s.apply(Meld(P1, cards("2S 3S 4S")), 0)
    with pytest.raises(RulesError) as info:
        s.apply(End(P1), 0)
    assert info.value.code == "end/opening-points"
    s.apply(Restore(P1), 0)
    s.apply(Draw(P2), 0)
    s.apply(Draw(P3), 0)
    s.apply(Attach(P1, nat("8H"), 1), 0)
    with pytest.raises(RulesError) as info:
        s.apply(End(P1), 0)
    assert info.value.code == "end/opening-new-melds-only"


def test_after_the_session_everything_is_refused() -> None:
    """Once the session is over no action is accepted."""
    s = table_session(p1="8H", p2="2S")
    s.apply(Attach(P1, nat("8H"), 1), 0)
    s.apply(End(P1), 0)
    assert s.phase == "ended"
    late: list[ClassicAction] = [Draw(P2), EndSession(P1)]
    for action in late:
        with pytest.raises(RulesError) as info:
            s.apply(action, 0)
        assert info.value.code in ("session/over", "session/not-open")


@pytest.mark.parametrize(("deal", "code"), [
    (ClassicDeal(hands=((), ()), stock=()), "deal/seats"),
    (ClassicDeal(hands=(cards("7H#3"), (), ()), stock=()), "deal/card"),
    (ClassicDeal(hands=(cards("JK#3"), (), ()), stock=()), "deal/card"),
    (ClassicDeal(hands=((), (), ()), stock=(), first=Seat.P5), "deal/first"),
])
def test_deals_that_do_not_fit_the_table(deal: ClassicDeal, code: str) -> None:
    """A deal with the wrong seats, a card of a deck or joker the table has not, or a first
    player who is not dealt in is refused with its `deal/...` code."""
    with pytest.raises(InvalidActionError) as info:
        Session(Variants(players=3, jokers=2), deal)
    assert info.value.code == code


def test_a_deal_twice_the_same_card() -> None:
    """C1: a physical card is dealt once."""
    with pytest.raises(ValueError):
        ClassicDeal(hands=(cards("7H"), cards("7H"), ()), stock=())


def test_the_next_hand_deals_only_the_players_left() -> None:
    """C11 elimination: an eliminated player is dealt nothing (deal/seat-out) and never has
    the turn; standings put the survivor first, then the later eliminated."""
    v = Variants(players=3, session=SessionKind.ELIMINATION, session_n=9)
    s = Session(v, ClassicDeal(hands=(cards("8C"), cards("KD"), cards("2S")),
                               stock=cards("3D"), table=(cards("5C 6C 7C"),)))
    s.apply(Attach(P1, nat("8C"), 1), 0)
    s.apply(End(P1), 0)
    assert s.eliminated == [P2] and s.phase == "between"
    with pytest.raises(InvalidActionError) as info:
        s.deal_next(ClassicDeal(hands=((), cards("KD"), ()), stock=()), 1000)
    assert info.value.code == "deal/seat-out"
    s.deal_next(ClassicDeal(hands=(cards("QS"), (), cards("4H")), stock=cards("9D"),
                            table=(cards("5H 6H 7H"),), first=P3), 1000)
    assert s.hand.playing == (P1, P3)
    s.apply(Draw(P3), 1000)
    assert s.hand.turn == P1
    s.apply(Draw(P1), 1000)  # the stock is empty: C10, p1 (10 points) beats p3 (13)
    assert s.eliminated == [P2, P3]
    assert s.result is not None
    assert s.result.winners == (P1,)
    assert s.result.standings == (P1, P3, P2)
    assert s.totals == [0, 10, 15]


def test_single_stock_out_tie_and_standings() -> None:
    """C10 decision: tied players all win and each scores the others' penalties (single)."""
    v = Variants(players=3)
    s = Session(v, ClassicDeal(hands=(cards("KD"), cards("4S 7S"), cards("QH")), stock=()))
    s.apply(Draw(P1), 0)
    assert s.result is not None and s.hand.result is not None
    assert s.hand.result.winners == (P1, P3)
    assert s.hand.result.scores == (11, 0, 11)
    assert s.result.winners == (P1, P3)
    assert s.result.standings == (P1, P3, P2)


def test_open_session_ends_by_the_players() -> None:
    """C11 open: end-session is refused during a hand, accepted between hands; lowest wins."""
    v = Variants(players=2, session=SessionKind.OPEN)
    s = Session(v, ClassicDeal(hands=(cards("8C"), cards("KD")), stock=cards("3D"),
                               table=(cards("5C 6C 7C"),)))
    with pytest.raises(RulesError) as info:
        s.apply(EndSession(P2), 0)
    assert info.value.code == "session/hand-in-play"
    s.apply(Attach(P1, nat("8C"), 1), 0)
    s.apply(End(P1), 0)
    s.apply(EndSession(P2), 5000)
    assert s.result is not None and s.result.winners == (P1,) and s.result.reason == "open"


# ---------------------------------------------------------------------- views (P5)
def test_views_show_only_what_a_player_may_see() -> None:
    """P5: own hand, the others' counts, the stock's size, whose turn and the time left, the
    opening status and totals; what a joker stands for; a drawn card only to its drawer."""
    v = Variants(players=3, jokers=2, opening=36, turn_time_ms=120_000)
    s = table_session(v, p1="6H 8H 9H 10H KS", p2="2S 3S", p3="QH")
    s.apply(Draw(P1), 30_000)
    s.advance(50_000)
    view = view_for(s, P2)
    assert view.hand == cards("2S 3S")
    assert [sv.hand_count for sv in view.seats] == [6, 2, 1]
    assert view.stock_count == 3
    assert view.turn == P2
    assert view.turn_started_ms == 30_000 and view.turn_ends_ms == 150_000
    assert view.time_left_ms == 100_000
    assert [sv.opened for sv in view.seats] == [False, False, False]
    assert [sv.total for sv in view.seats] == [0, 0, 0]
    assert "jokers 2" in view.rules and view.phase == "playing"
    joker_meld = next(m for m in view.table if Joker(1) in m.cards)
    assert joker_meld.stands_for == (None, "6H", None)
    drew = next(e for e in s.hand.events if e.kind == "drew")
    assert drew.for_viewer(P1).cards == cards("2D")
    assert drew.for_viewer(P2).cards == ()
    assert drew.for_viewer(None).cards == ()
    spectator = view_for(s, None)
    assert spectator.hand == ()
    assert not hasattr(view, "stock")


def test_view_of_a_changed_turn() -> None:
    """A view says the turn has changed the table and shows an invalid meld as such."""
    s = table_session(p1="6H 8H 9H 10H KS", p2="2S")
    s.apply(Attach(P1, nat("8H"), 2), 0)
    view = view_for(s, P3)
    assert view.turn_changed
    assert any(m.kind is None for m in view.table)  # the irregular meld, shown as such
