"""The statement loop both rulesets run: `Driver`, against a live engine with a virtual clock.

Shared: the file stops at its first failure (a ScenarioFailure gets the line of the statement
being run), an engine crash fails the file only, `at`/`wait` advance the clock (never
backwards) firing every due timer, an action the engine refuses fails the scenario unless the
next statement is `expect rejected [WORD]`, `--verbose` traces statements and events. Each
ruleset's runner (`runner.Runner`, `classic.runner.ClassicRunner`) says how a `start` deals,
how an `Act` becomes an engine action, what `as NAME` binds and how an expectation is checked.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Generic, TextIO, TypeVar

from machiavelox.rules import RulesError

from .checks import EventKey
from .errors import ScenarioFailure
from .syntax import Act, At, Block, Expect, ExpectRejected, Stmt, Title

S = TypeVar("S")
C = TypeVar("C")
A = TypeVar("A")  # the engine's action
E = TypeVar("E")  # the engine's event


class Driver(ABC, Generic[S, C, A, E]):
    """Executes the statements of one scenario; raises ScenarioFailure at the first failure."""

    def __init__(self, verbose: bool = False, out: TextIO | None = None) -> None:
        self.verbose = verbose
        self.out = out if out is not None else sys.stdout
        self.now_ms = 0
        self.names: dict[str, int] = {}  # meld names of the current deal -> meld ids
        self.matched: set[EventKey] = set()  # events claimed by `expect event`

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def start(self, stmt: Block) -> None:
        """Deal what `start` set up (the first one also makes the table or session)."""

    @abstractmethod
    def advance_to(self, target_ms: int) -> Iterable[E]:
        """Move the engine's clock on to `target_ms`: the events of the timers that fired."""

    @abstractmethod
    def action(self, stmt: Act[S, C]) -> A:
        """The engine action for a statement, cards and melds resolved on the live table."""

    @abstractmethod
    def apply(self, action: A) -> list[E]:
        """Apply `action` at `now_ms`; a refusal raises RulesError."""

    @abstractmethod
    def bind(self, stmt: Act[S, C], events: list[E]) -> None:
        """`as NAME`: name the meld the accepted action created."""

    @abstractmethod
    def check(self, stmt: Expect) -> None:
        """Raise ScenarioFailure unless the expectation holds."""

    def other(self, stmt: Stmt) -> None:
        """A statement only the ruleset has."""
        raise AssertionError(f"unknown statement {stmt!r}")

    def before_act(self) -> None:
        """Called before every action is resolved (classic fires due timers first)."""

    # ------------------------------------------------------------------ the loop
    def run_statements(self, stmts: Sequence[Stmt]) -> None:
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            after = stmts[i + 1] if i + 1 < len(stmts) else None
            try:
                i += 1 + self.execute(stmt, after)
            except ScenarioFailure as f:
                f.line = f.line or stmt.line
                raise
            except Exception as e:  # an engine crash fails this file, never the run
                raise ScenarioFailure(f"engine error: {type(e).__name__}: {e} ({stmt.text})",
                                      line=stmt.line) from e

    def execute(self, stmt: Stmt, after: Stmt | None) -> int:
        """Run one statement; returns how many following statements it consumed (an
        `expect rejected` belongs to its action)."""
        if isinstance(stmt, Block):
            for setup in stmt.setup:
                self.trace(setup)
        self.trace(stmt)
        match stmt:
            case Title():
                return 0
            case Block():
                self.start(stmt)
                return 0
            case At():
                self.advance(stmt)
                return 0
            case Act():
                return self.act(stmt, after if isinstance(after, ExpectRejected) else None)
            case ExpectRejected():
                raise AssertionError("the parser puts `expect rejected` after an action")
            case Expect():
                self.check(stmt)
                return 0
        self.other(stmt)
        return 0

    # ------------------------------------------------------------------ statements
    def advance(self, stmt: At) -> None:
        target = self.now_ms + stmt.ms if stmt.relative else stmt.ms
        if target < self.now_ms:
            raise ScenarioFailure(f"a time from {self.now_ms / 1000:g} s on (time never goes "
                                  f"backwards)", f"at {target / 1000:g}")
        events = self.advance_to(target)
        self.now_ms = target
        self.trace_events(events)

    def act(self, stmt: Act[S, C], rejected: ExpectRejected | None) -> int:
        self.before_act()
        action = self.action(stmt)
        try:
            events = self.apply(action)
        except RulesError as e:
            reason = f"{e.code}: {e.message}"
            self.trace_line(f"refused {reason}")
            if rejected is None:
                raise ScenarioFailure(f"{stmt.text} to be accepted", f"refused {reason}") from e
            self.trace(rejected)
            word = rejected.word
            if word is not None and word.lower() not in f"{e.code} {e.message}".lower():
                raise ScenarioFailure(f"a refusal mentioning {word!r}", f"refused {reason}",
                                      line=rejected.line) from e
            return 1
        self.trace_events(events)
        if rejected is not None:
            raise ScenarioFailure(f"{stmt.text} to be refused", "it was accepted",
                                  line=rejected.line)
        if stmt.name is not None:
            self.bind(stmt, events)
        return 0

    # ------------------------------------------------------------------ --verbose
    def trace(self, stmt: Stmt) -> None:
        if self.verbose:
            print(f"{stmt.line:5}: {stmt.text}", file=self.out)

    def trace_events(self, events: Iterable[E]) -> None:
        for ev in events:
            self.trace_line(str(ev))

    def trace_line(self, text: str) -> None:
        if self.verbose:
            print(f"         {text}", file=self.out)
