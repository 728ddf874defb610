"""Running scenarios: statements against a live `rules.Table` with a virtual clock.

`run_paths` is the `machiavelox scenario` command: every file gives `PASS name` or
`FAIL name:LINE: expected ... / found ...` (`FAIL name:LINE:COL: ...` when it cannot be parsed),
then a summary line `N passed, M failed`. A file stops at its first failure; an engine crash
fails that file only.

A scenario that starts with `rules classic` runs on the classic engine instead
(`scenario.classic`, SCENARIO-FORMAT.md "Classic Machiavelli").

The statement loop is `driver.Driver`'s, shared with classic; `Runner` adds Machiavelox's
match, deals, actions and expectations. The run is a sequence of smazzate: every `Start` deals
a new table (today only the first, since long matches are not implemented; a later `Start` is
accepted once the previous smazzata ended, with the clock running on, which is what a long
match needs).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from machiavelox import rules

from . import classic
from .checks import check
from .driver import Driver
from .errors import ScenarioFailure, ScenarioSyntaxError
from .parser import parse_text
from .resolve import meld_id, pick_card, pick_cards
from .syntax import Act, Block, CardSpec, Expect, Match, Ref, Scenario, Start, Stmt


@dataclass(frozen=True)
class FileResult:
    """The outcome of one scenario file. `col` is set for parse errors only."""

    name: str
    passed: bool
    message: str = ""
    line: int | None = None
    col: int | None = None

    def render(self) -> str:
        if self.passed:
            return f"PASS {self.name}"
        where = "" if self.line is None else f":{self.line}"
        where += "" if self.col is None else f":{self.col}"
        return f"FAIL {self.name}{where}: {self.message}"


def run_paths(paths: Sequence[str], verbose: bool = False, out: TextIO | None = None) -> int:
    """Run every scenario named or found (recursively, `*.mxs`, sorted) under `paths`; print
    one line per file and the summary. Returns 1 if any file failed, else 0."""
    out = out if out is not None else sys.stdout
    passed = failed = 0
    for name, problem in expand_paths(paths):
        if problem is not None:
            result = FileResult(name, False, problem)
        else:
            if verbose:
                print(f"-- {name}", file=out)
            result = run_file(name, verbose=verbose, out=out)
        print(result.render(), file=out)
        if result.passed:
            passed += 1
        else:
            failed += 1
    print(f"{passed} passed, {failed} failed", file=out)
    return 1 if failed else 0


def expand_paths(paths: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(name, problem) for every scenario: files as given, folders expanded to their `*.mxs`
    files (recursively, sorted). `problem` says why a path gives no scenario at all."""
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.mxs") if p.is_file())
            if not found:
                yield given, "no *.mxs scenario in this folder"
            for p in found:
                yield str(p), None
        else:
            yield given, None


def run_file(path: str, verbose: bool = False, out: TextIO | None = None) -> FileResult:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return FileResult(path, False, f"cannot read: {e}")
    return run_text(text, path, verbose=verbose, out=out)


def run_text(text: str, name: str = "<text>", verbose: bool = False,
             out: TextIO | None = None) -> FileResult:
    """Parse and run one scenario given as text: a classic one (`rules classic`, the
    `classic` subpackage) or a Machiavelox one."""
    stream = out if out is not None else sys.stdout
    is_classic = classic.is_classic(text)
    try:
        if is_classic:
            classic_scenario = classic.parse_text(text)
        else:
            scenario = parse_text(text)
    except ScenarioSyntaxError as e:
        return FileResult(name, False, e.message, e.line, e.col)
    try:
        if is_classic:
            classic.ClassicRunner(verbose, stream).run(classic_scenario)
        else:
            Runner(verbose, stream).run(scenario)
    except ScenarioFailure as f:
        return FileResult(name, False, f.text, f.line)
    return FileResult(name, True)


