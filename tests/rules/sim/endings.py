"""Oracles of the endings: the scores of a smazzata (M12) and the end of a long match (M13),
recomputed here from the final state, independently of `rules.scoring` and `rules.match`, with
the shape of each ending checked (M8, M9.8, M10, M11.3).
"""

from __future__ import annotations

from machiavelox.rules import SEATS, Match, Phase, PlayerStatus, Seat, Table


def expected_scores(table: Table) -> tuple[int, int, int]:
    """M12, recomputed from the final state, independently of scoring.py."""
    res = table.result
    assert res is not None
    gone = {p.seat for p in table.players
            if p.status in (PlayerStatus.ELIMINATED, PlayerStatus.ABANDONED)}
    scores = {s: (-15 if s in gone else 0) for s in SEATS}  # M12.4

    def held(s: Seat) -> int:  # hand + pozzetto (M4.3) + own cards left in the common one
        p = table.players[s]
        return len(p.hand) + len(p.pozzetto) + sum(
            1 for c in table.common if table.common_owner[c] == s)

    if res.ending == "draw":  # M12.5 decision
        others = sum(held(s) for s in SEATS if s not in table.tiebreak_players)
        for s in res.draw:
            scores[s] = max(-15, 50 - len(table.players[s].tallone) + others
                            - len(table.common))
    elif res.winner is not None:  # M12.1-M12.3
        w = res.winner
        pts = 50 - len(table.players[w].tallone) + sum(held(s) for s in SEATS if s != w)
        if res.ending == "closing" and not table.players[w].tallone:
            pts += 10  # M12.2
        scores[w] = pts
    return (scores[Seat.P1], scores[Seat.P2], scores[Seat.P3])


def check_ending(table: Table) -> None:
    """Phase.ENDED with a result whose shape matches its ending, scored by M12."""
    assert table.phase is Phase.ENDED and table.result is not None
    res = table.result
    in_play = [p.seat for p in table.players if p.in_play]
    if res.ending == "closing":  # M8
        assert res.winner is not None
        w = table.players[res.winner]
        assert w.in_play and not w.hand and not w.pozzetto, "M8.1: the closer has cards"
        assert w.drawn and w.has_direct_meld, "M8.2: a closing without its conditions"
    elif res.ending == "survivor":  # M9.8, M11.3
        assert in_play == [res.winner], f"M9.8: survivor {res.winner}, in play {in_play}"
    elif res.ending == "everyone-gone":  # M11.3
        assert res.winner is None and not in_play
    elif res.ending == "silence":  # M10.1: fewest cards wins
        assert res.winner in in_play
        assert not any(table.players[s].tallone for s in in_play), "M10: a tallone left"
        counts = {s: len(table.players[s].hand) + len(table.players[s].pozzetto)
                  for s in in_play}
        assert all(counts[res.winner] < n for s, n in counts.items() if s != res.winner), (
            f"M10.1: {res.winner} wins with counts {counts}")
    elif res.ending == "tiebreak":  # M10.2
        assert res.winner in table.tiebreak_players and res.winner in in_play
    elif res.ending == "draw":  # M10.3
        assert res.winner is None and res.draw
        assert set(res.draw) == {s for s in table.tiebreak_players if s in in_play}
    else:
        raise AssertionError(f"unknown ending {res.ending!r}")
    assert res.scores == expected_scores(table), (
        f"M12: {res.summary()}, expected {expected_scores(table)}")



def check_match_totals(match: Match) -> None:
    """M13.2: the totals are the sums of the smazzata scores."""
    ended = [t.result for t in match.smazzate if t.result is not None]
    for s in SEATS:
        assert match.totals[s] == sum(r.scores[s] for r in ended), (
            f"M13.2: {s}'s total {match.totals[s]} is not the sum of its smazzata scores")


def check_match_end(match: Match) -> None:
    """M13.3 (target 150, patta lunga) or M13.5 (someone left: the leader among those left)."""
    res = match.result
    assert res is not None
    check_match_totals(match)
    assert res.totals == tuple(match.totals)
    top = max(res.totals)
    if res.reason == "target":
        assert top >= 150, f"M13.3: the match ended below the target: {res.totals}"
        leaders = tuple(s for s in SEATS if res.totals[s] == top)
        if len(leaders) == 1:
            assert res.winner == leaders[0] and not res.draw, f"M13.3: {res}"
        else:
            assert res.winner is None and res.draw == leaders, f"M13.3 patta lunga: {res}"
        return
    assert res.reason == "left" and match.out, f"M13.5: {res}"
    staying = [s for s in SEATS if s not in match.out]
    if not staying:
        assert res.winner is None and not res.draw, f"M13.5: nobody left, {res}"
        return
    best = max(res.totals[s] for s in staying)
    leaders = tuple(s for s in staying if res.totals[s] == best)
    want = (leaders[0], ()) if len(leaders) == 1 else (None, leaders)
    assert (res.winner, res.draw) == want, f"M13.5: {res}, staying {staying}"


