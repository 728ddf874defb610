"""The keys: one table (`client/keys.py`) that the table screen dispatches on, the help panel
shows and docs/play.md lists."""

from __future__ import annotations

from pathlib import Path

from machiavelox.client.keys import BY_KEY, KEYS, LEGEND, help_text
from machiavelox.client.screens import TableScreen

DOC = Path(__file__).resolve().parents[2] / "docs" / "play.md"


def test_every_key_has_its_handler_and_is_in_the_help() -> None:
    """Each key's action exists on the table screen, and the help panel lists it."""
    text = help_text()
    for key in KEYS:
        assert callable(getattr(TableScreen, f"do_{key.name}", None)), key.name
        assert key.text in text, key.name
    assert len(set(BY_KEY)) == len(BY_KEY)


def test_docs_play_lists_every_key_and_colour() -> None:
    """docs/play.md says what each key does and what each colour means, as the client does."""
    doc = DOC.read_text()
    for key in KEYS:
        assert f"| `{key.shown}` | {key.text} |" in doc, key.name
    for shown, means in LEGEND:
        assert f"| {shown} | {means} |" in doc, shown
