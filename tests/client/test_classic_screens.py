"""Classic Machiavelli in the terminal client (issue 16: "the terminal client plays it"),
through Textual's pilot (headless, 80x24) against a real local cluster (`machiavelox up`'s
services as processes, the rules clock 40 times faster): a person plays turns of a classic
practice table against the bot host's classic bots from the keyboard; a classic table is
joined by its invite code (the assignment does not say the ruleset: the first snapshot does);
the menu's classic entries ask for the players and make the tables."""

from __future__ import annotations

import asyncio
import time
from itertools import combinations
from typing import Any

import grpc
import pytest
from textual.pilot import Pilot

from machiavelox import classic
from machiavelox.bots.classic_player import ClassicInviteBot
from machiavelox.client.app import PlayApp
from machiavelox.client.classic_model import ClassicModel
from machiavelox.client.connection import Gateway
from machiavelox.client.keys import CLASSIC_KEYS
from machiavelox.client.screens import ClassicTableScreen, HelpScreen, PlayersScreen, WaitScreen
from machiavelox.client.widgets import LABELS
from machiavelox.local.processes import Proc
from machiavelox.platform import keepalive
from tests.client.on_screen import SIZE, fits, text_of
from tests.client.person import on, until

pytestmark = pytest.mark.timeout(120)
STEP_S = 20.0
TURNS = 12  # the most of the person's turns the practice test plays


def classic_screen(app: PlayApp) -> ClassicTableScreen:
    screen = app.screen
    assert isinstance(screen, ClassicTableScreen), type(screen).__name__
    return screen


class ClassicPerson:
    """A person at the classic table's keyboard: reads the screen's model (hand, melds),
    presses keys, and waits for the server's answer. Its judgement of what is a valid meld
    is the person's own (the engine's `is_valid` stands in for a player who knows the rules);
    the client decides nothing."""

    def __init__(self, pilot: Pilot[Any], app: PlayApp) -> None:
        self.pilot, self.app = pilot, app
        self.screen = classic_screen(app)
        self.model: ClassicModel = self.screen.model

    def labels(self, cards: list[int]) -> list[str]:
        order = self.screen.own_cards()
        return [LABELS[order.index(c)] for c in cards]

    def valid(self, cards: list[int]) -> bool:
        aces = self.model.variants.aces if self.model.variants else classic.Aces.LOW
        return classic.is_valid([classic.card_at(c) for c in cards], aces)

    def meld_of_three(self, valid: bool) -> list[int] | None:
        hand = self.screen.own_cards()[:len(LABELS)]
        for combo in combinations(hand, 3):
            if self.valid(list(combo)) == valid:
                return list(combo)
        return None

    def attachable(self) -> tuple[int, int] | None:
        """(hand card, meld number) of a card that keeps a valid meld valid."""
        for card in self.screen.own_cards()[:len(LABELS)]:
            for i, meld in enumerate(self.model.melds):
                if meld.valid and self.valid([*meld.cards, card]):
                    return card, i + 1
        return None

    async def my_turn(self) -> bool:
        """Wait for the person's turn with a fresh view; False once the session is over."""
        m = self.model
        await until(self.pilot, lambda: m.ended or (m.my_turn and not m.stale), 60,
                    "the person's turn")
        return not m.ended

    async def answered(self, *keys: str) -> str:
        """Press `keys` (the last sends an action): "ack" or "refused", once answered (and,
        for an ack, once the snapshot after its events has come)."""
        m = self.model
        before, refusals = m.snapshots, m.last_refusal
        await self.pilot.press(*keys)
        await until(self.pilot, lambda: not m.sent, STEP_S, f"the answer to {keys}")
        if m.last_refusal is not refusals:
            return "refused"
        await until(self.pilot, lambda: m.snapshots > before and not m.stale, STEP_S,
                    f"the view after {keys}")
        return "ack"


