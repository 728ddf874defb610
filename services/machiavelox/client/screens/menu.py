"""The menu after login, and the screen that asks for an invite code (of either game's table)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..connection import format_code, normalize_code
from .base import play_app

# (the Machiavelox entries keep their numbers 1-6; classic Machiavelli's follow)
ENTRIES = (
    ("queue", "Agorà: queue for a competitive match"),
    ("create", "Create a friendly table (single match)"),
    ("create-long", "Create a friendly table (long match, to 150 points)"),
    ("join", "Join a friendly table by its code (either game)"),
    ("practice", "Practice against two bots"),
    ("quit", "Quit"),
    ("classic-create", "Create a friendly classic Machiavelli table"),
    ("classic-practice", "Practice classic Machiavelli against bots"),
)


class MenuScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(str(i + 1), f"choose('{key}')", text, show=False)
        for i, (key, text) in enumerate(ENTRIES)]

    def compose(self) -> ComposeResult:
        app = play_app(self)
        with Vertical(id="menu-box"):
            yield Static(f"[b]Machiavelox[/b] — welcome, [b]{app.gateway.player}[/b]",
                         id="title")
            yield OptionList(*(Option(f"{i + 1}. {text}", id=key)
                               for i, (key, text) in enumerate(ENTRIES)), id="menu")
            yield Static(app.menu_note, id="status")
            yield Static("↑/↓ and Enter, or the entry's number.  ? at the table: help",
                         classes="dim")

    def on_mount(self) -> None:
        self.query_one("#menu", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.action_choose(event.option.id)

    def action_choose(self, key: str) -> None:
        play_app(self).choose(key)


class JoinCodeScreen(Screen[None]):
    """Type the code two friends were given (any case, with or without the hyphen)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "back", "back", show=False)]

    def compose(self) -> ComposeResult:
        with Vertical(id="join-box"):
            yield Static("[b]Join a friendly table[/b]", id="title")
            yield Static("The invite code (10 characters, e.g. ABCDE-FGHJK), then Enter:")
            yield Input(placeholder="ABCDE-FGHJK", id="code", max_length=16)
            yield Static("", id="status")
            yield Static("Esc: back to the menu", classes="dim")

    def on_mount(self) -> None:
        self.query_one("#code", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        code = normalize_code(event.value)
        if len(code) != 10:
            self.query_one("#status", Static).update(
                f"[yellow]{format_code(code) or 'that'} is not a code: 10 letters and digits[/]")
            return
        play_app(self).wait("join", code)

    def action_back(self) -> None:
        play_app(self).menu()
