"""A scripted person at the client's keyboard (Textual's pilot): reads the table screen the way
a person reads it (the screen's model: hand, pozzetto, melds) and presses keys. Its judgement of
what is regular is the person's own (the rules engine's `is_regular` stands in for a player who
knows the rules); the client decides nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from textual.pilot import Pilot

from machiavelox import rules
from machiavelox.client.app import PlayApp
from machiavelox.client.model import TableModel
from machiavelox.client.screens import TableScreen
from machiavelox.client.widgets import LABELS, my_cards

ANSWER_S = 20.0  # the longest an action's answer and a fresh view may take


async def until(pilot: Pilot[Any], found: Callable[[], bool], timeout_s: float,
                what: str) -> None:
    """Let the app run until `found()` (bounded in time)."""
    end = time.monotonic() + timeout_s
    while not found():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.05)


def on(app: PlayApp, screen: str) -> Callable[[], bool]:
    return lambda: type(app.screen).__name__ == screen


def table_screen(app: PlayApp) -> TableScreen:
    screen = app.screen
    assert isinstance(screen, TableScreen), type(screen).__name__
    return screen


def _card(i: int) -> rules.Card:
    return rules.card_at(i)


def regular(cards: list[int]) -> bool:
    return rules.is_regular([_card(i) for i in cards])


def triple(hand: list[int]) -> list[int] | None:
    if len(hand) > 16:
        hand = hand[:16]
    for combo in combinations(hand, 3):
        if regular(list(combo)):
            return list(combo)
    return None


@dataclass
class Person:
    """What the person did: the keys of each decision, and what the log told them."""

    pilot: Pilot[Any]
    app: PlayApp
    decisions: list[str] = field(default_factory=list)

    @property
    def screen(self) -> TableScreen:
        return table_screen(self.app)

    @property
    def model(self) -> TableModel:
        return self.screen.model

    def labels_order(self) -> list[int]:
        """Own cards in the order of their labels (A, B, ...)."""
        return my_cards(self.model, self.screen.cursor)

    def labels(self, cards: list[int]) -> list[str]:
        mine = my_cards(self.model, self.screen.cursor)
        return [LABELS[mine.index(c)] for c in cards]

    def can_close(self) -> bool:
        mine = [line.text for line in self.model.log if line.kind == "mine"]
        return any("drew" in t for t in mine) and any("giocata diretta" in t for t in mine)

    def decide(self) -> list[str] | None:
        """The next keys to press, or None to wait."""
        m = self.model
        me = m.mine
        if me is None or me.out or m.phase not in ("playing", "tiebreak") or m.ended:
            return None
        if m.phase == "tiebreak" and not m.in_tiebreak:
            return None
        pozz = list(m.pozzetto)
        if m.phase == "tiebreak":
            return self.tiebreak(pozz)
        if pozz:
            return ["g"] if len(pozz) >= 3 and regular(pozz) else ["u"]
        if me.calata_open:
            return ["c"]
        hand = list(m.hand)
        found = triple(hand)
        if found is not None and len(self.labels(found)) == 3 and \
                all(LABELS.index(x) < len(LABELS) for x in self.labels(found)):
            return ["escape", *self.labels(found), "p"]
        if len(hand) > 1 or self.can_close():
            for card in hand:
                for i, meld in enumerate(m.melds):
                    cards = [tc.card for tc in meld.cards]
                    if meld.provisional or not meld.regular or \
                            any(tc.held_by is not None or tc.status == "trial"
                                for tc in meld.cards):
                        continue
                    if regular([*cards, card]):
                        return ["escape", *self.labels([card]), *str(i + 1), "a"]
        if me.tallone > 0:
            return ["d"]
        return None

    def tiebreak(self, common: list[int]) -> list[str] | None:
        """M10.2: the first to put a card of the common pozzetto in a regular meld wins."""
        found = triple(common)
        if found is not None:
            return ["escape", *self.labels(found), "g"]
        for card in common:
            for i, meld in enumerate(self.model.melds):
                if meld.regular and regular([*(tc.card for tc in meld.cards), card]):
                    return ["escape", *self.labels([card]), *str(i + 1), "l"]
        return None

    async def act(self, keys: list[str]) -> None:
        before = self.model.snapshots
        await self.pilot.press(*keys)
        self.decisions.append(" ".join(keys))
        # (or the smazzata ends meanwhile: a bot closed first, and after the end no fresh
        # view follows the refusal)
        try:
            await until(self.pilot, lambda: self.model.ended or (
                not self.model.sent and self.model.snapshots > before), ANSWER_S,
                f"the answer to {keys}")
        except AssertionError as err:  # what the client knew then, for the report
            m = self.model
            raise AssertionError(f"{err}: phase {m.phase}, sent {list(m.sent)}, snapshots "
                                 f"{m.snapshots} (before {before}), last lines "
                                 f"{[line.text for line in m.log[-5:]]}") from None

    async def play_to_the_end(self, limit_s: float = 150.0, on_step: Callable[[int], Any]
                              | None = None, stop: Callable[[], bool] | None = None) -> None:
        """Play until the smazzata ends (or `stop()`), bounded in time and steps."""
        end = time.monotonic() + limit_s
        for step in range(2_000):
            if self.model.ended or (stop is not None and stop()):
                return
            assert time.monotonic() < end, f"the smazzata did not end in {limit_s} s"
            keys = self.decide()
            if keys is None:
                await self.pilot.pause(0.2)
                continue
            await self.act(keys)
            if on_step is not None:
                await on_step(step)
            await asyncio.sleep(0)
        raise AssertionError("too many steps")
