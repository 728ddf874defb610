"""The `.mxs` runner against the live rules engine: PASS/FAIL lines, exit codes, semantics."""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import pytest

from machiavelox import rules
from machiavelox.cli import main
from machiavelox.scenario import run_paths, run_text
from machiavelox.scenario.resolve import pick_cards
from machiavelox.scenario.syntax import CardSpec

SPEC = Path("/work/shared/SCENARIO-FORMAT.md")

EXAMPLE = """\
title Disturbance does not drag (rulebook §5.5)
table: 4C 5C 6C
hand p1: JS
hand p2: 7C
drawn p1
drawn p2
start
at 1
p1 attach JS to @4C          # an opponent's card that does not belong
p2 attach 7C to @4C          # my 7 in the right place
expect calata p2 none        # p2's work is regular without the J: confirmed at once
expect event confirmed p2
expect calata p1 open        # p1's J leaves the meld irregular: still on trial
at 41                        # p1's 40 s are over
expect event failed p1
expect meld [4C 5C 6C 7C]    # p2's 7 did not need the J: it stays
expect hand p1: JS           # only the J goes back
"""


def run(tmp_path: Path, text: str, name: str = "s.mxs", verbose: bool = False
        ) -> tuple[int, list[str]]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    out = io.StringIO()
    rc = run_paths([str(path)], verbose=verbose, out=out)
    return rc, out.getvalue().splitlines()


def result_line(tmp_path: Path, text: str) -> str:
    """The PASS/FAIL line of one scenario, with the tmp path replaced by `s.mxs`."""
    _, lines = run(tmp_path, text)
    assert lines[-1] in ("1 passed, 0 failed", "0 passed, 1 failed")
    return lines[-2].replace(str(tmp_path / "s.mxs"), "s.mxs")


# ---------------------------------------------------------------------- the spec's example
def test_spec_example_passes(tmp_path: Path) -> None:
    rc, lines = run(tmp_path, EXAMPLE)
    assert lines == [f"PASS {tmp_path / 's.mxs'}", "1 passed, 0 failed"]
    assert rc == 0


def test_spec_example_is_the_one_in_the_document(tmp_path: Path) -> None:
    if not SPEC.exists():
        pytest.skip("shared docs not available")
    doc = SPEC.read_text(encoding="utf-8").split("## Example", 1)[1].split("\n## ", 1)[0]
    body = "\n".join(line[4:] for line in doc.splitlines()[1:] if line.startswith("    "))
    assert body.strip() == EXAMPLE.strip()


def test_wrong_expectation_fails_at_its_line(tmp_path: Path) -> None:
    text = EXAMPLE.replace("expect hand p1: JS ", "expect hand p1: QS ")
    rc, lines = run(tmp_path, text)
    assert rc == 1
    assert lines == [f"FAIL {tmp_path / 's.mxs'}:17: expected hand p1: QS / found hand p1: JS",
                     "0 passed, 1 failed"]


def test_file_stops_at_first_failure(tmp_path: Path) -> None:
    text = EXAMPLE.replace("expect calata p1 open", "expect calata p1 none")
    text += "expect melds 7\n"
    assert result_line(tmp_path, text) == (
        "FAIL s.mxs:13: expected calata p1 none / found calata p1 open")


def test_verbose_prints_statements_and_events(tmp_path: Path) -> None:
    rc, lines = run(tmp_path, EXAMPLE, verbose=True)
    assert rc == 0
    text = "\n".join(lines)
    assert "    9: p1 attach JS to @4C" in text
    assert "1s attached p1 JS" in text
    assert "41s failed p1 JS (timeout)" in text
    assert lines[-2:] == [f"PASS {tmp_path / 's.mxs'}", "1 passed, 0 failed"]


# ---------------------------------------------------------------------- expect rejected
BASE = """\
table g1: 4C 5C 6C
hand p1: 7C 9D
hand p2: 8C
drawn p1
start
"""


