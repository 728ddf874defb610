"""One hand of classic Machiavelli (C4-C10): turns, the shared table, the stock, the turn clock.

Only the player whose turn it is acts. A turn either plays cards (new melds from the hand,
hand cards added to any meld, any rearrangement of the table, a joker swapped for the card it
stands for) and ends with `End` once every meld is valid, or draws one card, or is given up
(`Restore`, or its time runs out): the table goes back exactly as it was at the turn's start,
the cards played go back to the hand, and the penalty is drawn (C6).

No action but `End` judges the table: in the middle of a turn melds may be anything (a meld
emptied by moves disappears). The first change of a turn takes a snapshot of the table and of
the player's hand; restoring puts that snapshot back. Every refusal is raised before anything
changes (`machiavelox.rules.errors`: a stable code and a message), so a refused action changes
nothing. Time is an argument (ms); the hand reads no clock and draws no random number.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from machiavelox.rules import Card, illegal, invalid

from . import actions as A
from .absence import Presence
from .cards import ClassicCard, Joker, deck, show
from .deal import ClassicDeal
from .events import ClassicEvent
from .melds import arrange, is_valid, opening_value, why_invalid
from .scoring import HandResult, hand_points, hand_result
from .seats import Seat
from .variants import SessionKind, Variants


@dataclass(frozen=True, slots=True)
class TurnSnapshot:
    """The table and the player's hand at the start of a turn (taken at its first change)."""

    melds: dict[int, tuple[ClassicCard, ...]]
    hand: frozenset[ClassicCard]


