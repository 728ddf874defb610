"""The client's screens: login, menu, waiting in the agorà (queue, friendly lobby, practice),
joining by code, the Machiavelox and classic Machiavelli tables, and the help, confirmation
and players dialogs."""

from .classic_table import ClassicTableScreen
from .dialogs import ConfirmScreen, HelpScreen, PlayersScreen
from .login import LoginScreen
from .menu import JoinCodeScreen, MenuScreen
from .table import TableScreen
from .waiting import WaitScreen

__all__ = ["ClassicTableScreen", "ConfirmScreen", "HelpScreen", "JoinCodeScreen",
           "LoginScreen", "MenuScreen", "PlayersScreen", "TableScreen", "WaitScreen"]