def test_refusal_with_expect_rejected_passes(tmp_path: Path) -> None:
    assert result_line(tmp_path, BASE + "p1 attach 8C to g1\nexpect rejected\n") == \
        "PASS s.mxs"
    assert result_line(tmp_path, BASE + "p1 draw\nexpect rejected TALLONE\n") == "PASS s.mxs"
    # a refused action changes nothing
    assert result_line(tmp_path, BASE + "p1 attach 8C to g1\nexpect rejected\n"
                       "expect hand p1: 7C 9D\nexpect table: [4C 5C 6C]\n") == "PASS s.mxs"


def test_refusal_without_expect_rejected_fails_with_code_and_message(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "p1 draw\nexpect melds 1\n")
    assert line == ("FAIL s.mxs:6: expected p1 draw to be accepted / found refused "
                    "draw/empty-tallone: your tallone is empty (M4.2)")


def test_refusal_with_the_wrong_word_fails_at_the_expectation(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "p1 draw\nexpect rejected held\n")
    assert line.startswith("FAIL s.mxs:7: expected a refusal mentioning 'held' / found "
                           "refused draw/empty-tallone")


def test_expect_rejected_after_an_accepted_action_fails(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "p1 attach 7C to g1\nexpect rejected\n")
    assert line == "FAIL s.mxs:7: expected p1 attach 7C to g1 to be refused / found it was accepted"


def spec(text: str) -> CardSpec:
    face, copy = rules.parse_face(text)
    return CardSpec(face[0], face[1], copy)


def test_pick_cards_prefers_copies_in_the_zone() -> None:
    c = rules.card
    zone = {c("7H#2"), c("8H#1"), c("8H#2")}
    assert pick_cards([spec("7H")], zone) == (c("7H#2"),)
    assert pick_cards([spec("8H"), spec("8H")], zone) == (c("8H#1"), c("8H#2"))
    assert pick_cards([spec("8H"), spec("8H#1")], zone) == (c("8H#2"), c("8H#1"))
    # not there: copy 1, then copy 2, so that the engine names the missing card
    assert pick_cards([spec("9H"), spec("9H")], zone) == (c("9H#1"), c("9H#2"))
    assert pick_cards([spec("7H"), spec("7H")], zone) == (c("7H#2"), c("7H#1"))
    assert pick_cards([spec("7H#1")], zone) == (c("7H#1"),)


def test_bare_cards_use_the_copy_the_player_has(tmp_path: Path) -> None:
    text = """\
        table: 7H 8H 9H
        table g2: 7S 7D 7C
        hand p1: 7H KS
        start
        expect hand p1: 7H#2 KS
        expect table: [7H#1 8H 9H] [7S 7D 7C]
        p1 attach 7H to g2
        expect hand p1: KS
        expect table: [7H#1 8H 9H] [7S 7D 7C 7H#2]
        """
    assert result_line(tmp_path, text) == "PASS s.mxs"
    line = result_line(tmp_path, text.replace("[7S 7D 7C 7H#2]", "[7S 7D 7C 7H#1]"))
    assert line == ("FAIL s.mxs:9: expected table: [7H#1 8H 9H] [7S 7D 7C 7H#1] / found table: "
                    "[7H#1 8H 9H] [7S 7H#2 7D 7C]")


def test_a_card_not_in_the_zone_is_refused_by_the_engine(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "p1 attach 8C to g1\n")
    assert line.startswith("FAIL s.mxs:6: expected p1 attach 8C to g1 to be accepted / "
                           "found refused card/not-in-hand")
    assert result_line(tmp_path, BASE + "p1 declare 7C 7C\nexpect rejected not-in-hand\n") \
        == "PASS s.mxs"


def test_at_card_ambiguity_fails_and_exact_copy_resolves(tmp_path: Path) -> None:
    text = """\
        table: 7H 8H 9H
        table: 7H 7S 7D
        hand p1: 7C
        start
        p1 attach 7C to @7H
        """
    line = result_line(tmp_path, text)
    assert line.startswith("FAIL s.mxs:5: expected one meld holding 7H / found 2:")
    assert "ambiguous, use @7H#1 or @7H#2" in line
    text = text.replace("@7H", "@7H#2") + "expect meld [7H 7S 7D 7C] confirmed\n"
    assert result_line(tmp_path, text) == "PASS s.mxs"