async def test_a_persons_classic_practice_turns_from_the_keyboard(
        cluster: dict[str, Proc]) -> None:
    """`--practice --ruleset classic`: a two-player practice table (the bot host's classic
    bot in the other seat) whose screen fits 80x24 and whose help lists every classic key.
    On the person's turns, from the keyboard: three cards that make no meld put down (g),
    one of them moved into a new meld (Space, n) and back (Space, m), the end of the turn
    refused with the server's message and code (C5: `end/invalid-meld`), the turn given up
    (x: the table as it was, the cards back and a penalty card, C6); a draw (d); a valid meld
    or a card added to one (g or a), then the turn ended (c). Each accepted key passes the turn
    to the bot (the `turn` events). Fails if a key sends nothing, the server refuses what it
    must accept, or a view misses what it must show."""
    variants = classic.Variants(players=2, session=classic.SessionKind.HANDS, session_n=2)
    app = PlayApp(cluster["gateway"].address, "cleo", practice=True, ruleset="classic",
                  classic_variants=variants)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, on(app, "ClassicTableScreen"), STEP_S, "the classic practice table")
        person = ClassicPerson(pilot, app)
        m = person.model
        await until(pilot, lambda: m.snapshots > 0, STEP_S, "the first classic snapshot")
        assert sorted(m.players) == ["cleo", "cleo-bot1"]
        assert m.variants is not None and m.variants.players == 2
        await pilot.pause(0.1)
        fits(app)
        assert "stock" in text_of(app, "#top") and "cleo (you)" in text_of(app, "#seats")
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), STEP_S, "the help")
        helptext = text_of(app, "#help-text")
        assert all(key.text in helptext for key in CLASSIC_KEYS)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is person.screen, STEP_S, "the table again")

        done: list[str] = []
        for _ in range(TURNS):
            if not await person.my_turn():
                break
            if "restore" not in done:
                cards = person.meld_of_three(valid=False)
                assert cards is not None, "13 cards hold three that make no meld"
                assert await person.answered("escape", *person.labels(cards), "g") == "ack"
                mine = str(len(m.melds))
                assert set(cards) == set(m.melds[-1].cards) and not m.melds[-1].kind
                assert await person.answered(*mine, "space", "n") == "ack"
                assert len(m.melds[int(mine) - 1].cards) == 2
                assert await person.answered(*str(len(m.melds)), "space", *mine, "m") == "ack"
                assert len(m.melds[int(mine) - 1].cards) == 3
                assert await person.answered("c") == "refused"
                shown = text_of(app, "#msg")
                assert "[end/invalid-meld]" in shown and "is not a valid meld" in shown, shown
                held = len(m.hand)
                assert await person.answered("x") == "ack"
                assert set(cards) <= set(m.hand) and len(m.hand) == held + 3 + 1, \
                    "the cards back in hand, and one penalty card (C6)"
                done.append("restore")
            elif "draw" not in done:
                held = len(m.hand)
                assert await person.answered("d") == "ack"
                assert len(m.hand) == held + 1
                done.append("draw")
            else:
                cards = person.meld_of_three(valid=True)
                attach = person.attachable() if cards is None else None
                if cards is not None:
                    assert await person.answered("escape", *person.labels(cards), "g") == "ack"
                elif attach is not None:
                    card, number = attach
                    assert await person.answered(
                        "escape", *person.labels([card]), *str(number), "a") == "ack"
                else:
                    assert await person.answered("d") == "ack"
                    continue
                assert await person.answered("c") == "ack"
                done.append("end")
                break
        assert done == ["restore", "draw", "end"], done
        log = [line.text for line in m.log]
        assert any("ended the turn" in t and t.startswith("You") for t in log), log[-8:]
        assert any("gave up the turn" in t for t in log)
        # the turn came back twice (after the restore, after the draw): the bot played between
        # (the first turn may be the person's from the first snapshot, with no `turn` event)
        assert sum(t == "Your turn" for t in log) >= 2, "the bot played between (turns passed)"
        fits(app)


