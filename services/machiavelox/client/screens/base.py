"""What every screen of the client shares: the app it belongs to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.dom import DOMNode

if TYPE_CHECKING:
    from ..app import PlayApp


def play_app(node: DOMNode) -> PlayApp:
    from ..app import PlayApp

    app = node.app
    assert isinstance(app, PlayApp), "the client's screens run in its PlayApp"
    return app
