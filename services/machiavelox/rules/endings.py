"""How a smazzata ends, and the clocks that end it: what follows a conclusion (closing M8,
the tiebreak won M10.2, forced draws M7.4), eliminations and survivors (M9.8), the end of a
freeze (M9.6, M11.7), inactivity (M7), final silence and tiebreak (M10), absence (M11).

The end-of-game policy over the calata mechanism (`lifecycle`): a calata concludes through
`conclude` / `annulla` here, which act on the `Conclusion` lifecycle returns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import actions as A
from . import lifecycle as L
from .events import Event, EventKind
from .scoring import score_draw, score_win
from .seats import Seat
from .state import (
    ABANDON_MS,
    CALATA_MS,
    INACTIVITY_MS,
    TIEBREAK_MS,
    Calata,
    CalataStatus,
    Phase,
    PlayerStatus,
)

if TYPE_CHECKING:
    from .state import PlayerState
    from .tablestate import TableState


# -- conclusions -------------------------------------------------------------------------
def conclude(t: TableState, cal: Calata, reason: str, whole: bool = False) -> list[Event]:
    """Conclude `cal` (M5.4; `whole`: the stopper's, M9.7) and act on what it did."""
    return after_conclusion(t, L.conclude(t, cal, reason, whole))


def annulla(t: TableState, cal: Calata) -> list[Event]:
    """ANNULLA (M5.5.6), and what follows it."""
    return after_conclusion(t, L.annulla(t, cal))


def after_conclusion(t: TableState, done: L.Conclusion) -> list[Event]:
    """A conclusion's events, then what it means for the smazzata."""
    out = list(done.events)
    cal, confirmed = done.calata, done.confirmed
    ps = t.players[cal.player]
    if confirmed and any(t.ops[s].own_cards for s in cal.ops):
        t.inactivity_ms = t.now_ms + INACTIVITY_MS  # M7.2
        if t.inactivity_left_ms is not None:
            t.inactivity_left_ms = INACTIVITY_MS
    if t.phase is Phase.TIEBREAK and confirmed and any(t.ops[s].from_common for s in cal.ops):
        return out + tiebreak_won(t, ps.seat)  # M10.2
    if confirmed and not ps.hand and not ps.pozzetto and t.phase is not Phase.TIEBREAK:
        if cal.is_stop and not t.table_in_order():
            return out + eliminate(t, [ps], "a closing that leaves wounds (M9.4)")
        return out + closing(t, ps)  # M8.1: the closing is the confirmation itself
    return out + deliver_forced_draws(t, ps)


# -- closing and eliminations --------------------------------------------------------------
def closing(t: TableState, ps: PlayerState) -> list[Event]:
    """M8: the hand (pozzetto included) is empty at a confirmed calata."""
    if ps.drawn and ps.has_direct_meld:
        return [Event(EventKind.CLOSED, t.now_ms, ps.seat), *end_with_winner(t, ps.seat, "closing")]
    return eliminate(t, [ps], "invalid closing (M8.4)")


def eliminate(t: TableState, players: list[PlayerState], why: str,
              status: PlayerStatus = PlayerStatus.ELIMINATED) -> list[Event]:
    """Take players out of the smazzata (M8.4, M9.6, M11.2) and apply the survivor rule."""
    out: list[Event] = []
    kind = EventKind.ABANDONED if status is PlayerStatus.ABANDONED else EventKind.ELIMINATED
    for ps in players:
        ps.status = status
        out.append(Event(kind, t.now_ms, ps.seat, detail=why))
    if t.phase is Phase.FROZEN and t.stopper in {ps.seat for ps in players}:
        out += end_freeze(t)  # M11.7: the freeze ends with the stopper's exit
    return out + survivors(t)


def end_freeze(t: TableState) -> list[Event]:
    """Play resumes: clocks restart where they stopped, suspended calate with a full 40 s
    (M9.6), frozen players' absence from zero (M11.5)."""
    t.phase = Phase.PLAYING
    for s in t.frozen:
        cal = t.open_calata(s)
        if cal is not None:
            cal.deadline_ms = t.now_ms + CALATA_MS
            cal.suspended_left_ms = None
    for cal in [t.calate[c] for c in t.unsettled]:
        if cal.status is CalataStatus.CONFIRMED and cal.consolidate_left_ms is not None:
            cal.consolidate_ms = t.now_ms + cal.consolidate_left_ms
            cal.consolidate_left_ms = None
    if t.inactivity_left_ms is not None:
        t.inactivity_ms = t.now_ms + t.inactivity_left_ms
        t.inactivity_left_ms = None
    restart_absence(t, list(t.frozen))
    frozen, t.frozen, t.stopper, t.stop_deadline_ms = t.frozen, (), None, None
    return [Event(EventKind.RESUMED, t.now_ms, detail=" ".join(str(s) for s in frozen))]


def survivors(t: TableState) -> list[Event]:
    """M9.8, M11.3: one player left wins; nobody left, nobody wins."""
    if t.phase is Phase.ENDED:
        return []
    remaining = [p for p in t.players if p.in_play]
    if t.phase is Phase.TIEBREAK:
        tied = [p for p in remaining if p.seat in t.tiebreak_players]
        if len(tied) == 1:
            return end_with_winner(t, tied[0].seat, "tiebreak")
        if not tied:
            return end_nobody(t)
        return []
    if len(remaining) == 1:
        return end_with_winner(t, remaining[0].seat, "survivor")
    if not remaining:
        return end_nobody(t)
    return []


def end_with_winner(t: TableState, winner: Seat, ending: str) -> list[Event]:
    t.phase = Phase.ENDED
    t.result = score_win(t, winner, ending)
    return [Event(EventKind.ENDED, t.now_ms, winner, detail=t.result.summary())]


def end_nobody(t: TableState) -> list[Event]:
    t.phase = Phase.ENDED
    t.result = score_win(t, None, "everyone-gone")
    return [Event(EventKind.ENDED, t.now_ms, None, detail=t.result.summary())]


# -- inactivity (M7) -----------------------------------------------------------------------
def inactivity(t: TableState) -> list[Event]:
    """M7.3: nobody drew or put own cards down for 2 minutes."""
    active = [p for p in t.players if p.in_play]
    if not any(p.tallone for p in active):
        return final_silence(t)
    out = [Event(EventKind.FORCED_DRAW, t.now_ms)]
    for ps in active:
        if not ps.tallone:
            continue
        if ps.pozzetto:
            ps.pending_draws += 1  # M7.4: delivered when the pozzetto calata concludes
            continue
        out.append(_draw_one(t, ps))
    t.inactivity_ms = t.now_ms + INACTIVITY_MS
    return out


def _draw_one(t: TableState, ps: PlayerState) -> Event:
    card = ps.tallone.pop()
    ps.hand.add(card)
    ps.drawn = True
    return Event(EventKind.DREW, t.now_ms, ps.seat, cards=(card,), secret_to=ps.seat,
                 detail="forced")


def deliver_forced_draws(t: TableState, ps: PlayerState) -> list[Event]:
    """M7.4: a forced draw that found a pozzetto calata in progress arrives at its end."""
    out: list[Event] = []
    while ps.pending_draws and ps.tallone and not ps.pozzetto:
        ps.pending_draws -= 1
        out.append(_draw_one(t, ps))
    if not ps.tallone:
        ps.pending_draws = 0
    return out


# -- final silence and tiebreak (M10) ------------------------------------------------------
def final_silence(t: TableState) -> list[Event]:
    """M10.1: all talloni empty and 2 minutes without a calata: fewest cards in hand wins.

    Decision: calate still open at that instant are concluded first by the normal criterion."""
    out: list[Event] = []
    for cal in sorted((c for c in t.open_calate()), key=lambda c: c.started_ms):
        out += conclude(t, cal, "final silence")
        if t.phase is Phase.ENDED:
            return out
    active = [p for p in t.players if p.in_play]
    counts = {p.seat: len(p.hand) + len(p.pozzetto) for p in active}
    fewest = min(counts.values())
    tied = [s for s, n in counts.items() if n == fewest]
    out.append(Event(EventKind.SILENCE, t.now_ms))
    if len(tied) == 1:
        return out + end_with_winner(t, tied[0], "silence")
    return out + start_tiebreak(t, tied)


def start_tiebreak(t: TableState, tied: list[Seat]) -> list[Event]:
    """M10.2: the tied players uncover all their cards into one common pozzetto."""
    t.phase = Phase.TIEBREAK
    t.tiebreak_players = tuple(tied)
    t.tiebreak_ms = t.now_ms + TIEBREAK_MS
    for s in tied:
        ps = t.players[s]
        for c in ps.hand | ps.pozzetto:
            t.common.add(c)
            t.common_owner[c] = s
        ps.hand.clear()
        ps.pozzetto.clear()
    pause_absence(t, [s for s in (Seat.P1, Seat.P2, Seat.P3) if s not in tied])  # M11.5
    return [Event(EventKind.TIEBREAK, t.now_ms, cards=L.sorted_cards(tuple(t.common)),
                  detail=" ".join(str(s) for s in tied))]


def tiebreak_won(t: TableState, winner: Seat) -> list[Event]:
    return end_with_winner(t, winner, "tiebreak")


def tiebreak_timeout(t: TableState) -> list[Event]:
    """M10.3: nobody placed a common card within 2 minutes: a draw (patta).

    Decision: open calate of the tied players are concluded first, in the order they started;
    the first confirmed with a common card on the table wins."""
    out: list[Event] = []
    for cal in sorted(t.open_calate(), key=lambda c: c.started_ms):
        out += conclude(t, cal, "tiebreak over")
        if t.phase is Phase.ENDED:
            return out
    tied = tuple(s for s in t.tiebreak_players if t.players[s].in_play)
    t.phase = Phase.ENDED
    t.result = score_draw(t, tied)
    return [*out, Event(EventKind.ENDED, t.now_ms, None, detail=t.result.summary())]


# -- absence (M11) -------------------------------------------------------------------------
def absence_may_run(t: TableState, ps: PlayerState) -> bool:
    """M11.5: the 90 s do not run for frozen players nor for those out of a tiebreak."""
    if not ps.in_play:
        return False
    if t.phase is Phase.FROZEN and t.stopper != ps.seat:
        return False
    return not (t.phase is Phase.TIEBREAK and ps.seat not in t.tiebreak_players)


def pause_absence(t: TableState, seats: list[Seat]) -> None:
    for s in seats:
        t.players[s].absence_since_ms = None


def restart_absence(t: TableState, seats: list[Seat]) -> None:
    """When a freeze ends, the frozen players' absence counts from zero (M11.5)."""
    for s in seats:
        ps = t.players[s]
        if ps.silent and ps.in_play and not ps.unknown:
            ps.absence_since_ms = t.now_ms


def sign_of_life(t: TableState, ps: PlayerState) -> None:
    """Any action is a sign of life (M11.1 decision): a silent player's count restarts."""
    ps.last_sign_ms = t.now_ms
    if ps.silent and not ps.unknown and absence_may_run(t, ps):
        ps.absence_since_ms = t.now_ms


def abandonment_due(t: TableState) -> list[Event]:
    """M11.2-M11.3: every abandonment maturing now is evaluated together."""
    due = [ps for ps in t.players if ps.in_play and ps.absence_since_ms is not None
           and ps.absence_since_ms + ABANDON_MS <= t.now_ms]
    return abandon(t, due, "90 s without a sign of life (M11.2)")


def abandon(t: TableState, players: list[PlayerState], why: str) -> list[Event]:
    """M11.4: an open calata concludes by the normal criterion, the held card is released."""
    out: list[Event] = []
    for ps in players:
        ps.absence_since_ms = None
        cal = t.open_calata(ps.seat)
        if cal is not None:
            out += conclude(t, cal, "abandoned",
                            whole=cal.is_stop and t.phase is Phase.FROZEN)  # (M9.7)
        if ps.hold is not None:
            out.append(L.release_hold(t, ps, EventKind.RELEASED))
        out += L.return_pozzetto(t, ps)
    if t.phase is Phase.ENDED:
        return out
    return out + eliminate(t, players, why, PlayerStatus.ABANDONED)


def abandon_action(t: TableState, a: A.Abandon) -> list[Event]:
    """ABBANDONA (M11.6): the same outcome at once (the app asks for confirmation)."""
    ps = t.actor(a.player)
    return abandon(t, [ps], "ABBANDONA (M11.6)")


def liveness(t: TableState, a: A.Liveness) -> list[Event]:
    """Presence input (M11.1): accepted in every phase from every seat; no events.
    Unknown (docs/rules-decisions.md, "Absence our servers cannot see"): the absence count
    stops; the silence known after it counts from then, never backdated."""
    ps = t.players[a.player]
    if a.unknown:
        ps.unknown = True
        ps.absence_since_ms = None
        return []
    was_unknown, ps.unknown = ps.unknown, False
    since = t.now_ms
    if not a.alive and a.since_ms is not None and not was_unknown:
        since = min(t.now_ms, max(a.since_ms, t.start_ms))
    ps.last_sign_ms = since
    ps.silent = not a.alive
    if ps.silent and absence_may_run(t, ps):
        ps.absence_since_ms = since
    elif not ps.silent:
        ps.absence_since_ms = None
    return []
