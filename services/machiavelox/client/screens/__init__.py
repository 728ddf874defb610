"""The client's screens: login, menu, waiting in the agorà (queue, friendly lobby, practice),
joining by code, the table, and the help and confirmation dialogs."""

from .dialogs import ConfirmScreen, HelpScreen
from .login import LoginScreen
from .menu import JoinCodeScreen, MenuScreen
from .table import TableScreen
from .waiting import WaitScreen

__all__ = ["ConfirmScreen", "HelpScreen", "JoinCodeScreen", "LoginScreen", "MenuScreen",
           "TableScreen", "WaitScreen"]
