"""The `.mxs` runner on classic scenarios (SCENARIO-FORMAT.md, "Classic Machiavelli"): the
dispatch on `rules classic`, parse errors with line and column, failures naming what was
expected and found, --verbose, and the bundled classic scenarios (at least 50)."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from machiavelox.scenario import run_text
from machiavelox.scenario.classic import is_classic, parse_text

CLASSIC_DIR = Path(__file__).parents[1] / "scenarios" / "classic"

BASIC = """\
rules classic
players 3
hand p1: 7H 8H 9H KS
hand p2: 2C
stock: 5C 6D
start
p1 meld 7H 8H 9H
p1 end
expect turn p2
"""


def outcome(text: str, verbose: bool = False) -> tuple[str, str]:
    out = io.StringIO()
    result = run_text(textwrap.dedent(text), "s.mxs", verbose=verbose, out=out)
    return result.render(), out.getvalue()


def test_bundled_classic_scenarios_cover_every_rule() -> None:
    """At least 50 classic scenarios, and every rule C1..C11 cited in some title."""
    files = sorted(CLASSIC_DIR.rglob("*.mxs"))
    assert len(files) >= 50
    titles = " ".join(f.read_text(encoding="utf-8").splitlines()[0] for f in files)
    for rule in range(1, 12):
        assert f"C{rule}" in titles, f"no scenario cites C{rule}"
    for f in files:
        assert is_classic(f.read_text(encoding="utf-8")), f


def test_dispatch() -> None:
    """`rules classic` before the first start selects the classic runner; else Machiavelox."""
    assert is_classic(BASIC)
    assert is_classic("title t\n# comment\nrules classic\n")
    assert not is_classic("hand p1: 7H\nstart\n")
    assert outcome(BASIC)[0] == "PASS s.mxs"


@pytest.mark.parametrize(("text", "where", "words"), [
    ("rules classic\nplayers 6\nstart\n", ":2:1:", "three decks"),
    ("rules classic\nplayers 4\nvariant decks 3\nstart\n", ":3:1:", "5 or 6"),
    ("rules classic\nvariant jokers 3\nstart\n", ":2:1:", "0, 2 or 4"),
    ("rules classic\nvariant aces high\nstart\n", ":2:14:", "low-high"),
    ("rules classic\nvariant session threshold\nstart\n", ":2:", "threshold number"),
    ("rules classic\nhand p1: 7H#3\nstart\n", ":2:10:", "2 decks"),
    ("rules classic\nhand p1: JK\nstart\n", ":2:10:", "no joker"),
    ("rules classic\nvariant jokers 2\nhand p1: JK JK JK\nstart\n", ":3:16:", "no joker"),
    ("rules classic\nhand p5: 7H\nstart\n", ":2:1:", "no p5"),
    ("rules classic\nseed 4\nhand p1: 7H\nstart\n", ":3:1:", "mixed"),
    ("rules classic\nstart\np1 declare 7H\n", ":3:4:", "Machiavelox"),
    ("rules classic\nstart\nexpect pozzetto p1: -\n", ":3:8:", "Machiavelox"),
    ("rules classic\nstart\nexpect meld [7H 8H 9H] trial\n", ":3:", "no status"),
    ("rules classic\nstart\np1 swap JK for 7H in @8H\n", ":3:9:", "natural"),
    ("rules classic\nstart\np7 draw\n", ":3:1:", "p1 .. p4"),
    ("rules classic\nstart\nexpect rejected\n", ":3:1:", "directly follow"),
    ("players 3\nrules classic\nstart\n", ":1:1:", "rules classic"),
    ("rules classic\nstart\nstart\nplayers 2\nstart\n", ":4:1:", "before the first"),
])
def test_parse_errors_name_line_and_column(text: str, where: str, words: str) -> None:
    """A scenario that cannot be parsed fails at the offending line and column, saying why."""
    line, _ = outcome(text)
    assert line.startswith("FAIL s.mxs" + where), line
    assert words in line, line


def test_failures_say_expected_and_found() -> None:
    """A failed expectation names its line, what was expected and what was found."""
    line, _ = outcome(BASIC.replace("expect turn p2", "expect turn p3"))
    assert line == "FAIL s.mxs:9: expected turn p3 / found turn p2"
    line, _ = outcome(BASIC + "expect hand p1: KS 2C\n")
    assert line == "FAIL s.mxs:10: expected hand p1: KS 2C / found hand p1: KS"
    line, _ = outcome(BASIC + "p2 end\nexpect rejected joker\n")
    assert "FAIL s.mxs:11: expected a refusal mentioning 'joker'" in line
    line, _ = outcome(BASIC + "p2 end\n")
    assert "FAIL s.mxs:10: expected p2 end to be accepted / found refused end/nothing-played" \
        in line
    line, _ = outcome(BASIC + "expect event hand-won p1\n")
    assert "no such event; events not yet matched: turn p1, melded p1, played p1 3, turn p2" \
        in line


def test_verbose_prints_statements_and_events() -> None:
    """--verbose traces every statement and the events it produced."""
    line, text = outcome(BASIC, verbose=True)
    assert line == "PASS s.mxs"
    assert "    7: p1 meld 7H 8H 9H" in text
    assert "0s melded p1 7H 8H 9H" in text
    assert "0s turn p2" in text


def test_parse_gives_typed_statements() -> None:
    """The parser folds a setup block into one typed `Start`."""
    scenario = parse_text(BASIC)
    start = scenario.statements[0]
    assert type(start).__name__ == "Start"
