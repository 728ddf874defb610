"""Refusals: every refused action raises a RulesError with a stable code and a human message.

Codes are `area/what` strings that never change once published (clients switch on them); the
message is for people. Subclasses split refusals by kind, as gRPC status codes will.
"""

from __future__ import annotations


class RulesError(Exception):
    """An action the rules refuse. The state is left exactly unchanged."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InvalidActionError(RulesError):
    """The action is malformed or names things that do not exist (INVALID_ARGUMENT)."""


class IllegalActionError(RulesError):
    """The action is well formed but the rules forbid it now (FAILED_PRECONDITION)."""


class ConflictError(IllegalActionError):
    """Another player got there first (M6.4): the slower action is refused."""


def invalid(code: str, message: str) -> InvalidActionError:
    return InvalidActionError(code, message)


def illegal(code: str, message: str) -> IllegalActionError:
    return IllegalActionError(code, message)


def conflict(code: str, message: str) -> ConflictError:
    return ConflictError(code, message)