class Hand:
    def __init__(self, variants: Variants, deal: ClassicDeal, playing: tuple[Seat, ...],
                 start_ms: int = 0, number: int = 1, presence: Presence | None = None) -> None:
        deal.check(variants, playing)
        self.presence = presence if presence is not None else Presence()  # (absence.py)
        self.variants = variants
        self.aces = variants.aces
        self.number = number
        self.playing = playing  # the seats dealt in, in turn order (C4)
        self.hands: dict[Seat, set[ClassicCard]] = {s: set(deal.hands[s]) for s in playing}
        self.stock: list[ClassicCard] = list(reversed(deal.stock))  # the top card last
        self.melds: dict[int, list[ClassicCard]] = {}
        self.where: dict[ClassicCard, int] = {}
        self.next_id = 1
        for cards in deal.table:
            self._new_meld(list(cards))
        self.out_of_play = frozenset(set(deck(variants.decks, variants.jokers)) - deal.dealt())
        # C8: with no opening rule everybody may manipulate from the start
        self.opened: set[Seat] = (set(playing) if variants.opening == 0
                                  else set(deal.opened) & set(playing))
        self.now_ms = start_ms
        self.result: HandResult | None = None
        self.ended_ms: int | None = None  # when the hand ended (C9, C10)
        self.events: list[ClassicEvent] = []
        # melds not known to be valid although no turn touched them (an explicit position)
        self._suspect = {mid for mid, cards in self.melds.items() if not is_valid(cards, self.aces)}
        self.turn = deal.first
        self.turn_started_ms = start_ms
        self.deadline_ms: int | None = None
        self._snap: TurnSnapshot | None = None
        self.played = 0  # hand cards put on the table this turn (C5)
        self.only_new = True  # the turn only laid new melds from the hand (C8)
        self.new_melds: list[int] = []
        self.touched: set[int] = set()
        self._begin_turn(start_ms)

    # ------------------------------------------------------------------ interface
    @property
    def over(self) -> bool:
        return self.result is not None

    def time_left_ms(self) -> int | None:
        """Of the current turn, on the table's clock (C7); None when untimed or over."""
        if self.deadline_ms is None or self.result is not None:
            return None
        return max(0, self.deadline_ms - self.now_ms)

    def next_deadline(self) -> int | None:
        """When the current turn ends by itself: its time (C7) or its player's absence (A1)."""
        if self.result is not None:
            return None
        absent = self.absence_ends_turn_at()
        if absent is None or (self.deadline_ms is not None and self.deadline_ms <= absent):
            return self.deadline_ms
        return absent

    def absence_ends_turn_at(self) -> int | None:
        """When the turn ends because its player is silent (absence.py, A1-A2), if it will."""
        return self.presence.turn_ends_at(self.turn, self.turn_started_ms, self.playing)

    def advance(self, now_ms: int) -> list[ClassicEvent]:
        """Let time pass: every turn whose time runs out by `now_ms` ends as a restore (C7),
        and every turn of a silent player as absence.py says (A1), in order, each next turn
        starting at the instant the previous one ended."""
        start = len(self.events)
        while self.result is None and (at := self.next_deadline()) is not None \
                and at <= now_ms:
            self.now_ms = at
            if at == self.deadline_ms:
                self._fail_turn(at, timeout=True)
            else:
                self._absent_turn(at)
        if self.result is None:  # an ended hand's clock stays at its end
            self.now_ms = max(self.now_ms, now_ms)
        return self.events[start:]

    def apply(self, action: A.ClassicAction, now_ms: int) -> list[ClassicEvent]:
        """Let time pass to `now_ms`, then apply the action of the player whose turn it is.
        Raises a RulesError, changing nothing, when the rules refuse it."""
        start = len(self.events)
        self.advance(now_ms)
        if self.result is not None:
            raise illegal("hand/over", "the hand is over: no more turns (C9, C10)")
        p = action.player
        if p != self.turn:
            who = "" if p in self.playing else f" ({p} is not in this hand)"
            raise illegal("turn/not-yours", f"it is {self.turn}'s turn, not {p}'s{who} (C5)")
        match action:
            case A.Meld():
                self._meld(action)
            case A.Attach():
                self._attach(action)
            case A.Move():
                self._move(action)
            case A.Swap():
                self._swap(action)
            case A.End():
                self._end(p)
            case A.Draw():
                self._draw(p)
            case A.Restore():
                self._fail_turn(self.now_ms, timeout=False)
            case _:
                raise invalid("action/unknown", f"{type(action).__name__} is not a turn's action")
        return self.events[start:]

    def changed(self) -> bool:
        """True when the table differs from the turn's start (as melds of cards)."""
        snap = self._snap
        if snap is None:
            return False
        if len(snap.melds) != len(self.melds):
            return True
        before = Counter(frozenset(cards) for cards in snap.melds.values())
        return before != Counter(frozenset(cards) for cards in self.melds.values())

    def invalid_melds(self) -> list[int]:
        """Melds that `End` would refuse now: those the turn touched (or the position began
        with) that are not valid. Every other meld was valid when the turn began."""
        ids = sorted((self.touched | self._suspect) & self.melds.keys())
        return [mid for mid in ids if not is_valid(self.melds[mid], self.aces)]

    # ------------------------------------------------------------------ gestures (C5)
    def _in_hand(self, p: Seat, cards: tuple[ClassicCard, ...]) -> None:
        hand = self.hands[p]
        missing = [c for c in cards if c not in hand]
        if missing:
            raise illegal("card/not-in-hand", f"{show(missing)} is not in your hand")

    def _meld_id(self, mid: int) -> list[ClassicCard]:
        cards = self.melds.get(mid)
        if cards is None:
            raise invalid("meld/unknown", f"there is no meld {mid} on the table")
        return cards

    def _meld(self, a: A.Meld) -> None:
        if len(a.cards) < 3:
            raise illegal("meld/too-few", "a new meld is three or more cards from the hand (C5)")
        if len(set(a.cards)) != len(a.cards):
            raise invalid("card/repeated", "the same card is named twice")
        self._in_hand(a.player, a.cards)
        self._take_snapshot()
        hand = self.hands[a.player]
        hand.difference_update(a.cards)
        mid = self._new_meld(list(a.cards))
        self.played += len(a.cards)
        self.new_melds.append(mid)
        self.touched.add(mid)
        self._emit("melded", a.player, cards=a.cards, meld=mid)

    def _attach(self, a: A.Attach) -> None:
        self._in_hand(a.player, (a.card,))
        target = self._meld_id(a.meld)
        self._take_snapshot()
        self.hands[a.player].discard(a.card)
        target.append(a.card)
        self.where[a.card] = a.meld
        self.played += 1
        self.only_new = False
        self.touched.add(a.meld)
        self._emit("attached", a.player, cards=(a.card,), meld=a.meld)

    def _move(self, a: A.Move) -> None:
        source = self._meld_id(a.src)
        if self.where.get(a.card) != a.src:
            raise illegal("card/not-in-meld", f"{a.card.face} is not in that meld")
        if a.dst is not None:
            self._meld_id(a.dst)
            if a.dst == a.src:
                raise illegal("move/same-meld", "the card is already in that meld")
        self._take_snapshot()
        source.remove(a.card)
        if not source:  # a meld emptied by moves disappears
            del self.melds[a.src]
        if a.dst is None:
            dst = self._new_meld([a.card])
        else:
            dst = a.dst
            self.melds[dst].append(a.card)
            self.where[a.card] = dst
        self.only_new = False
        self.touched.update((a.src, dst))
        self._emit("moved", a.player, cards=(a.card,), meld=a.src, to_meld=dst)

    def _swap(self, a: A.Swap) -> None:
        if not isinstance(a.card, Card):
            raise illegal("swap/joker", "a joker takes no joker's place: swap a natural card")
        self._in_hand(a.player, (a.card,))
        target = self._meld_id(a.meld)
        if not isinstance(a.joker, Joker) or self.where.get(a.joker) != a.meld:
            raise illegal("swap/no-joker", "that meld holds no such joker (C2)")
        swapped = [a.card if c == a.joker else c for c in target]
        if not is_valid(swapped, self.aces):
            raise illegal("swap/not-the-card",
                          f"{a.card.face} is not the card the joker stands for there: the meld "
                          f"would not stay valid ({why_invalid(swapped, self.aces)}) (C2)")
        self._take_snapshot()
        target[target.index(a.joker)] = a.card
        del self.where[a.joker]
        self.where[a.card] = a.meld
        hand = self.hands[a.player]
        hand.discard(a.card)
        hand.add(a.joker)
        self.played += 1  # a swap puts a hand card on the table
        self.only_new = False
        self.touched.add(a.meld)
        self._emit("swapped", a.player, cards=(a.card, a.joker), meld=a.meld)

    # ------------------------------------------------------------------ ending a turn
    def _end(self, p: Seat) -> None:
        if self.played == 0:
            raise illegal("end/nothing-played", "play at least one card from your hand, or "
                          "draw (C5)")
        bad = self.invalid_melds()
        if bad:
            cards = self.melds[bad[0]]
            shown = show(c for c, _ in arrange(cards, self.aces))
            more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
            raise illegal("end/invalid-meld", f"the table is not in order: [{shown}] is not a "
                          f"valid meld{more}: {why_invalid(cards, self.aces)}")
        opening = p not in self.opened
        if opening:
            need = self.variants.opening
            if not self.only_new:
                raise illegal("end/opening-new-melds-only",
                              "the opening turn lays new melds from your own hand only: no "
                              "attaching, moving or swapping before the opening (C8)")
            worth = sum(opening_value(self.melds[m], self.aces) for m in self.new_melds)
            if worth < need:
                raise illegal("end/opening-points", f"the opening needs {need} points; these "
                              f"melds are worth {worth} (C8)")
        self._suspect.clear()
        self._emit("played", p, count=self.played)
        if opening:
            self.opened.add(p)
            self._emit("opened", p)
        if not self.hands[p]:
            self._finish((p,), "out")  # C9
        else:
            self._next_turn(self.now_ms)

    def _draw(self, p: Seat) -> None:
        if self.changed():
            raise illegal("draw/table-changed", "you changed the table this turn: end the turn "
                          "with the table in order, or restore it (C5)")
        if not self.stock:
            self._stock_out(p)  # C10
            return
        c = self.stock.pop()
        self.hands[p].add(c)
        self._emit("drew", p, cards=(c,), secret_to=p)
        self._next_turn(self.now_ms)

    def _fail_turn(self, at: int, timeout: bool) -> None:
        """C6 (and C7 at the deadline): the table as at the turn's start, the cards played back
        in hand, the penalty drawn (what the stock still has), the turn over."""
        p = self.turn
        if timeout:
            self._emit("timeout", p, at=at)
        hand = self.hands[p]
        back: tuple[ClassicCard, ...] = ()
        snap = self._snap
        if snap is not None:
            back = tuple(sorted(snap.hand - hand, key=lambda c: c.index))
            self.melds = {mid: list(cards) for mid, cards in snap.melds.items()}
            self.where = {c: mid for mid, cards in self.melds.items() for c in cards}
            self.hands[p] = set(snap.hand)
        self._emit("restored", p, cards=back, at=at)
        taken: list[ClassicCard] = []
        while len(taken) < self.variants.penalty and self.stock:
            taken.append(self.stock.pop())
        self.hands[p].update(taken)
        self._emit("penalty", p, cards=tuple(taken), count=len(taken), secret_to=p, at=at)
        if len(taken) < self.variants.penalty:
            self._stock_out(p, at)  # C10: the penalty took what the stock still had
        else:
            self._next_turn(at)

    def _absent_turn(self, at: int) -> None:
        """A1: the turn of a silent player ends: as a draw (C5's pass) if the table is as the
        turn found it, else as a give-up (C6)."""
        p = self.turn
        self._emit("absent", p, at=at)
        if self.changed():
            self._fail_turn(at, timeout=False)
        else:
            self._draw(p)

    def _stock_out(self, p: Seat, at: int | None = None) -> None:
        """C10: a player must take a card and the stock is empty: the hand ends; the fewest
        penalty points in hand win it (ties: every tied player wins, decision)."""
        self._emit("stock-out", p, at=at)
        scoring = self.variants.scoring
        pts = {s: hand_points(self.hands[s], scoring) for s in self.playing}
        low = min(pts.values())
        self._finish(tuple(s for s in self.playing if pts[s] == low), "stock", at)

    def _finish(self, winners: tuple[Seat, ...], ending: str, at: int | None = None) -> None:
        scoring = self.variants.scoring
        pts = {s: hand_points(self.hands[s], scoring) for s in self.playing}
        single = self.variants.session is SessionKind.SINGLE
        self.result = hand_result(winners, ending, pts, self.variants.players, single)
        self.ended_ms = self.now_ms if at is None else at
        self.deadline_ms = None
        self._snap = None
        for w in winners:
            self._emit("hand-won", w, at=at)
        self._emit("hand-ended", None, detail=self.result.summary(), at=at)

    # ------------------------------------------------------------------ turns
    def _next_turn(self, at: int) -> None:
        i = self.playing.index(self.turn)
        self.turn = self.playing[(i + 1) % len(self.playing)]  # clockwise (C4)
        self._begin_turn(at)

    def _begin_turn(self, at: int) -> None:
        self.turn_started_ms = at
        self.deadline_ms = at + self.variants.turn_time_ms if self.variants.timed else None
        self._snap = None
        self.played = 0
        self.only_new = True
        self.new_melds = []
        self.touched = set()
        self._emit("turn", self.turn, at=at)

    def _take_snapshot(self) -> None:
        if self._snap is None:
            self._snap = TurnSnapshot({mid: tuple(cards) for mid, cards in self.melds.items()},
                                      frozenset(self.hands[self.turn]))

    def _new_meld(self, cards: list[ClassicCard]) -> int:
        mid = self.next_id
        self.next_id += 1
        self.melds[mid] = cards
        for c in cards:
            self.where[c] = mid
        return mid

    def _emit(self, kind: str, player: Seat | None, *, cards: tuple[ClassicCard, ...] = (),
              meld: int | None = None, to_meld: int | None = None, count: int | None = None,
              detail: str = "", secret_to: Seat | None = None, at: int | None = None) -> None:
        self.events.append(ClassicEvent(kind, self.now_ms if at is None else at, player, cards,
                                        meld, to_meld, count, detail, secret_to))
