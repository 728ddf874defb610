"""What the solver may work with, read from ONE player's view (`rules.view_for`) and nothing else.

The pool is the player's hand and pozzetto (M4.3: the pozzetto is still the hand; in a
tiebreak, the common pozzetto, M10.2). The melds the play may touch are those it can rely on:
regular melds that no other player's open calata is working on (M6.6 zones), that hold no card
on trial by another player (M5.4.3: their work may still fall, and ours with it, M5.5.1), no
card held by another player (M6.1) and no card reserved to another player (M6.5); plus the
player's own work in progress (its zone), regular or not. During the player's own Stop! every
table card is theirs (M9.4): every meld may be touched, and every meld must end regular.
"""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox.rules import Card, PlayerView, Seat

PLAYING, FROZEN, TIEBREAK, ENDED = "playing", "frozen", "tiebreak", "ended"


@dataclass(frozen=True, slots=True)
class TableMeld:
    id: int
    cards: tuple[Card, ...]
    regular: bool


@dataclass(frozen=True, slots=True)
class Position:
    hand: tuple[Card, ...]  # hand cards outside the pozzetto
    pozzetto: tuple[Card, ...]  # own pozzetto, or the common one in a tiebreak (M10.2)
    melds: tuple[TableMeld, ...]  # the melds the play may touch
    fixed: tuple[TableMeld, ...]  # the other melds: left exactly as they are
    stop: bool = False  # the player's own Stop!: the whole table must end in order (M9.4)
    tiebreak: bool = False  # placing from the common pozzetto (M10.2)

    @property
    def pool(self) -> tuple[Card, ...]:
        return self.hand + self.pozzetto

    @property
    def size(self) -> int:
        """Cards the solver reasons about: the pool and the touchable table cards."""
        return len(self.pool) + sum(len(m.cards) for m in self.melds)


def position_of(view: PlayerView, seat: Seat) -> Position:
    me = view.seats[seat]
    stop = view.phase == FROZEN and view.stopper == seat
    tiebreak = view.phase == TIEBREAK and seat in view.tiebreak
    pozzetto = view.common if tiebreak else me.pozzetto
    mine = set(me.zone)
    theirs = {mid for s in view.seats if s.seat != seat for mid in s.zone}
    reserved = {card for card, owner in view.reserved if owner != seat}
    melds: list[TableMeld] = []
    fixed: list[TableMeld] = []
    for m in view.table:
        tm = TableMeld(m.id, tuple(tc.card for tc in m.cards), m.regular)
        if stop:
            melds.append(tm)  # M9.4: every table card is the stopper's
            continue
        foreign = (m.id in theirs
                   or any(tc.trial_by is not None and tc.trial_by != seat for tc in m.cards)
                   or any(tc.held_by is not None and tc.held_by != seat for tc in m.cards)
                   or any(tc.card in reserved for tc in m.cards))
        if foreign or not (m.regular or m.id in mine):
            fixed.append(tm)
        else:
            melds.append(tm)
    return Position(hand=view.hand, pozzetto=tuple(pozzetto), melds=tuple(melds),
                    fixed=tuple(fixed), stop=stop, tiebreak=tiebreak)
