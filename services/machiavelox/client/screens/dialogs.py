"""The help panel, the confirmation asked before ABBANDONA (M11.6), and the question of how
many players a classic table seats (C1)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keys import help_text


class HelpScreen(ModalScreen[None]):
    """Every key and what the colours mean (`text`: a table's help, Machiavelox's by
    default); any of Esc, ?, h, q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,h,q,enter", "close", "close", show=False)]

    def __init__(self, text: str = "") -> None:
        super().__init__()
        self.text = text or help_text()

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static("Help — Esc closes", id="help-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(self.text, id="help-text")

    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question: y confirms, n or Esc does not."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "yes", show=False),
                Binding("n,escape", "answer(False)", "no", show=False)]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-text")
            yield Static("y: yes    n / Esc: no", id="confirm-keys")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PlayersScreen(ModalScreen[int | None]):
    """How many players a classic table seats (C1): a digit 2..6, Enter for `default`, Esc
    for none."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(str(n), f"answer({n})", str(n), show=False) for n in range(2, 7)),
        Binding("escape", "answer(0)", "back", show=False)]

    def __init__(self, default: int) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="players-box"):
            yield Static("Classic Machiavelli: how many players at the table?\n(2 to 6, "
                         "C1; 6 play with three decks)", id="players-text")
            yield Static(f"2…6: that many    Enter: {self.default}    Esc: back",
                         id="players-keys")

    def on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            self.dismiss(self.default)

    def action_answer(self, players: int) -> None:
        self.dismiss(players or None)
