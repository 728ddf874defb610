"""Every action of the rules from the keyboard, through Textual's pilot (headless, 80x24),
against a real local cluster whose rules clock runs at twice the real pace (a calata's 40 s
are 20 s: room for a person's several keys)."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest

from machiavelox.client.app import PlayApp
from machiavelox.local.processes import Proc
from tests.client.on_screen import SIZE, text_of
from tests.client.person import Person, on, regular, table_screen, until

pytestmark = pytest.mark.timeout(240)
TIME_SCALE = 2.0
BOT_INTERVAL_S = 3600.0  # the practice bots never act (read by conftest's `cluster`)
STEP_S = 20.0


async def _answered(pilot: Any, app: PlayApp, *keys: str) -> None:
    """Press `keys`, then wait until every action they sent is answered and a snapshot with
    its outcome has come."""
    screen = table_screen(app)
    before = screen.model.snapshots
    await pilot.press(*keys)
    await until(pilot, lambda: not screen.model.sent and screen.model.snapshots > before,
                STEP_S, f"the answer to {keys}")


def _log(app: PlayApp) -> str:
    return "\n".join(line.text for line in table_screen(app).model.log)


async def test_every_action_from_the_keyboard(cluster: dict[str, Proc]) -> None:
    """At a practice table whose two bots never act, the person plays the rulebook's verbs by
    keys and the server accepts them: draw (d) to the last card, declare (p) and a giocata
    diretta (g), a card taken (t), let go (r), taken and put into a new meld (n), ANNULLA (x)
    undoing it all, a card selected with the arrows and Space, a table card picked (Space)
    and moved (m), placed from the pozzetto (l) or taken
    back (u), attached from the hand (a), Stop! (s) and giving it up (y); a refused one shows
    the server's message. Fails if a key sends nothing or the wrong action."""
    app = PlayApp(cluster["gateway"].address, "uma", practice=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, on(app, "TableScreen"), STEP_S, "the practice table")
        screen = table_screen(app)
        m = screen.model
        await until(pilot, lambda: m.snapshots > 0, STEP_S, "the first snapshot")
        me = m.mine
        assert me is not None
        for _ in range(40):  # every card of the tallone (forced draws take some too)
            if me.tallone == 0:
                break
            await _answered(pilot, app, "d")
        assert me.tallone == 0 and len(m.hand) >= 30
        person = Person(pilot, app)
        found = None
        for combo in combinations(person.labels_order()[:26], 3):
            if regular(list(combo)):
                found = list(combo)
                break
        assert found is not None, "34 cards hold a meld of three"
        await _answered(pilot, app, "escape", *person.labels(found), "p")
        assert sorted(m.pozzetto) == sorted(found)
        await _answered(pilot, app, "g")
        assert len(m.melds) == 1 and not m.pozzetto
        await until(pilot, lambda: not me.calata_open, STEP_S, "the calata concluded")
        assert "giocata diretta" in _log(app)

        def labelled() -> list[int]:
            return [c for c in person.labels_order()[:26] if c in m.hand]

        def fitting() -> list[int]:
            meld = [tc.card for tc in m.melds[0].cards]
            return [c for c in labelled() if regular([*meld, c])]

        # declare one card; take a table card, let it go, take it again, into a new meld;
        # then ANNULLA: everything back (M5.5.6)
        fits = fitting()
        spare = next(c for c in labelled() if c not in fits)
        await _answered(pilot, app, "escape", *person.labels([spare]), "p")
        await _answered(pilot, app, "1", "t")
        assert me.holding is not None and "took" in _log(app)
        await _answered(pilot, app, "r")
        assert me.holding is None and "let go of" in _log(app)
        await _answered(pilot, app, "t")
        await _answered(pilot, app, "n")
        assert len(m.melds) == 2 and "to a new meld" in _log(app)
        await _answered(pilot, app, "x")
        assert "ANNULLA" in _log(app)
        assert len(m.melds) == 1 and spare in m.hand and not m.pozzetto

        # select with the arrows and Space this time; pick a table card with Space and move
        # it to its own meld: refused, with the message; then take the declared card back
        # (u): no own card placed, the calata is void
        await pilot.press("escape")
        if screen.cursor.area != "hand":
            await pilot.press("tab")
        steps = person.labels_order().index(spare) - screen.cursor.mine
        await pilot.press(*(["right"] * steps if steps > 0 else ["left"] * -steps), "space")
        assert screen.cursor.selected == {spare}
        await _answered(pilot, app, "p")
        await pilot.press("1", "space")
        assert screen.cursor.picked is not None
        await _answered(pilot, app, "m")
        assert "same meld" in text_of(app, "#msg"), text_of(app, "#msg")
        await _answered(pilot, app, "escape", "u")
        assert spare in m.hand and not m.pozzetto and "back from the pozzetto" in _log(app)
        await until(pilot, lambda: not me.calata_open, STEP_S, "no calata open")

        # place a declared card on the meld (l), attach one from the hand (a), when the deal
        # gave cards that fit
        if fits:
            await _answered(pilot, app, "escape", *person.labels(fits[:1]), "p")
            await _answered(pilot, app, "1", "l")
            assert "placed" in _log(app)
            await until(pilot, lambda: not me.calata_open, STEP_S, "the place confirmed")
        fits = fitting()
        if fits:
            await _answered(pilot, app, "escape", *person.labels(fits[:1]), "1", "a")
            assert "attached" in _log(app)
            await until(pilot, lambda: not me.calata_open, STEP_S, "the attach confirmed")

        await _answered(pilot, app, "s")
        assert m.phase == "frozen" and "said Stop!" in _log(app)
        await _answered(pilot, app, "y")
        await until(pilot, lambda: me.status == "eliminated", STEP_S, "eliminated")
        assert "ELIMINATED" in text_of(app, "#seats")
        refusals = [line for line in m.log if line.kind in ("refusal", "race")]
        assert len(refusals) == 1, [line.text for line in refusals]  # the move to the same meld
        await pilot.press("enter")
        await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
