"""What the screens' tests read off the screen of an app run through Textual's pilot at the
terminal size they play in (`SIZE`, 80x24): a part's text by its selector (`text_of`), and
whether the table screen fits (`fits`)."""

from __future__ import annotations

from textual.widgets import Static

from machiavelox.client.app import PlayApp

SIZE = (80, 24)


def text_of(app: PlayApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def fits(app: PlayApp) -> None:
    """Everything of the table screen is inside 80x24 (the hint line on the last row)."""
    hint = app.screen.query_one("#hint", Static).region
    assert hint.bottom <= SIZE[1] and hint.height >= 1, hint
    for widget in app.screen.query(Static):
        assert widget.region.right <= SIZE[0], widget
