"""`machiavelox play [--gateway ADDR] [--name NAME] [--practice [--level L]]`: Machiavelox in a
terminal.

Log in, then queue in the agorà, create a friendly table (its invite code to share), join one
by code, or practice against two bots; then play at the table with the keyboard (`?` there
lists every key; docs/play.md). It speaks to the gateway as a mobile app does. A cluster on
this machine: `machiavelox up` in another terminal (its gateway is 127.0.0.1:7000).
"""

from __future__ import annotations

import argparse
import logging
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from machiavelox.bots.levels import BASIC, LEVEL_NAMES

from .connection import Gateway
from .screens import JoinCodeScreen, LoginScreen, MenuScreen, TableScreen, WaitScreen

CSS = """
Screen { layout: vertical; }
#login-box, #menu-box, #join-box, #wait-box { padding: 1 2; height: auto; }
#title { padding-bottom: 1; }
#status { padding: 1 0; }
.dim { color: $text-muted; }
#menu { height: auto; max-height: 10; }
#top, #seats, #inspect, #msg, #hint { height: auto; }
#log { height: 4; color: $text; }
#melds { height: 1fr; border-top: solid $primary-darken-2; }
#mine { height: auto; border-top: solid $primary-darken-2; }
#hint { color: $text-muted; }
HelpScreen, ConfirmScreen { align: center middle; }
#help-box { width: 78; height: 22; border: round $primary; background: $surface; }
#help-scroll { height: 1fr; }
#confirm-box { width: 60; height: auto; border: thick $error; background: $surface;
               padding: 1 2; }
#confirm-keys { padding-top: 1; }
"""


class PlayApp(App[int]):
    """The client: one gateway, one person, the screens in turn."""

    CSS = CSS
    TITLE = "Machiavelox"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "quit", show=False, priority=True)]
    ENABLE_COMMAND_PALETTE = False

    def __init__(self, address: str = "127.0.0.1:7000", player_name: str = "",
                 practice: bool = False, session_options: dict[str, Any] | None = None,
                 practice_level: str = BASIC) -> None:
        super().__init__()
        self.address = address
        self.player_name = player_name
        self.start_practice = practice
        self.practice_level = practice_level  # the practice bots' strength (docs/bots.md)
        self.session_options = session_options or {}
        self._gateway: Gateway | None = None
        self.menu_note = ""

    @property
    def gateway(self) -> Gateway:
        """The channel to the gateway, made in the app's own event loop (gRPC's asyncio
        channels belong to the loop they are made in)."""
        if self._gateway is None:
            self._gateway = Gateway(self.address)
        return self._gateway

    def on_mount(self) -> None:
        assert self.gateway is not None
        self.push_screen(LoginScreen(self.player_name, auto=bool(self.player_name)))

    async def on_unmount(self) -> None:
        if self._gateway is not None:
            await self._gateway.close()

    # ---------------------------------------------------------------- navigation
    def logged_in(self) -> None:
        if self.start_practice:
            self.start_practice = False
            self.switch_screen(WaitScreen("practice"))
            return
        self.menu()

    def menu(self, note: str = "") -> None:
        self.menu_note = note
        self.switch_screen(MenuScreen())

    def choose(self, key: str) -> None:
        if key == "quit":
            self.exit(0)
        elif key == "join":
            self.switch_screen(JoinCodeScreen())
        else:
            self.wait(key)

    def wait(self, mode: str, code: str = "") -> None:
        self.switch_screen(WaitScreen(mode, code))

    def sit(self, table_id: str, players: list[str]) -> None:
        self.switch_screen(TableScreen(table_id, players, self.gateway.player))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="machiavelox play", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gateway", default="127.0.0.1:7000", help="the gateway's address")
    parser.add_argument("--name", default="", help="log in at once with this name")
    parser.add_argument("--practice", action="store_true",
                        help="straight to a practice table against two bots (needs --name)")
    parser.add_argument("--level", choices=LEVEL_NAMES, default=BASIC,
                        help="the practice bots' strength (docs/bots.md); matchmaking seats "
                        "them, server-side")
    args = parser.parse_args(argv)
    if args.practice and not args.name:
        parser.error("--practice needs --name")
    # nothing may write to the terminal under the screen: the bots' and gRPC's logs go nowhere
    logging.getLogger().handlers[:] = [logging.NullHandler()]
    app = PlayApp(args.gateway, args.name, args.practice, practice_level=args.level)
    code = app.run()
    return code if isinstance(code, int) else 0
