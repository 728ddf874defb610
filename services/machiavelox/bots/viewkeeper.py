"""A player's view kept current from the events (docs/protocol.md: a snapshot, then the
events after it), so a network bot need not ask for a snapshot (`Resync`, paced at the
gateway: one every 2 s) after each of its actions.

`ViewKeeper.reset(view, seq)` takes a snapshot's view (`codec.view_from_pb`, the truth);
`apply(event)` applies the next event exactly as the engine did it, where the event spells it
out: a draw (M4.2), a declaration and its undoing (M5.3), a calata opened (its 40 s, M5.0.1),
a direct meld, an attach, a place, a move (with the splits of M3.3 and of an interior removal,
whose new meld ids the event names), a hold taken and released (M6.1), a calata confirmed or
void, a consolidation (M5.5.8), the inactivity countdown (M7.2, M7.3). Card and meld statuses
(P2) and the zones of open calate (M6.6) follow from which calata last moved each card and
which took cards from each meld (as `rules.view_for` computes them), regularity and display
order from `rules.is_regular` / `rules.display_order`.

What the events do not spell out card by card (a chain or a failed or cancelled calata,
M5.5; a reservation, M6.5; Stop! and the freeze's end, M9; a tiebreak, M10.2; the endings; an
outage, `interrupted`), a gap in the sequence numbers, or a consolidation it cannot attribute
(two calate of one player confirmed and due, or statuses known only from a snapshot): `apply`
returns False and the keeper is stale (`current` False) until the next `reset`. The caller
then asks for a snapshot. Pure: no I/O, no clock, nothing of the client's (layering).

Not kept: when a player went dormant or absent (P4, M11: liveness has no events; the view
keeps the snapshot's), and `now_ms` is the last event's time (the table's clock between
events is the caller's).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from machiavelox import codec
from machiavelox._gen.v1 import common_pb2
from machiavelox.rules import (
    CALATA_MS,
    INACTIVITY_MS,
    Card,
    CardStatus,
    MeldView,
    PlayerView,
    Seat,
    SeatView,
    TableCard,
    display_order,
    is_regular,
    split_long_run,
    split_on_removal,
)

TRIAL, CONFIRMED, CONSOLIDATED = CardStatus.TRIAL, CardStatus.CONFIRMED, CardStatus.CONSOLIDATED
CALATA_ENDS = frozenset({"confirmed", "void"})
OPS = frozenset({"direct", "attached", "placed", "moved"})
MAX_MELD = 10  # M3.3: a longer regular run splits


def _sorted(cards: set[Card] | list[Card] | tuple[Card, ...]) -> tuple[Card, ...]:
    return tuple(sorted(cards, key=lambda c: (c.suit, c.rank, c.copy)))


@dataclass(eq=False)
class Calata:
    """One calata as the events told it: its player, its status (TRIAL while open), the meld
    ids its ops touched, the cards they moved, the melds its moves took from."""
    seat: Seat
    deadline_ms: int | None = None
    status: CardStatus = TRIAL
    concluded_ms: int | None = None
    touched: list[int] = field(default_factory=list)
    cards: list[Card] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    own_cards: bool = False  # an op with cards of the player's own (M7.2)
    zone: tuple[int, ...] = ()  # as judged at its last op (the engine rejudges it then)


UNKNOWN = Calata(Seat.P1, status=CONFIRMED)  # confirmed by a calata a snapshot did not name


@dataclass
class _Seat:
    view: SeatView  # the snapshot's (liveness, status)
    hand_count: int
    pozzetto: set[Card]
    tallone: int
    holding: Card | None
    said_stop: bool


class ViewKeeper:
    """One player's view: a snapshot, then every event after it (module docstring)."""

    def __init__(self) -> None:
        self.seq = 0
        self.current = False
        self._base: PlayerView | None = None
        self._melds: dict[int, list[Card]] = {}
        self._last: dict[Card, Calata] = {}  # the calata that last moved a table card
        self._open: dict[Seat, Calata] = {}
        self._confirmed: list[Calata] = []  # not yet consolidated
        self._parents: dict[int, int] = {}
        self._halves: dict[int, list[int]] = {}
        self._floor: dict[int, CardStatus] = {}  # meld statuses known from a snapshot only
        self._held: dict[Card, Seat] = {}
        self._seats: list[_Seat] = []
        self._hand: set[Card] = set()
        self._reserved: dict[Card, Seat] = {}
        self._now = 0
        self._phase = "playing"
        self._inactivity: int | None = None
        self._ended: dict[Seat, int] = {}  # when a calata of each player last ended
        self._fell: set[Card] = set()  # cards whose moves fell since the last snapshot

    # ---------------------------------------------------------------- the snapshot
    def reset(self, view: PlayerView, seq: int) -> None:
        """A snapshot's view and seq: the truth. What the events taught before (which calata
        moved which card) is kept where the snapshot agrees with it."""
        old_last, old_open = self._last, self._open
        self._base, self.seq, self.current = view, seq, True
        self._now, self._phase = view.now_ms, view.phase
        self._inactivity = view.inactivity_ms
        self._hand = set(view.hand)
        self._reserved = dict(view.reserved)
        self._seats = [_Seat(s, s.hand_count, set(s.pozzetto), s.tallone_count, s.holding,
                             s.said_stop) for s in view.seats]
        self._open = {}
        for s in view.seats:
            if s.calata_open:
                cal = old_open.get(s.seat) or Calata(s.seat)
                cal.deadline_ms, cal.zone = s.calata_deadline_ms, s.zone
                self._open[s.seat] = cal
        self._melds, self._last, self._held, self._floor = {}, {}, {}, {}
        fell, self._fell = self._fell, set()
        confirmed: dict[int, Calata] = {}
        for m in view.table:
            self._melds[m.id] = [tc.card for tc in m.cards]
            for tc in m.cards:
                if tc.held_by is not None:
                    self._held[tc.card] = tc.held_by
                if tc.status is TRIAL and tc.trial_by is not None:
                    owner = self._open.get(tc.trial_by)
                    if owner is None:
                        self.current = False
                        return
                    self._last[tc.card] = owner
                elif tc.status is CONFIRMED:
                    prior = None if tc.card in fell else old_last.get(tc.card)
                    if prior is not None and prior.status is TRIAL and \
                            self._open.get(prior.seat) is not prior:
                        # its calata ended in what the keeper could not apply (a failed
                        # calata keeps what stood, M5.4.5): confirmed then
                        prior.status = CONFIRMED
                        prior.concluded_ms = self._ended.get(prior.seat, view.now_ms)
                    if prior is not None and prior.status is CONFIRMED and prior is not UNKNOWN:
                        confirmed[id(prior)] = prior
                        self._last[tc.card] = prior
                    else:
                        self._last[tc.card] = UNKNOWN
        self._confirmed = sorted(confirmed.values(), key=lambda c: c.concluded_ms or 0)
        for c in self._confirmed + list(self._open.values()):
            c.sources = [s for s in c.sources if s in self._melds]
        self._parents = {k: v for k, v in self._parents.items() if k in self._melds}
        self._halves = {}
        for m in view.table:  # moves the keeper remembers that the table no longer has
            if self._meld_status(m.id) < m.status:
                lineage = self._lineage(m.id)
                for c in self._confirmed + list(self._open.values()):
                    c.sources = [s for s in c.sources if s not in lineage]
        for m in view.table:
            status = self._meld_status(m.id)
            if status > m.status:
                self._floor[m.id] = m.status
            elif status < m.status:
                self.current = False

    # ---------------------------------------------------------------- the events
    def apply(self, ev: common_pb2.Event) -> bool:
        """The next event applied; False when the keeper needs a snapshot (stale)."""
        self._falls(ev)
        if not self.current:
            return False
        if ev.seq <= self.seq:
            return True  # in the snapshot already
        if ev.seq != self.seq + 1 or self._phase == "tiebreak":
            return self._stale()
        self.seq = ev.seq
        self._now = max(self._now, ev.at_ms)
        try:
            ok = self._patch(ev)
        except (KeyError, ValueError, IndexError):
            ok = False  # an event about something the keeper does not know
        return ok or self._stale()

    def _falls(self, ev: common_pb2.Event) -> None:
        """Cards whose moves fell (M5.5): which calata moved them last is not known then."""
        if ev.kind in ("failed", "chain"):
            self._fell.update(codec.cards_from_pb(ev.cards))
        elif ev.kind == "cancelled" and ev.player:
            cal = self._open.get(codec.seat_from_pb(ev.player))
            self._fell.update(cal.cards if cal is not None else ())

    def _stale(self) -> bool:
        self.current = False
        return False

    def _patch(self, ev: common_pb2.Event) -> bool:
        kind = ev.kind
        cards = codec.cards_from_pb(ev.cards)
        if kind == "forced-draw":
            self._inactivity = ev.at_ms + INACTIVITY_MS  # M7.3
            return True
        if not ev.player:
            return False
        p = codec.seat_from_pb(ev.player)
        s = self._seats[p]
        if kind == "drew":
            s.tallone -= 1
            s.hand_count += 1
            if p == self._viewer:
                if not cards:
                    return False
                self._hand.update(cards)
            if ev.detail != "forced":
                self._inactivity = ev.at_ms + INACTIVITY_MS  # M7.2
            return s.tallone >= 0
        if kind == "declared":
            self._from_hand(s, cards)
            s.pozzetto.update(cards)
            return True
        if kind == "undeclared":
            s.pozzetto.difference_update(cards)
            s.hand_count += len(cards)
            if p == self._viewer:
                self._hand.update(cards)
            return True
        if kind == "calata-opened":
            stop = self._phase == "frozen" and self._stopper == p
            self._open[p] = Calata(p, None if stop else ev.at_ms + CALATA_MS)
            return True
        if kind in OPS:
            return self._op(ev, p, s, cards)
        if kind == "took" and cards:
            self._held[cards[0]] = p
            s.holding = cards[0]
            return True
        if kind in ("released", "hold-expired") and cards:
            self._held.pop(cards[0], None)
            s.holding = None
            return True
        if kind in ("failed", "cancelled") or kind in CALATA_ENDS:
            self._ended[p] = ev.at_ms
        if kind in CALATA_ENDS:
            cal = self._open.pop(p)
            for card in [c for c, o in self._reserved.items() if o == p]:
                del self._reserved[card]
            if kind == "confirmed":
                if self._floor:
                    return False  # a status known from a snapshot only may change
                cal.status, cal.concluded_ms = CONFIRMED, ev.at_ms
                self._confirmed.append(cal)
                if cal.own_cards:
                    self._inactivity = ev.at_ms + INACTIVITY_MS  # M7.2
            return True
        if kind == "consolidated":
            return self._consolidated(p, ev.at_ms)
        return False  # chain, failed, cancelled, reserved, stop, endings, ...: a snapshot

    @property
    def _viewer(self) -> Seat | None:
        return self._base.viewer if self._base is not None else None

    @property
    def _stopper(self) -> Seat | None:
        return self._base.stopper if self._base is not None else None

    def _from_hand(self, s: _Seat, cards: tuple[Card, ...]) -> None:
        s.hand_count -= len(cards)
        if s.view.seat == self._viewer:
            self._hand.difference_update(cards)

    def _op(self, ev: common_pb2.Event, p: Seat, s: _Seat, cards: tuple[Card, ...]) -> bool:
        """A direct meld, an attach, a place, a move: the board as `Board.apply` changes it,
        the new meld ids read from the event's touched melds (in the same order)."""
        cal = self._open.get(p)
        if cal is None or not cards:
            return False
        touched = list(ev.melds)
        made: list[int] = []
        if ev.kind == "direct":
            s.pozzetto.difference_update(cards)
            self._new(ev.meld, list(cards))
            made = [ev.meld, *self._split_long(ev.meld, touched, 1)]
        else:
            card = cards[0]
            if ev.kind == "attached":
                self._from_hand(s, cards)
            elif ev.kind == "placed":
                s.pozzetto.difference_update(cards)
            else:
                if self._held.get(card) == p:
                    del self._held[card]
                made = self._remove(card, ev.meld, touched)
                cal.sources.append(ev.meld)
                if self._held.get(card) is not None:
                    return False
            dst = ev.to_meld if ev.kind == "moved" else ev.meld
            if dst not in self._melds:
                self._new(dst, [])
            self._melds[dst].append(card)
            made += [dst, *self._split_long(dst, touched, len(made) + 1)]
        if made != touched:
            return False
        for c in cards:
            self._last[c] = cal
        cal.touched += touched
        cal.cards += cards
        cal.own_cards = cal.own_cards or ev.kind != "moved"
        cal.zone = self._zone(cal)
        return True

    def _new(self, mid: int, cards: list[Card]) -> None:
        if mid in self._melds:
            raise ValueError(f"meld {mid} exists")
        self._melds[mid] = cards

    def _split_long(self, mid: int, touched: list[int], at: int) -> list[int]:
        halves = split_long_run(self._melds[mid])
        if halves is None:
            return []
        low, high = halves
        if len(low) > MAX_MELD or len(high) > MAX_MELD:
            raise ValueError("a run of more than 20")
        return [self._split(mid, low, high, touched[at])]

    def _remove(self, card: Card, mid: int, touched: list[int]) -> list[int]:
        cards = self._melds[mid]
        halves = split_on_removal(cards, card)
        if halves is None:
            cards.remove(card)
            if not cards:
                del self._melds[mid]
                return [mid]
            return [mid, *self._split_long(mid, touched, 1)]
        return [mid, self._split(mid, *halves, touched[1])]

    def _split(self, mid: int, low: list[Card], high: list[Card], new: int) -> int:
        self._melds[mid] = low
        self._new(new, high)
        self._halves.setdefault(mid, []).append(new)
        self._parents[new] = mid
        return new

    def _zone(self, cal: Calata) -> tuple[int, ...]:
        """`Board.melds_touched` of the calata's ops: the melds they touched or split from
        those, the melds holding their cards (M6.6)."""
        where = self._where()
        out = {where[c] for c in cal.cards if c in where}
        out.update(m for m in cal.touched if m in self._melds)
        stack = [m for m in set(cal.touched) if m in self._halves]
        while stack:
            for half in self._halves[stack.pop()]:
                if half in self._melds:
                    out.add(half)
                if half in self._halves:
                    stack.append(half)
        return tuple(sorted(out))

    def _where(self) -> dict[Card, int]:
        return {c: mid for mid, cs in self._melds.items() for c in cs}

    def _consolidated(self, p: Seat, at_ms: int) -> bool:
        """M5.5.8: which of the player's confirmed calate this is: the only one, or the only
        one due; else the keeper cannot tell (a snapshot)."""
        if self._floor or any(c is UNKNOWN for c in self._last.values()):
            return False
        mine = [c for c in self._confirmed if c.seat == p]
        if len(mine) > 1:
            mine = [c for c in mine if (c.concluded_ms or 0) + CALATA_MS <= at_ms]
        if len(mine) != 1:
            return False
        cal = mine[0]
        cal.status = CONSOLIDATED
        self._confirmed.remove(cal)
        for card in [c for c, o in self._last.items() if o is cal]:
            del self._last[card]
        return True

    # ---------------------------------------------------------------- the view
    def _lineage(self, mid: int) -> set[int]:
        out = {mid}
        while mid in self._parents:
            mid = self._parents[mid]
            out.add(mid)
        return out

    def _card(self, card: Card) -> tuple[CardStatus, Seat | None]:
        cal = self._last.get(card)
        if cal is None:
            return CONSOLIDATED, None
        return cal.status, cal.seat if cal.status is TRIAL else None

    def _meld_status(self, mid: int) -> CardStatus:
        weakest = min((self._card(c)[0] for c in self._melds[mid]), default=CONSOLIDATED)
        lineage = self._lineage(mid)
        for cal in [*self._open.values(), *self._confirmed]:
            if any(src in lineage for src in cal.sources):
                weakest = min(weakest, cal.status)
        return min(weakest, self._floor.get(mid, CONSOLIDATED))

    def view(self) -> PlayerView:
        """The view now (after the last event applied)."""
        base = self._base
        assert base is not None, "no snapshot yet"
        table = []
        for mid, cards in self._melds.items():
            shown = tuple(TableCard(c, *self._card(c), self._held.get(c))
                          for c in display_order(cards))
            table.append(MeldView(mid, shown, is_regular(cards), self._meld_status(mid)))
        seats = []
        for s in self._seats:
            cal = self._open.get(s.view.seat)
            seats.append(replace(
                s.view, hand_count=s.hand_count, pozzetto=_sorted(s.pozzetto),
                tallone_count=s.tallone, calata_open=cal is not None,
                calata_deadline_ms=cal.deadline_ms if cal is not None else None,
                zone=cal.zone if cal is not None else (), holding=s.holding,
                said_stop=s.said_stop))
        return replace(
            base, now_ms=self._now, hand=_sorted(self._hand),
            seats=(seats[0], seats[1], seats[2]), table=tuple(table),
            inactivity_ms=self._inactivity if self._phase == "playing" else None,
            reserved=tuple(sorted(self._reserved.items(), key=lambda kv: kv[0].index)))
