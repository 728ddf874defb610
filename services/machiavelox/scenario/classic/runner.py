"""Running a classic scenario: statements against a live `classic.Session`, virtual clock.

The first `start` creates the session with its variants; every later `start` deals the next
hand once the previous one has ended (`expect phase between`), to the seats still in the
session. Meld names belong to one hand. A refused action fails the scenario unless the next
statement is `expect rejected` (with a word that must appear in the refusal's code or
message).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import TextIO

from machiavelox import classic, rules
from machiavelox.rules import RulesError

from ..driver import Driver
from ..errors import ScenarioFailure
from ..resolve import exact_meld, named_meld, pick
from ..syntax import Act, Block, CardRef, Expect, ListRef, NameRef, Scenario
from .checks import check, show_table
from .syntax import Ref, Spec, Start


class ClassicRunner(Driver[classic.Seat, Spec, classic.ClassicAction, classic.ClassicEvent]):
    def __init__(self, verbose: bool = False, out: TextIO | None = None) -> None:
        super().__init__(verbose, out)
        self._session: classic.Session | None = None

    @property
    def session(self) -> classic.Session:
        assert self._session is not None, "the parser guarantees a start before play"
        return self._session

    @property
    def hand(self) -> classic.Hand:
        return self.session.hand

    def run(self, scenario: Scenario) -> None:
        self.run_statements(scenario.statements)

    def check(self, stmt: Expect) -> None:
        check(self.session, stmt, self.matched)

    # ------------------------------------------------------------------ statements
    def start(self, stmt: Block) -> None:
        assert isinstance(stmt, Start)
        if self._session is None:
            deal = self.deal(stmt, stmt.variants, stmt.variants.seats)
            try:
                self._session = classic.Session(stmt.variants, deal, start_ms=self.now_ms)
            except RulesError as e:
                raise ScenarioFailure("a deal the table can play",
                                      f"refused {e.code}: {e.message}") from e
            self.trace_events(self.hand.events)
        else:
            deal = self.deal(stmt, self.session.variants, self.session.active)
            try:
                self.trace_events(self.session.deal_next(deal, self.now_ms))
            except RulesError as e:
                raise ScenarioFailure("the next hand to be dealt",
                                      f"refused {e.code}: {e.message}") from e
        ids = list(self.hand.melds)
        self.names = {name: ids[index] for name, index in stmt.names.items()}
        self.matched = {key for key in self.matched if key[0] == "session"}

    @staticmethod
    def deal(stmt: Start, variants: classic.Variants, playing: tuple[classic.Seat, ...]
             ) -> classic.ClassicDeal:
        first = stmt.first if stmt.first is not None else playing[0]  # the format: default p1
        if stmt.seed is not None:
            deal = classic.shuffled_deal(variants, stmt.seed, playing, first)
        else:
            deal = classic.ClassicDeal(
                hands=tuple(stmt.hands.get(s, ()) for s in variants.seats),
                stock=stmt.stock, table=stmt.table, first=first)
        return dataclasses.replace(deal, opened=stmt.opened, totals=stmt.totals)

    def advance_to(self, target_ms: int) -> list[classic.ClassicEvent]:
        return self.session.advance(target_ms)

    def before_act(self) -> None:
        # timers due by now fire first, whether the action is then accepted or not
        self.trace_events(self.session.advance(self.now_ms))

    def apply(self, action: classic.ClassicAction) -> list[classic.ClassicEvent]:
        return self.session.apply(action, self.now_ms)

    def bind(self, stmt: Act[classic.Seat, Spec], events: list[classic.ClassicEvent]) -> None:
        """`as NAME`: the meld the action created (`meld`, or `move ... to new`)."""
        for ev in events:
            if ev.kind == "melded" and ev.meld is not None:
                self.names[str(stmt.name)] = ev.meld
                return
            if ev.kind == "moved" and ev.to_meld is not None:
                self.names[str(stmt.name)] = ev.to_meld
                return
        raise ScenarioFailure(f"a new meld to call {stmt.name}", "no new meld was made")

    # ------------------------------------------------------------------ actions
    def action(self, stmt: Act[classic.Seat, Spec]) -> classic.ClassicAction:
        p = stmt.player
        hand = self.hand
        own = hand.hands.get(p, set())
        simple: dict[str, classic.ClassicAction] = {
            "end": classic.End(p), "draw": classic.Draw(p), "restore": classic.Restore(p),
            "end-session": classic.EndSession(p),
            "silent": classic.Liveness(p, alive=False), "alive": classic.Liveness(p, alive=True),
        }
        if stmt.verb in simple:
            return simple[stmt.verb]
        match stmt.verb:
            case "meld":
                return classic.Meld(p, self.pick(stmt.cards, own))
            case "attach":
                return classic.Attach(p, self.pick(stmt.cards, own)[0], self.meld(stmt.src))
            case "move":
                src = self.meld(stmt.src)
                card = self.pick(stmt.cards, hand.melds[src])[0]
                dst = None if stmt.new else self.meld(stmt.dst)
                return classic.Move(p, card, src, dst)
            case "swap":
                mid = self.meld(stmt.src)
                card = self.pick(stmt.cards[:1], own)[0]
                joker = self.pick(stmt.cards[1:], hand.melds[mid])[0]
                assert isinstance(card, rules.Card)
                assert isinstance(joker, classic.Joker)
                return classic.Swap(p, card, joker, mid)
        raise AssertionError(f"unknown verb {stmt.verb!r}")

    def pick(self, specs: Sequence[Spec], zone: Collection[classic.ClassicCard]
             ) -> tuple[classic.ClassicCard, ...]:
        """Physical cards for `specs` from `zone`: exact cards as written; a bare card the
        lowest copy there that no other card of the statement took, else the lowest copy not
        taken (the engine then refuses it as not being there)."""
        v = self.session.variants
        return pick(specs, zone, lambda s: s.copies(v.decks, max(v.jokers, 1)),
                    lambda s: s.exact())

    def meld(self, ref: Ref | None) -> int:
        assert ref is not None, "the parser requires a meld here"
        hand = self.hand
        if isinstance(ref, NameRef):
            return named_meld(ref, self.names, hand.melds, lambda: show_table(hand))
        if isinstance(ref, CardRef):
            spec = ref.card
            ids = sorted({mid for mid, cards in hand.melds.items()
                          if any(spec.matches(c) for c in cards)})
            if not ids:
                raise ScenarioFailure(f"a meld holding {spec}", f"{spec} is in no meld; table: "
                                      f"{show_table(hand)}")
            if len(ids) > 1:
                raise ScenarioFailure(f"one meld holding {spec}",
                                      f"{len(ids)} melds hold one (ambiguous, use @{spec.text}#n)")
            return ids[0]
        assert isinstance(ref, ListRef)
        return exact_meld(ref, hand.melds, lambda: show_table(hand))