async def test_a_classic_table_joined_by_code_shows_a_refusal(
        cluster: dict[str, Proc]) -> None:
    """A three-player classic table made by someone else is joined by its code (menu 4): the
    assignment looks like a Machiavelox one, the first snapshot is classic, and the classic
    screen takes over. On the person's turn `c` with nothing played is refused and the message
    line shows the server's words and code (C5: `end/nothing-played`); `d` is accepted and the
    turn passes."""
    address = cluster["gateway"].address
    host = Gateway(address)
    await host.login("hana")
    code = await host.create_friendly(classic_variants=classic.Variants(players=3))
    await host.close()
    async with grpc.aio.insecure_channel(address, options=keepalive.CLIENT) as ch:
        bots = [asyncio.create_task(ClassicInviteBot(n, ch, code).run_classic())
                for n in ("hana", "hbot")]
        try:
            app = PlayApp(address, "ivy")
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
                await pilot.press("4")
                await until(pilot, on(app, "JoinCodeScreen"), STEP_S, "the code screen")
                await pilot.press(*code.lower(), "enter")
                await until(pilot, on(app, "ClassicTableScreen"), STEP_S,
                            "the classic table, from its first snapshot")
                person = ClassicPerson(pilot, app)
                m = person.model
                assert sorted(m.players) == ["hana", "hbot", "ivy"]
                assert await person.my_turn()
                assert await person.answered("c") == "refused"
                await pilot.pause(0.1)
                shown = text_of(app, "#msg")
                assert "Refused (end the turn): play at least one card from your hand, or " \
                    "draw (C5) [end/nothing-played]" in shown, shown
                held = len(m.hand)
                assert await person.answered("d") == "ack"
                log = [line.text for line in m.log]
                drew = max(i for i, t in enumerate(log) if t.startswith("You drew "))
                assert len(m.hand) >= held + 1 and "plays" in " ".join(log[drew:]), \
                    f"the turn passed (C5): {log[drew:]}"
                fits(app)
        finally:
            for bot in bots:
                bot.cancel()
            await asyncio.gather(*bots, return_exceptions=True)


async def menu_entry_for(pilot: Pilot[Any], app: PlayApp, entry: str, players: int) -> None:
    """From the menu, the classic `entry` (its key), the players question answered."""
    await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
    await pilot.press(entry)
    await until(pilot, lambda: isinstance(app.screen, PlayersScreen), STEP_S,
                "the players question")
    await pilot.press(str(players))


async def test_the_menus_classic_entries(cluster: dict[str, Proc]) -> None:
    """Menu 7 asks for the players (2-6) and makes a friendly classic table with them: its
    invite code and variants shown; Esc leaves the lobby. Menu 8 asks too and makes a classic
    practice table: four seats, three of them the bot host's classic bots, on a screen that
    fits 80x24 with the four seat lines."""
    app = PlayApp(cluster["gateway"].address, "kim")
    async with app.run_test(size=SIZE) as pilot:
        await menu_entry_for(pilot, app, "7", players=3)
        await until(pilot, lambda: isinstance(app.screen, WaitScreen) and bool(app.screen.code),
                    STEP_S, "the invite code")
        assert "3 players, 2 decks" in text_of(app, "#title")
        assert "give it to two friends" in text_of(app, "#code")
        await pilot.press("escape")
        await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu again")
    app = PlayApp(cluster["gateway"].address, "lea")  # (kim's lobby stays open until expired)
    async with app.run_test(size=SIZE) as pilot:
        await menu_entry_for(pilot, app, "8", players=4)
        try:
            await until(pilot, on(app, "ClassicTableScreen"), STEP_S,
                        "the classic practice table")
        except AssertionError:
            raise AssertionError(f"{type(app.screen).__name__}: {text_of(app, '#status')} "
                                 f"{text_of(app, '#code')}") from None
        m = classic_screen(app).model
        await until(pilot, lambda: m.snapshots > 0, STEP_S, "the first snapshot")
        assert sorted(m.players) == ["lea", "lea-bot1", "lea-bot2", "lea-bot3"]
        assert [s.hand_count for s in m.seats if s.seat != m.me] and len(m.hand) >= 13
        end = time.monotonic() + 1
        while time.monotonic() < end:  # (a few redraws with events coming)
            await pilot.pause(0.1)
        fits(app)
        assert len(text_of(app, "#seats").splitlines()) == 4
