"""Running a classic scenario: statements against a live `classic.Session`, virtual clock.

The first `start` creates the session with its variants; every later `start` deals the next
hand once the previous one has ended (`expect phase between`), to the seats still in the
session. Meld names belong to one hand. A refused action fails the scenario unless the next
statement is `expect rejected` (with a word that must appear in the refusal's code or
message).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Collection, Iterable, Sequence
from typing import TextIO

from machiavelox import classic, rules
from machiavelox.rules import RulesError

from ..errors import ScenarioFailure
from ..syntax import At, Expect, ExpectRejected, NameRef, Stmt, Title
from .checks import EventKey, check, same_cards, show_specs, show_table
from .syntax import Act, CardRef, ListRef, Ref, Scenario, Spec, Start


class ClassicRunner:
    def __init__(self, verbose: bool = False, out: TextIO | None = None) -> None:
        self.verbose = verbose
        self.out = out if out is not None else sys.stdout
        self.now_ms = 0
        self._session: classic.Session | None = None
        self._bound: classic.Hand | None = None
        self.names: dict[str, int] = {}
        self.matched: set[EventKey] = set()

    @property
    def session(self) -> classic.Session:
        assert self._session is not None, "the parser guarantees a start before play"
        return self._session

    @property
    def hand(self) -> classic.Hand:
        return self.session.hand

    def run(self, scenario: Scenario) -> None:
        stmts = scenario.statements
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            after = stmts[i + 1] if i + 1 < len(stmts) else None
            try:
                i += 1 + self.execute(stmt, after)
            except ScenarioFailure as f:
                f.line = f.line or stmt.line
                raise
            except Exception as e:  # an engine crash fails this file, never the run
                raise ScenarioFailure(f"engine error: {type(e).__name__}: {e} ({stmt.text})",
                                      line=stmt.line) from e

    def execute(self, stmt: Stmt, after: Stmt | None) -> int:
        if isinstance(stmt, Start):
            for setup in stmt.setup:
                self.trace(setup)
        self.trace(stmt)
        match stmt:
            case Title():
                return 0
            case Start():
                self.start(stmt)
                return 0
            case At():
                self.advance(stmt)
                return 0
            case Act():
                return self.act(stmt, after if isinstance(after, ExpectRejected) else None)
            case ExpectRejected():
                raise AssertionError("the parser puts `expect rejected` after an action")
            case Expect():
                check(self.session, stmt, self.matched)
                return 0
        raise AssertionError(f"unknown statement {stmt!r}")

    # ------------------------------------------------------------------ statements
    def start(self, stmt: Start) -> None:
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

    def advance(self, stmt: At) -> None:
        target = self.now_ms + stmt.ms if stmt.relative else stmt.ms
        if target < self.now_ms:
            raise ScenarioFailure(f"a time from {self.now_ms / 1000:g} s on (time never goes "
                                  f"backwards)", f"at {target / 1000:g}")
        self.trace_events(self.session.advance(target))
        self.now_ms = target

    def act(self, stmt: Act, rejected: ExpectRejected | None) -> int:
        # timers due by now fire first, whether the action is then accepted or not
        self.trace_events(self.session.advance(self.now_ms))
        action = self.action(stmt)
        try:
            events = self.session.apply(action, self.now_ms)
        except RulesError as e:
            reason = f"{e.code}: {e.message}"
            self.trace_line(f"refused {reason}")
            if rejected is None:
                raise ScenarioFailure(f"{stmt.text} to be accepted", f"refused {reason}") from e
            self.trace(rejected)
            word = rejected.word
            if word is not None and word.lower() not in f"{e.code} {e.message}".lower():
                raise ScenarioFailure(f"a refusal mentioning {word!r}", f"refused {reason}",
                                      line=rejected.line) from e
            return 1
        self.trace_events(events)
        if rejected is not None:
            raise ScenarioFailure(f"{stmt.text} to be refused", "it was accepted",
                                  line=rejected.line)
        if stmt.name is not None:
            self.bind(stmt, events)
        return 0

    def bind(self, stmt: Act, events: list[classic.ClassicEvent]) -> None:
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
    def action(self, stmt: Act) -> classic.ClassicAction:
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
        taken: set[classic.ClassicCard] = {s.exact() for s in specs if s.copy is not None}
        out: list[classic.ClassicCard] = []
        for spec in specs:
            if spec.copy is not None:
                out.append(spec.exact())
                continue
            free = [c for c in spec.copies(v.decks, max(v.jokers, 1)) if c not in taken]
            present = [c for c in free if c in zone]
            chosen = (present or free or [spec.exact()])[0]
            taken.add(chosen)
            out.append(chosen)
        return tuple(out)

    def meld(self, ref: Ref | None) -> int:
        assert ref is not None, "the parser requires a meld here"
        hand = self.hand
        if isinstance(ref, NameRef):
            mid = self.names.get(ref.name)
            if mid is None:
                raise ScenarioFailure(f"a meld named {ref.name}",
                                      f"no meld was bound to {ref.name} (was its action "
                                      "refused?)")
            if mid not in hand.melds:
                raise ScenarioFailure(f"meld {ref.name} on the table",
                                      f"it is gone; table: {show_table(hand)}")
            return mid
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
        ids = [mid for mid, cards in hand.melds.items() if same_cards(ref.cards, cards)]
        if not ids:
            raise ScenarioFailure(f"a meld [{show_specs(ref.cards)}]",
                                  f"none; table: {show_table(hand)}")
        if len(ids) > 1:
            raise ScenarioFailure(f"one meld [{show_specs(ref.cards)}]",
                                  f"{len(ids)} identical melds (ambiguous, use @CARD#n)")
        return ids[0]

    # ------------------------------------------------------------------ --verbose
    def trace(self, stmt: Stmt) -> None:
        if self.verbose:
            print(f"{stmt.line:5}: {stmt.text}", file=self.out)

    def trace_events(self, events: Iterable[classic.ClassicEvent]) -> None:
        for ev in events:
            self.trace_line(str(ev))

    def trace_line(self, text: str) -> None:
        if self.verbose:
            print(f"         {text}", file=self.out)
