"""The client's screens and keys through Textual's pilot (headless, 80x24) against a real local
cluster (`machiavelox up`'s services, started by machiavelox.local.processes): the login, the
menu, the agorà's queue, friendly tables by invite code, practice against two bots, and a
person's whole smazzata at the table with the keyboard (issue 15 item 1)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import grpc
import pytest
from textual.widgets import Input

from machiavelox.bots.invite import InviteBot
from machiavelox.bots.player import Bot
from machiavelox.client.app import PlayApp
from machiavelox.client.connection import Gateway
from machiavelox.client.keys import KEYS
from machiavelox.client.screens import ConfirmScreen, HelpScreen, WaitScreen
from machiavelox.local.processes import Proc
from machiavelox.platform import keepalive
from tests.client.on_screen import SIZE, fits, text_of
from tests.client.person import Person, on, table_screen, until

pytestmark = pytest.mark.timeout(240)
STEP_S = 20.0
BOT_INTERVAL_S = 0.25  # the practice tables' basic bots (read by conftest's `cluster`)
# Every table's first deal (read by conftest's `cluster`): the flows below do not depend on the
# cards, but a smazzata's length does: from random deals the two whole-smazzata tests took 20 to
# 110 s each (CI's time swung by 3 minutes); with this deal, 19 to 25 s in 5 runs (seeds 1 to
# 12 tried: 8 is the shortest; the asserted steps, a draw and the result among them, all happen).
DEAL_SEED = 8


async def test_a_persons_smazzata_against_two_bots_to_its_end(
        cluster: dict[str, Proc]) -> None:
    """Practice: the person's friendly table gets its invite code, two bots join it with it,
    and the person plays the smazzata to its end from the keyboard (draws, declarations,
    direct melds, attachments, conclusions); the result is shown and Enter goes back to the
    menu. Fails if any step of the flow, a key, or the end of the smazzata is missing."""
    app = PlayApp(cluster["gateway"].address, "pia", practice=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, on(app, "TableScreen"), STEP_S, "the practice table")
        screen = table_screen(app)
        await until(pilot, lambda: screen.model.snapshots > 0, STEP_S, "the first snapshot")
        names = sorted(s.name for s in screen.model.seats)
        assert names == ["pia", "pia-bot1", "pia-bot2"], names
        fits(app)
        person = Person(pilot, app)
        await person.play_to_the_end(limit_s=180)
        await until(pilot, lambda: screen.model.result is not None, STEP_S, "the result")
        await pilot.pause(0.1)
        assert "Points:" in text_of(app, "#msg")
        assert any(d == "d" for d in person.decisions)
        acked = [line for line in screen.model.log if line.kind == "mine"]
        assert any("drew" in line.text for line in acked)
        assert any("your arrival #" in line.text for line in acked), "arrival indexes shown"
        fits(app)
        await pilot.press("enter")
        await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")


async def test_login_queue_help_refusal_and_abbandona(cluster: dict[str, Proc]) -> None:
    """The login screen takes a typed name; the agorà's queue shows the waiting time and the
    skill window, and seats the person with two queueing bots; at the table `?` opens the help
    (every key listed), a refused action shows the server's human message, and ABBANDONA asks
    first: `n` keeps the seat, `y` abandons (M11.6)."""
    address = cluster["gateway"].address
    app = PlayApp(address)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, on(app, "LoginScreen"), STEP_S, "the login screen")
        app.screen.query_one("#name", Input).value = ""
        await pilot.press(*"quinn", "enter")
        await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
        await pilot.press("1")
        await until(pilot, on(app, "WaitScreen"), STEP_S, "the queue")
        await until(pilot, lambda: "skill window" in text_of(app, "#status"), STEP_S,
                    "the waiting time and window")
        assert re.search(r"waiting \d+ s · skill window ±\d+\.\d", text_of(app, "#status"))
        async with grpc.aio.insecure_channel(address, options=keepalive.CLIENT) as ch:
            bots = [asyncio.create_task(Bot(name, ch, ch, interval_s=0.5).run())
                    for name in ("qbot1", "qbot2")]
            try:
                await until(pilot, on(app, "TableScreen"), 60, "a table from the agorà")
                screen = table_screen(app)
                await until(pilot, lambda: screen.model.snapshots > 0, STEP_S, "the snapshot")
                await pilot.press("question_mark")
                await until(pilot, lambda: isinstance(app.screen, HelpScreen), STEP_S, "help")
                helptext = text_of(app, "#help-text")
                assert all(key.text in helptext for key in KEYS)
                await pilot.press("escape")
                await until(pilot, lambda: app.screen is screen, STEP_S, "the table again")
                await pilot.press("c")  # conclude with no calata open: refused
                await until(pilot, lambda: "no open calata" in text_of(app, "#msg"), STEP_S,
                            "the refusal's message")
                assert any(line.kind == "refusal" for line in screen.model.log)
                await pilot.press("q")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), STEP_S,
                            "the confirmation")
                await pilot.press("n")
                await until(pilot, lambda: app.screen is screen, STEP_S, "back at the table")
                assert screen.model.mine is not None and not screen.model.mine.out
                await pilot.press("q")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), STEP_S,
                            "the confirmation")
                await pilot.press("y")
                await until(pilot, lambda: screen.model.mine is not None
                            and screen.model.mine.status == "abandoned", STEP_S, "abandoned")
                assert "ABANDONED" in text_of(app, "#seats")
                await pilot.press("enter")
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
            finally:
                for bot in bots:
                    bot.cancel()
                await asyncio.gather(*bots, return_exceptions=True)


async def test_a_friendly_table_by_invite_code_both_ways(cluster: dict[str, Proc]) -> None:
    """Menu 2 creates a friendly table and shows its invite code (two groups of five); two
    players joining with that code seat everyone. Menu 4 joins a table someone else created,
    with the code typed in lower case with a space: the same table for the three."""
    address = cluster["gateway"].address
    async with grpc.aio.insecure_channel(address, options=keepalive.CLIENT) as ch:
        tasks: list[asyncio.Task[Any]] = []
        try:
            app = PlayApp(address, "rita")
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
                await pilot.press("2")
                await until(pilot, lambda: isinstance(app.screen, WaitScreen)
                            and bool(app.screen.code), STEP_S, "the invite code")
                wait = app.screen
                assert isinstance(wait, WaitScreen)
                shown = text_of(app, "#code")
                code = wait.code
                assert f"{code[:5]}-{code[5:]}" in shown
                tasks += [asyncio.create_task(InviteBot(n, ch, code, 0.5).run())
                          for n in ("rbot1", "rbot2")]
                await until(pilot, on(app, "TableScreen"), STEP_S, "the friendly table")
                players = table_screen(app).model.players
                assert sorted(players) == ["rbot1", "rbot2", "rita"]

            host = Gateway(address)
            await host.login("sam")
            code = await host.create_friendly()
            tasks += [asyncio.create_task(InviteBot(n, ch, code, 0.5).run())
                      for n in ("sam", "sbot")]
            app = PlayApp(address, "tess")
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
                await pilot.press("4")
                await until(pilot, on(app, "JoinCodeScreen"), STEP_S, "the code screen")
                await pilot.press(*code[:5].lower(), "space", *code[5:].lower(), "enter")
                await until(pilot, on(app, "TableScreen"), STEP_S, "the table joined by code")
                assert set(table_screen(app).model.players) == {"sam", "sbot", "tess"}
            await host.close()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_long_match_pause_ready_and_leave(cluster: dict[str, Proc]) -> None:
    """Menu 3: a friendly long match. After the first smazzata the pause shows its keys; `k`
    says ready (M13.4) and `e` leaves the match, which ends it at once (M13.5)."""
    address = cluster["gateway"].address
    async with grpc.aio.insecure_channel(address, options=keepalive.CLIENT) as ch:
        tasks: list[asyncio.Task[Any]] = []
        try:
            app = PlayApp(address, "vera")
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
                await pilot.press("3")
                await until(pilot, lambda: isinstance(app.screen, WaitScreen)
                            and bool(app.screen.code), STEP_S, "the invite code")
                wait = app.screen
                assert isinstance(wait, WaitScreen)
                tasks += [asyncio.create_task(InviteBot(n, ch, wait.code, 0.25).run())
                          for n in ("vbot1", "vbot2")]
                await until(pilot, on(app, "TableScreen"), STEP_S, "the long match's table")
                screen = table_screen(app)
                m = screen.model
                await until(pilot, lambda: m.snapshots > 0, STEP_S, "the first snapshot")
                person = Person(pilot, app)
                await person.play_to_the_end(limit_s=180, stop=lambda: m.phase == "pause")
                assert m.phase == "pause", "a smazzata scores less than 150: a pause follows"
                # (the hint line is redrawn on the next refresh after the model's change)
                await until(pilot, lambda: "k ready" in text_of(app, "#hint"), STEP_S,
                            "the pause's keys in the hint")
                await pilot.press("k", "e")
                await until(pilot, lambda: m.ended, STEP_S, "the match's end")
                log = "\n".join(line.text for line in m.log)
                assert "You are ready" in log and "You left the match" in log
                await pilot.press("enter")
                await until(pilot, on(app, "MenuScreen"), STEP_S, "the menu")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
