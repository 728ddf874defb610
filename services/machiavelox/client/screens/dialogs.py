"""The help panel and the confirmation asked before ABBANDONA (M11.6)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..keys import help_text


class HelpScreen(ModalScreen[None]):
    """Every key and what the colours mean; any of Esc, ?, h, q closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,h,q,enter", "close", "close", show=False)]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static("Help — Esc closes", id="help-title")
            with VerticalScroll(id="help-scroll"):
                yield Static(help_text(), id="help-text")

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
