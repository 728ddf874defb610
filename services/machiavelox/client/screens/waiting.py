"""Waiting for a table: the agorà's queue (waiting time and skill window), a friendly lobby
(its invite code), or a practice table (matchmaking seats two server-side bots at it)."""

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
          "practice": "Practice against two bots"}


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

    async def _wait(self) -> None:
        app = play_app(self)
        gw = app.gateway
        try:
            if self.mode in ("create", "create-long", "practice"):
                self._status("creating the table …")
                self.code = await gw.create_friendly(
                    long_match=self.mode == "create-long",
                    practice_level=app.practice_level if self.mode == "practice" else "")
            if self.code:
                share = ("two bots join with it" if self.mode == "practice"
                         else "give it to two friends: menu 4, then the code")
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
                    app.sit(a.table_id, list(a.player_ids))
                    return
            self._status("[red]the agorà closed the wait without a table: Esc to go back[/]")
        except Refused as err:
            self._status(f"[red]{err}[/] [dim]({err.reason or err.status})[/]  Esc: back")

    def _waiting(self, waited_s: int, window: float) -> None:
        if self.mode == "queue":
            self._status(f"waiting {waited_s} s · skill window ±{window:.1f} "
                         "(it widens as you wait)")
            return
        who = "the two bots" if self.mode == "practice" else "two friends"
        self._status(f"in the lobby, waiting for {who}: {waited_s} s")

    async def action_leave(self) -> None:
        app = play_app(self)
        if self.ticket is not None:
            if self.ticket.ticket_id:
                with contextlib.suppress(Refused):
                    await app.gateway.cancel_ticket(self.ticket.ticket_id)
            self.ticket.cancel()
        app.menu()
