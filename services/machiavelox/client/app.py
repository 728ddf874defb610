"""`machiavelox play [--gateway ADDR] [--name NAME] [--practice [--level L]] [--ruleset R
[--players N]]`: Machiavelox, or classic Machiavelli, in a terminal.

Log in, then queue in the agorà, create a friendly table (its invite code to share), join one
by code, or practice against two bots; or create a friendly classic Machiavelli table, or
practice classic against bots; then play at the table with the keyboard (`?` there lists
every key; docs/play.md). It speaks to the gateway as a mobile app does. A cluster on this
machine: `machiavelox up` in another terminal (its gateway is 127.0.0.1:7000).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from machiavelox import classic
from machiavelox.bots.levels import BASIC, LEVEL_NAMES

from .connection import Gateway
from .screens import (
    ClassicTableScreen,
    JoinCodeScreen,
    LoginScreen,
    MenuScreen,
    PlayersScreen,
    TableScreen,
    WaitScreen,
)

CLASSIC_PLAYERS = 4  # docs/classic.md, "Variants": the default table


def classic_table(players: int, base: classic.Variants | None = None) -> classic.Variants:
    """The variants of a classic table of `players` (C1: 5 or 6 may play with three decks, 6
    must; two otherwise), the others docs/classic.md's defaults (or `base`'s)."""
    decks = 3 if players == 6 or (players == 5 and base is not None and base.decks == 3) else 2
    return dataclasses.replace(base or classic.Variants(), players=players, decks=decks)

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
HelpScreen, ConfirmScreen, PlayersScreen { align: center middle; }
#help-box { width: 78; height: 22; border: round $primary; background: $surface; }
#help-scroll { height: 1fr; }
#confirm-box { width: 60; height: auto; border: thick $error; background: $surface;
               padding: 1 2; }
#confirm-keys, #players-keys { padding-top: 1; }
#players-box { width: 60; height: auto; border: round $primary; background: $surface;
               padding: 1 2; }
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
                 practice_level: str = BASIC, ruleset: str = "machiavelox",
                 classic_variants: classic.Variants | None = None) -> None:
        super().__init__()
        self.address = address
        self.player_name = player_name
        self.start_practice = practice
        self.practice_level = practice_level  # the practice bots' strength (docs/bots.md)
        self.ruleset = ruleset  # of `--practice`: machiavelox or classic
        # the classic tables this client creates (the menu asks for the players)
        self.classic_variants = classic_variants or classic_table(CLASSIC_PLAYERS)
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
            mode = "classic-practice" if self.ruleset == "classic" else "practice"
            self.switch_screen(WaitScreen(mode))
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
        elif key.startswith("classic-"):
            def chosen(players: int | None) -> None:
                if players:
                    self.classic_variants = classic_table(players, self.classic_variants)
                    self.wait(key)

            self.push_screen(PlayersScreen(self.classic_variants.players), chosen)
        else:
            self.wait(key)

    def wait(self, mode: str, code: str = "") -> None:
        self.switch_screen(WaitScreen(mode, code))

    def sit(self, table_id: str, players: list[str], ruleset: str | None = None) -> None:
        """To the table: `ruleset` is known when this client made the table; joined by code
        it is not (an assignment does not say it): a table of other than three seats is
        classic (C1 vs M1.5), one of three is opened as Machiavelox's, whose screen hands it
        over to the classic one if its first snapshot is classic."""
        if ruleset is None and len(players) != 3:
            ruleset = "classic"
        screen = ClassicTableScreen if ruleset == "classic" else TableScreen
        self.switch_screen(screen(table_id, players, self.gateway.player))


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
    parser.add_argument("--ruleset", choices=("machiavelox", "classic"), default="machiavelox",
                        help="with --practice: the game (classic: classic Machiavelli, "
                        "docs/classic.md)")
    parser.add_argument("--players", type=int, choices=range(2, 7), default=None,
                        metavar="2..6", help=f"the seats of the classic tables you create "
                        f"(default {CLASSIC_PLAYERS}; the other variants: docs/classic.md)")
    args = parser.parse_args(argv)
    if args.practice and not args.name:
        parser.error("--practice needs --name")
    if args.players is not None and args.practice and args.ruleset != "classic":
        parser.error("--players is for classic tables (--ruleset classic)")
    # nothing may write to the terminal under the screen: the bots' and gRPC's logs go nowhere
    logging.getLogger().handlers[:] = [logging.NullHandler()]
    app = PlayApp(args.gateway, args.name, args.practice, practice_level=args.level,
                  ruleset=args.ruleset,
                  classic_variants=classic_table(args.players or CLASSIC_PLAYERS))
    code = app.run()
    return code if isinstance(code, int) else 0
