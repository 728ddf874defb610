"""The two ways a scenario goes wrong: it cannot be parsed, or it fails while running."""

from __future__ import annotations


class ScenarioSyntaxError(Exception):
    """The text is not a valid scenario: `line` and `col` are 1-based."""

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(f"{line}:{col}: {message}")
        self.line = line
        self.col = col
        self.message = message


class ScenarioFailure(Exception):
    """A statement did not hold: what was expected and what was found (or just a message).

    The runner fills in `line` from the statement being executed.
    """

    def __init__(self, expected: str, found: str | None = None, line: int = 0) -> None:
        super().__init__(expected if found is None else f"expected {expected} / found {found}")
        self.expected = expected
        self.found = found
        self.line = line

    @property
    def text(self) -> str:
        """`expected X / found Y`, or the bare message when there is nothing to compare."""
        return str(self)