def test_references_that_find_nothing_fail_cleanly(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "p1 attach 7C to @8C\n")
    assert line.startswith("FAIL s.mxs:6: expected a meld holding 8C / found 8C is in no meld")
    line = result_line(tmp_path, BASE + "p1 attach 7C to [4C 5C]\n")
    assert line.startswith("FAIL s.mxs:6: expected a meld [4C 5C] / found none; table: "
                           "[4C 5C 6C]")
    assert result_line(tmp_path, BASE + "p1 attach 7C to [6C 4C 5C]\n"
                       "expect table: [7C 4C 5C 6C]\n") == "PASS s.mxs"


def test_as_name_binds_the_new_meld(tmp_path: Path) -> None:
    text = """\
        table g1: 4C 5C 6C 7C
        hand p1: 7S 7D 9H 10H JH KS
        drawn p1
        start
        p1 declare 9H 10H JH
        p1 direct 9H 10H JH as run
        expect meld [9H 10H JH] confirmed
        p1 declare 7S 7D
        p1 move 7C from g1 to new as set
        expect holding p1 none
        p1 place 7S to set
        p1 place 7D to set
        expect calata p1 none
        expect table: [4C 5C 6C] [9H 10H JH] [7C 7S 7D]
        wait 41
        expect meld [7C 7S 7D] consolidated
        expect meld [9H JH 10H] consolidated
        expect melds 3
        expect no meld [4C 5C 6C 7C]
        """
    assert result_line(tmp_path, text) == "PASS s.mxs"


def test_time_never_goes_backwards(tmp_path: Path) -> None:
    line = result_line(tmp_path, BASE + "at 10\nwait 2.5\nat 12\n")
    assert line == ("FAIL s.mxs:8: expected a time from 12.5 s on (time never goes backwards) / "
                    "found at 12")


def test_timers_fire_when_the_clock_advances(tmp_path: Path) -> None:
    text = BASE + """\
        p1 declare 7C
        p1 take 6C from g1
        expect holding p1 6C
        wait 9.999
        expect holding p1 6C
        wait 0.001
        expect holding p1 none
        expect event hold-expired p1
        """
    assert result_line(tmp_path, textwrap.dedent(text)) == "PASS s.mxs"


# ---------------------------------------------------------------------- other expectations
CLOSING = """\
table g1: 4C 5C 6C
hand p1: 7C
hand p2: 2D 3D
hand p3: KS
drawn p1
direct-meld p1
start
at 3
expect phase playing
expect status p1 active
expect winner none
"""


def test_closing_result_expectations(tmp_path: Path) -> None:
    text = CLOSING.replace("expect winner none\n", "") + """\
p1 attach 7C to g1
expect event closed p1
expect event ended
expect phase ended
expect winner p1
expect score p1 63
expect score p2 0
expect status p2 active
"""
    assert result_line(tmp_path, text) == "PASS s.mxs"
    line = result_line(tmp_path, text + "expect draw p1 p2\n")
    assert line.startswith("FAIL s.mxs:19: expected draw p1 p2 / found draw none")
    line = result_line(tmp_path, text.replace("score p1 63", "score p1 60"))
    assert line.startswith("FAIL s.mxs:16: expected score p1 60 / found score p1 63")


def test_result_before_the_end_fails(tmp_path: Path) -> None:
    line = result_line(tmp_path, CLOSING)
    assert line == ("FAIL s.mxs:11: expected winner none / found the smazzata has not ended "
                    "(phase playing)")


def test_invalid_closing_eliminates(tmp_path: Path) -> None:
    text = EXAMPLE + "expect status p2 eliminated\nexpect event eliminated p2\n"
    assert result_line(tmp_path, text) == "PASS s.mxs"


def test_expect_event_matches_each_event_once_in_order(tmp_path: Path) -> None:
    text = BASE + """\
        p1 attach 7C to g1
        expect event confirmed
        expect event confirmed p1
        """
    line = result_line(tmp_path, textwrap.dedent(text))
    assert line.startswith("FAIL s.mxs:8: expected event confirmed p1 / found no such event")
    text = BASE + "p1 attach 7C to g1\nexpect event attached p1\nexpect event confirmed p1\n"
    assert result_line(tmp_path, text) == "PASS s.mxs"


