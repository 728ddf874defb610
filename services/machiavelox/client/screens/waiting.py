"""Waiting for a table: the agorà's queue (waiting time and skill window), a friendly lobby
(its invite code), or a practice table (matchmaking seats two server-side bots at it); the
same for classic Machiavelli (a friendly classic table with the app's variants, or a classic
practice table: `players - 1` classic bots, docs/classic.md "Practice tables")."""

from __future__ import annotations

import contextlib
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from ..connection import Refused, Ticket, format_code
from .base import play_app

TITLES = {"queue": "Agorà: looking for two opponents of your level",
          "create": "Friendly table (single match)",
          "create-long": "Friendly table (long match, to 150 points)",
          "join": "Joining a friendly table",
          "practice": "Practice against two bots",
          "classic-create": "Friendly classic Machiavelli table",
          "classic-practice": "Practice classic Machiavelli against bots"}
NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
CREATING = ("create", "create-long", "practice", "classic-create", "classic-practice")
PRACTICE = ("practice", "classic-practice")


class WaitScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "leave", "leave", show=False)]

    def __init__(self, mode: str, code: str = "") -> None:
        super().__init__()
        self.mode = mode
        self.code = code
        self.ticket: Ticket | None = None
        self.seated = False

    def compose(self) -> ComposeResult:
        with Vertical(id="wait-box"):
            yield Static(f"[b]{TITLES[self.mode]}[/b]", id="title")
            yield Static("", id="code")
            yield Static("…", id="status")
            yield Static("Esc: leave and go back to the menu", classes="dim")

    def on_mount(self) -> None:
        self.run_worker(self._wait(), exclusive=True)

    def _status(self, text: str) -> None:
        self.query_one("#status", Static).update(text)

    @property
    def classic(self) -> bool:
        return self.mode.startswith("classic-")

    def _others(self, who: str) -> str:
        """Who else takes a seat ("two bots", "one friend"): two at a Machiavelox table,
        players - 1 at a classic one."""
        n = play_app(self).classic_variants.players - 1 if self.classic else 2
        return f"{NUMBERS.get(n, str(n))} {who}{'' if n == 1 else 's'}"

    async def _wait(self) -> None:
        app = play_app(self)
        gw = app.gateway
        practice = self.mode in PRACTICE
        try:
            if self.mode in CREATING:
                self._status("creating the table …")
                self.code = await gw.create_friendly(
                    long_match=self.mode == "create-long",
                    practice_level=app.practice_level if practice else "",
                    classic_variants=app.classic_variants if self.classic else None)
            if self.classic:
                self.query_one("#title", Static).update(
                    f"[b]{TITLES[self.mode]}[/b]\n{app.classic_variants.describe()}")
            if self.code:
                bots = self._others("bot")
                share = (f"{bots} join{'s' if bots.startswith('one ') else ''} with it"
                         if practice
                         else f"give it to {self._others('friend')}: menu 4, then the code")
                self.query_one("#code", Static).update(
                    f"invite code  [b reverse] {format_code(self.code)} [/]   ({share})")
            self.ticket = gw.enqueue() if self.mode == "queue" else gw.join_friendly(self.code)
            async for update in self.ticket.updates():
                kind = update.WhichOneof("kind")
                if kind == "waiting":
                    self._waiting(update.waiting.waited_s, update.waiting.window)
                elif kind == "assignment":
                    self.seated = True
                    self.ticket.cancel()
                    a = update.assignment
                    ruleset = None if self.mode == "join" else \
                        "classic" if self.classic else "machiavelox"
                    app.sit(a.table_id, list(a.player_ids), ruleset)
                    return
            self._status("[red]the agorà closed the wait without a table: Esc to go back[/]")
        except Refused as err:
            self._status(f"[red]{err}[/] [dim]({err.reason or err.status})[/]  Esc: back")

    def _waiting(self, waited_s: int, window: float) -> None:
        if self.mode == "queue":
            self._status(f"waiting {waited_s} s · skill window ±{window:.1f} "
                         "(it widens as you wait)")
            return
        who = f"the {self._others('bot')}" if self.mode in PRACTICE else self._others("friend")
        self._status(f"in the lobby, waiting for {who}: {waited_s} s")

    async def action_leave(self) -> None:
        app = play_app(self)
        if self.ticket is not None:
            if self.ticket.ticket_id:
                with contextlib.suppress(Refused):
                    await app.gateway.cancel_ticket(self.ticket.ticket_id)
            self.ticket.cancel()
        app.menu()
