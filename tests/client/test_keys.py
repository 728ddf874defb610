"""The keys: one table per game (`client/keys.py`: Machiavelox's `KEYS`, classic
Machiavelli's `CLASSIC_KEYS`) that its table screen dispatches on, the help panel shows and
docs/play.md lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from machiavelox.client.keys import (
    BY_KEY,
    CLASSIC_BY_KEY,
    CLASSIC_KEYS,
    CLASSIC_LEGEND,
    KEYS,
    LEGEND,
    Key,
    classic_help_text,
    help_text,
)
from machiavelox.client.screens import ClassicTableScreen, TableScreen
from machiavelox.client.screens.board import BoardScreen

DOC = Path(__file__).resolve().parents[2] / "docs" / "play.md"
GAMES: tuple[tuple[tuple[Key, ...], dict[str, str], type[BoardScreen[Any, Any, Any]], str], ...] = (
    (KEYS, BY_KEY, TableScreen, help_text()),
    (CLASSIC_KEYS, CLASSIC_BY_KEY, ClassicTableScreen, classic_help_text()))


def test_every_key_has_its_handler_and_is_in_the_help() -> None:
    """Each key's action exists on its game's table screen, the screen dispatches on that
    game's table, and its help panel lists it; no Textual key means two things."""
    for keys, by_key, screen, text in GAMES:
        assert screen.KEY_NAMES is by_key and text == screen.HELP
        for key in keys:
            assert callable(getattr(screen, f"do_{key.name}", None)), key.name
            assert key.text in text, key.name
        named = [k for key in keys for k in key.keys if "…" not in k]
        assert len(set(named)) == len(named) == len(by_key)


def test_docs_play_lists_every_key_and_colour() -> None:
    """docs/play.md says what each key does (both games) and what each colour and mark
    means, as the client does."""
    doc = DOC.read_text()
    for key in (*KEYS, *CLASSIC_KEYS):
        assert f"| `{key.shown}` | {key.text} |" in doc, key.name
    for shown, means in (*LEGEND, *CLASSIC_LEGEND):
        assert f"| {shown} | {means} |" in doc, shown
