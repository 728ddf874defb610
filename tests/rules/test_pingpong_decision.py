"""M6.5 decision: at a reservation the other players' open moves of the card in the ping-pong
become the reserved player's work, and the card's journey is one unit of that work (the
behaviour is pinned by tests/scenarios/decisions/reserved-card-*.mxs; this is the structure)."""

from __future__ import annotations

from machiavelox.rules import Declare, Move
from machiavelox.rules.deps import closure, dependents

from .sim.positions import P1, P2, cards, meld_with, position


def test_the_ping_pong_becomes_one_unit_of_the_reserved_players_calata() -> None:
    t = position(table=("5H 6H 7H 8H", "8S 8D 8C"), hands=("9S", "KD", ""))
    t.apply(Declare(P1, cards("9S")), 1000)
    t.apply(Declare(P2, cards("KD")), 2000)
    eight = cards("8H")[0]
    run, three = meld_with(t, "5H"), meld_with(t, "8S")
    for mover, src, dst in ((P1, run, three), (P2, three, run), (P1, run, three),
                            (P2, three, run)):  # the third time in the run: reserved to p1
        t.apply(Move(mover, eight, src, dst), 2000)
    assert t.reserved == {eight: P1}
    mine = t.open_calata(P1)
    theirs = t.open_calata(P2)
    assert mine is not None and theirs is not None
    moves = [op for op in t.live_ops() if op.cards == (eight,)]
    assert len(moves) == 4 and all(op.calata == mine.id and op.player == P1 for op in moves)
    assert theirs.ops == []  # p2 gave the card up: none of its moves is its own any more
    assert len({op.bundle for op in moves}) == 1 and moves[0].bundle is not None
    t.apply(Move(P1, eight, run, three), 3000)  # a later move of it while reserved joins
    later = t.live_ops()[-1]
    assert later.bundle == moves[0].bundle
    rev = dependents(t, t.live_ops())
    unit = {op.seq for op in (*moves, later)}
    for op in (*moves, later):  # it stands or falls whole
        assert closure(rev, (op.seq,)) >= unit
