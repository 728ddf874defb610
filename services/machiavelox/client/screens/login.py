"""Log in: a name, then the development Login through the gateway (docs/protocol.md)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

from ..connection import Refused
from .base import play_app

TITLE = """[b]Machiavelox[/b]
three players, no turns: the fastest wins the card"""


class LoginScreen(Screen[None]):
    def __init__(self, player_name: str = "", auto: bool = False) -> None:
        super().__init__()
        self.player_name = player_name
        self.auto = auto

    def compose(self) -> ComposeResult:
        with Vertical(id="login-box"):
            yield Static(TITLE, id="title")
            yield Static("Your name (1-32 letters, digits, _ or -), then Enter:")
            yield Input(value=self.player_name, placeholder="name", id="name", max_length=32)
            yield Static("", id="status")
            yield Static(f"gateway {play_app(self).address}   Ctrl+Q quits", classes="dim")

    def on_mount(self) -> None:
        if self.auto and self.player_name:
            self._login(self.player_name)
        else:
            self.query_one("#name", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._login(event.value.strip())

    def _login(self, name: str) -> None:
        if not name:
            self.query_one("#status", Static).update("[yellow]type a name first[/]")
            return
        self.run_worker(self._do_login(name), exclusive=True)

    async def _do_login(self, name: str) -> None:
        status = self.query_one("#status", Static)
        status.update(f"logging in as {name} …")
        try:
            await play_app(self).gateway.login(name)
        except Refused as err:
            status.update(f"[red]{err}[/]")
            return
        play_app(self).logged_in()
