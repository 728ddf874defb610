"""M6.1-M6.4 holds and conflicts; M8 closing; M12.1-M12.2 scoring; replay from the log."""

from __future__ import annotations

import pytest

from machiavelox.rules import (
    Attach,
    ConflictError,
    Declare,
    Direct,
    Draw,
    IllegalActionError,
    Phase,
    PlayerStatus,
    Put,
    Release,
    Table,
    Take,
    shuffled_deal,
)

from .sim.positions import P1, P2, P3, cards, kinds, meld_with, melds, position


def _two_declared() -> Table:
    t = position(table=("5H 6H 7H 8H",), hands=("KS", "KD", ""))
    t.apply(Declare(P1, cards("KS")), 0)
    t.apply(Declare(P2, cards("KD")), 0)
    return t


def test_fastest_wins_the_card() -> None:
    """M6.4: the first to arrive gets it; the other is refused with a reason."""
    t = _two_declared()
    m = meld_with(t, "8H")
    t.apply(Take(P1, cards("8H")[0], m), 100)
    with pytest.raises(ConflictError) as err:
        t.apply(Take(P2, cards("8H")[0], m), 100)
    assert err.value.code == "card/held" and "p1" in err.value.message
    assert t.players[P2].hold is None


def test_one_held_card_at_a_time() -> None:
    """M6.1."""
    t = _two_declared()
    m = meld_with(t, "8H")
    t.apply(Take(P1, cards("8H")[0], m), 0)
    with pytest.raises(IllegalActionError) as err:
        t.apply(Take(P1, cards("5H")[0], m), 0)
    assert err.value.code == "hold/one-only"


def test_a_hold_expires_after_10_seconds() -> None:
    """M6.3: the card is free again for everyone after 10 s."""
    t = _two_declared()
    m = meld_with(t, "8H")
    t.apply(Take(P1, cards("8H")[0], m), 1000)
    assert kinds(t.advance(10_999)) == []
    assert kinds(t.advance(11_000)) == ["hold-expired p1"]
    t.apply(Take(P2, cards("8H")[0], m), 11_000)
    assert t.players[P2].hold is not None


def test_release_and_put_back_where_it_was() -> None:
    t = _two_declared()
    m = meld_with(t, "8H")
    t.apply(Take(P1, cards("8H")[0], m), 0)
    t.apply(Release(P1), 1)
    assert t.players[P1].hold is None
    t.apply(Take(P1, cards("8H")[0], m), 2)
    t.apply(Put(P1, m), 3)  # put where it was: nothing moved
    assert t.players[P1].hold is None and melds(t) == [["5H#1", "6H#1", "7H#1", "8H#1"]]


def test_valid_closing_wins_and_scores() -> None:
    """M8.1-M8.2 and M12.1-M12.2: +50 - own tallone + opponents' cards; +10 tallone used up."""
    t = position(table=("4C 5C 6C",), hands=("KH KD KC", "2S 3S", "9D"),
                 talloni=("7C", "", "AH"), drawn=())
    t.apply(Draw(P1), 0)
    t.apply(Declare(P1, cards("KH KD KC")), 1)
    t.apply(Direct(P1, cards("KH KD KC")), 2)
    ev = t.apply(Attach(P1, cards("7C")[0], meld_with(t, "4C")), 3)
    assert "closed p1" in kinds(ev)
    assert t.phase is Phase.ENDED and t.result is not None
    assert t.result.winner == P1
    # 50 - 0 (tallone) + 2 (p2) + 1 (p3) + 10 (M12.2)
    assert t.result.scores == (63, 0, 0)


def test_closing_without_a_direct_meld_eliminates() -> None:
    """M8.2(2), M8.4: an invalid closing eliminates with -15; M9.8 two out, the third wins."""
    t = position(table=("4C 5C 6C", "9S 9D 9C"), hands=("7C", "9H", "JH"), talloni=("", "", "2H"))
    ev = t.apply(Attach(P1, cards("7C")[0], meld_with(t, "4C")), 0)
    assert "eliminated p1" in kinds(ev) and t.players[P1].status is PlayerStatus.ELIMINATED
    with pytest.raises(IllegalActionError):
        t.apply(Draw(P1), 1)
    ev = t.apply(Attach(P2, cards("9H")[0], meld_with(t, "9S")), 2)
    assert "eliminated p2" in kinds(ev)
    assert t.result is not None and t.result.winner == P3
    # survivor: 50 - 1 (own tallone) + 0 + 0; the eliminated -15 each
    assert t.result.scores == (-15, -15, 49)


def test_closing_needs_a_draw() -> None:
    """M8.2(1): nobody closes without having drawn."""
    t = position(hands=("KH KD KC", "", ""), drawn=(), direct=(P1,))
    t.apply(Declare(P1, cards("KH KD KC")), 0)
    ev = t.apply(Direct(P1, cards("KH KD KC")), 1)
    assert "eliminated p1" in kinds(ev)


def test_replay_from_the_log_rebuilds_the_table() -> None:
    """The state can be rebuilt by replaying the action log from the deal."""
    t = Table(shuffled_deal(11))
    now = 0
    for _ in range(5):
        for p in (P1, P2, P3):
            t.apply(Draw(p), now)
            now += 700
    hand = sorted(t.players[P1].hand)
    t.apply(Declare(P1, tuple(hand[:2])), now)
    t.advance(now + 45_000)
    again = Table.replay(t.deal, t.log, now_ms=t.now_ms)
    assert [str(e) for e in again.events] == [str(e) for e in t.events]
    assert [p.hand for p in again.players] == [p.hand for p in t.players]