def test_pozzetto_tallone_and_holding(tmp_path: Path) -> None:
    text = """\
        table g1: 4C 5C 6C 7C
        hand p1: 7S 7D
        tallone p2: 2H 3H 4H
        start
        expect tallone p2: 3
        expect pozzetto p1: -
        p1 declare 7D
        expect pozzetto p1: 7D
        expect hand p1: 7S
        p1 take 7C from g1
        expect holding p1 7C#1
        expect holding p2 none
        p2 draw
        expect hand p2: 2H
        expect tallone p2: 2
        """
    assert result_line(tmp_path, text) == "PASS s.mxs"
    line = result_line(tmp_path, text.replace("holding p1 7C#1", "holding p1 7C#2"))
    assert line == "FAIL s.mxs:11: expected holding p1 7C#2 / found holding p1 7C#1"


# ---------------------------------------------------------------------- files and folders
def test_directories_expand_recursively_sorted(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "b" / "ok.mxs").write_text(EXAMPLE, encoding="utf-8")
    (tmp_path / "a" / "deep" / "bad.mxs").write_text(BASE + "expect melds 2\n",
                                                     encoding="utf-8")
    (tmp_path / "a" / "z.mxs").write_text("start\np1 dance\n", encoding="utf-8")
    (tmp_path / "a" / "notes.txt").write_text("not a scenario", encoding="utf-8")
    out = io.StringIO()
    rc = run_paths([str(tmp_path)], out=out)
    assert rc == 1
    assert out.getvalue().splitlines() == [
        f"FAIL {tmp_path}/a/deep/bad.mxs:6: expected melds 2 / found melds 1: [4C 5C 6C]",
        f"FAIL {tmp_path}/a/z.mxs:2:4: unknown verb 'dance'",
        f"PASS {tmp_path}/b/ok.mxs",
        "1 passed, 2 failed",
    ]


def test_exit_code_zero_when_all_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    (tmp_path / "one.mxs").write_text(EXAMPLE, encoding="utf-8")
    (tmp_path / "two.mxs").write_text(BASE, encoding="utf-8")
    assert main(["scenario", str(tmp_path / "one.mxs"), str(tmp_path / "two.mxs")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "2 passed, 0 failed"
    assert main(["scenario", str(tmp_path), str(tmp_path / "missing.mxs")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "2 passed, 1 failed"
    assert re.fullmatch(r"FAIL .*missing\.mxs: cannot read: .*", lines[-2])


def test_empty_folder_is_a_failure(tmp_path: Path) -> None:
    out = io.StringIO()
    assert run_paths([str(tmp_path)], out=out) == 1
    assert out.getvalue().splitlines() == [
        f"FAIL {tmp_path}: no *.mxs scenario in this folder", "0 passed, 1 failed"]


def test_engine_crash_fails_the_file_and_the_run_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.mxs").write_text(BASE + "p1 attach 7C to g1\n", encoding="utf-8")
    (tmp_path / "b.mxs").write_text(BASE + "expect melds 1\n", encoding="utf-8")

    def boom(self: rules.Table, action: rules.Action, now_ms: int) -> list[rules.Event]:
        raise KeyError("oops")

    monkeypatch.setattr(rules.Table, "apply", boom)
    out = io.StringIO()
    assert run_paths([str(tmp_path)], out=out) == 1
    assert out.getvalue().splitlines() == [
        f"FAIL {tmp_path}/a.mxs:6: engine error: KeyError: 'oops' (p1 attach 7C to g1)",
        f"PASS {tmp_path}/b.mxs",
        "1 passed, 1 failed",
    ]


def test_run_text_reports_parse_errors_with_column() -> None:
    result = run_text("start\n  p1 attach 7C to g9\n", "x.mxs")
    assert not result.passed
    assert result.render() == "FAIL x.mxs:2:19: unknown meld name 'g9'"