class Runner(Driver[rules.Seat, CardSpec, rules.Action, rules.Event]):
    """Executes the statements of one scenario; raises ScenarioFailure at the first failure."""

    def __init__(self, verbose: bool = False, out: TextIO | None = None) -> None:
        super().__init__(verbose, out)
        self.long = False
        self._match: rules.Match | None = None
        self._bound: rules.Table | None = None  # the table `names` and `matched` belong to
        self._pending_names: dict[str, int] = {}  # setup names of a deal not started yet

    @property
    def match(self) -> rules.Match:
        assert self._match is not None, "the parser guarantees a start before play"
        return self._match

    @property
    def table(self) -> rules.Table:
        table = self.match.table
        if table is not self._bound:  # a new smazzata has started: its names, its events
            self._bound = table
            ids = list(table.board.melds)
            self.names = {name: ids[index] for name, index in self._pending_names.items()}
            self.matched = {key for key in self.matched if key[0] == "match"}
        return table

    def run(self, scenario: Scenario) -> None:
        self.run_statements(scenario.statements)

    def other(self, stmt: Stmt) -> None:
        if not isinstance(stmt, Match):
            super().other(stmt)
            return
        self.long = stmt.long

    def check(self, stmt: Expect) -> None:
        self.table  # noqa: B018 - binds a smazzata that started meanwhile
        check(self.match, stmt, self.matched)

    # ------------------------------------------------------------------ statements
    def start(self, stmt: Block) -> None:
        assert isinstance(stmt, Start)
        self._pending_names = dict(stmt.names)
        if self._match is None:
            kind = rules.MatchKind.LONG if self.long else rules.MatchKind.SINGLE
            self._match = rules.Match(kind, stmt.deal, start_ms=self.now_ms)
        else:
            try:
                self.trace_events(self.match.deal_next(stmt.deal, self.now_ms))
            except rules.RulesError as e:
                raise ScenarioFailure("a new smazzata to be dealt",
                                      f"refused {e.code}: {e.message}") from e
        self.table  # noqa: B018 - binds the names if the smazzata started

    def advance_to(self, target_ms: int) -> list[rules.Event]:
        return self.match.advance(target_ms)

    def apply(self, action: rules.Action) -> list[rules.Event]:
        return self.match.apply(action, self.now_ms)

    def bind(self, stmt: Act[rules.Seat, CardSpec], events: list[rules.Event]) -> None:
        """`as NAME`: the meld the action created (a direct meld, or a move's new meld)."""
        for ev in events:
            if ev.player != stmt.player:
                continue
            if stmt.verb == "direct" and ev.kind == "direct" and ev.meld is not None:
                self.names[str(stmt.name)] = ev.meld
                return
            if stmt.verb != "direct" and ev.kind == "moved" and ev.to_meld is not None:
                self.names[str(stmt.name)] = ev.to_meld
                return
        raise ScenarioFailure(f"a new meld to call {stmt.name}",
                              "no 'direct' or 'moved' event with a new meld")

    # ------------------------------------------------------------------ actions
    def action(self, stmt: Act[rules.Seat, CardSpec]) -> rules.Action:
        """The engine action for a statement, cards and melds resolved on the live table."""
        p = stmt.player
        ps = self.table.players[p]
        simple: dict[str, rules.Action] = {
            "draw": rules.Draw(p), "release": rules.Release(p), "conclude": rules.Conclude(p),
            "cancel": rules.Cancel(p), "stop": rules.Stop(p), "giveup": rules.GiveUp(p),
            "abandon": rules.Abandon(p), "silent": rules.Liveness(p, False),
            "alive": rules.Liveness(p, True), "ready": rules.Ready(p), "leave": rules.Leave(p),
        }
        if stmt.verb in simple:
            return simple[stmt.verb]
        match stmt.verb:
            case "declare":
                return rules.Declare(p, pick_cards(stmt.cards, ps.hand))
            case "undeclare":
                return rules.Undeclare(p, pick_cards(stmt.cards, ps.pozzetto))
            case "direct":
                return rules.Direct(p, pick_cards(stmt.cards, self.table.pozzetto_of(ps)))
            case "attach":
                return rules.Attach(p, pick_card(stmt.cards[0], ps.hand), self.meld(stmt.src))
            case "place":
                return rules.Place(p, pick_card(stmt.cards[0], self.table.pozzetto_of(ps)),
                                   self.meld(stmt.src))
            case "put":
                return rules.Put(p, None if stmt.new else self.meld(stmt.src))
            case "take" | "move":
                src = self.meld(stmt.src)
                card = pick_card(stmt.cards[0], self.table.board.melds[src])
                if stmt.verb == "take":
                    return rules.Take(p, card, src)
                dst = None if stmt.new else self.meld(stmt.dst)
                return rules.Move(p, card, src, dst)
        raise AssertionError(f"unknown verb {stmt.verb!r}")

    def meld(self, ref: Ref | None) -> int:
        assert ref is not None, "the parser requires a meld here"
        return meld_id(self.table, ref, self.names)
