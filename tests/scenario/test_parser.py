"""The `.mxs` parser: every construct of SCENARIO-FORMAT.md, and errors with line and column."""

from __future__ import annotations

import pytest

from machiavelox import rules
from machiavelox.scenario import ScenarioSyntaxError, parse_text
from machiavelox.scenario.lexer import split_line
from machiavelox.scenario.syntax import (
    Act,
    At,
    CardRef,
    CardSpec,
    ExpectCalata,
    ExpectCards,
    ExpectDraw,
    ExpectEvent,
    ExpectHolding,
    ExpectMeld,
    ExpectMeldCount,
    ExpectPhase,
    ExpectPoints,
    ExpectRejected,
    ExpectStatus,
    ExpectTable,
    ExpectTallone,
    ExpectWinner,
    ListRef,
    Match,
    NameRef,
    Start,
    Title,
)

C = rules.card


def spec(text: str) -> CardSpec:
    face, copy = rules.parse_face(text)
    return CardSpec(face[0], face[1], copy)


SETUP = """\
title A title with   spaces (§5.5)   # and a comment
match single
removed KH 2C
tallone p1: 5H 6H 9S      # top card first
hand p2: 7C JS
hand p3: -
table: 4C 5C 6C
table g1: 8D 8S 8H
drawn p1
direct-meld p1
start
"""


def test_setup_block_builds_the_deal() -> None:
    sc = parse_text(SETUP)
    assert sc.title == "A title with   spaces (§5.5)"
    assert not sc.long
    title, match, start = sc.statements
    assert isinstance(title, Title) and title.line == 1
    assert isinstance(match, Match) and not match.long
    assert isinstance(start, Start) and start.line == 11
    deal = start.deal
    assert deal.removed == (C("KH#1"), C("2C#1"))
    assert deal.talloni == ((C("5H"), C("6H"), C("9S")), (), ())
    assert deal.hands == ((), (C("7C"), C("JS")), ())
    assert deal.table == ((C("4C"), C("5C"), C("6C")), (C("8D"), C("8S"), C("8H")))
    assert start.names == {"g1": 1}
    assert deal.drawn == frozenset({rules.Seat.P1})
    assert deal.direct_meld == frozenset({rules.Seat.P1})
    assert [s.line for s in start.setup] == [3, 4, 5, 6, 7, 8, 9, 10]


def test_setup_bare_cards_take_the_lowest_free_copy() -> None:
    sc = parse_text("table: 7H 8H 9H\nhand p1: 7H 8H#2\ntallone p2: 9H\nstart\n")
    start = sc.statements[-1]
    assert isinstance(start, Start)
    assert start.deal.table == ((C("7H#1"), C("8H#1"), C("9H#1")),)
    assert start.deal.hands[0] == (C("7H#2"), C("8H#2"))
    assert start.deal.talloni[1] == (C("9H#2"),)


def test_setup_exact_copy_then_bare_copy() -> None:
    sc = parse_text("hand p1: 7H#1 7H\nstart\n")
    start = sc.statements[-1]
    assert isinstance(start, Start)
    assert start.deal.hands[0] == (C("7H#1"), C("7H#2"))
    sc = parse_text("hand p1: 7H#2 7H\nstart\n")
    start = sc.statements[-1]
    assert isinstance(start, Start)
    assert start.deal.hands[0] == (C("7H#2"), C("7H#1"))


def test_seed_gives_the_shuffled_deal_with_flags() -> None:
    sc = parse_text("seed 42\ndrawn p2\ndirect-meld p3\nstart\n")
    start = sc.statements[-1]
    assert isinstance(start, Start)
    expected = rules.shuffled_deal(42)
    assert start.deal.talloni == expected.talloni
    assert start.deal.removed == expected.removed
    assert start.deal.drawn == frozenset({rules.Seat.P2})
    assert start.deal.direct_meld == frozenset({rules.Seat.P3})


def test_suit_symbols_and_copies() -> None:
    sc = parse_text("hand p1: 10♠ Q♥ A♦ 2♣ 7H#2 K♥️\nstart\n")
    start = sc.statements[-1]
    assert isinstance(start, Start)
    assert start.deal.hands[0] == (C("10S"), C("QH"), C("AD"), C("2C"), C("7H#2"), C("KH"))


def test_comments_and_blank_lines_keep_line_numbers() -> None:
    sc = parse_text("# a comment\n\n   \nstart   # go\n\n# more\nat 1\n")
    assert [(type(s).__name__, s.line) for s in sc.statements] == [("Start", 4), ("At", 7)]
    assert sc.statements[0].text == "start"


def test_hash_inside_a_card_is_not_a_comment() -> None:
    line = split_line(1, "hand p1: 7H#2 #2 is a comment")
    assert [w.text for w in line.words] == ["hand", "p1", ":", "7H#2"]
    assert [w.col for w in line.words] == [1, 6, 8, 10]


ACTIONS = """\
table g1: 4C 5C 6C
start
at 12.5
wait 40
at 0.0004
p1 draw
p1 declare KH KD KC
p1 undeclare KH
p1 direct KH KD KC
p1 direct KH KD KC as g7
p1 attach 7C to @4C
p1 place 7C to g1
p1 take 7H#2 from [4C 5C 6C]
p1 put g1
p1 put new
p1 put new as g8
p1 move 7H from g7 to @8C#2
p1 move 7H from g1 to new
p2 move 7H from [ 4C 5C 6C ] to new as g9
p1 release
p1 conclude
p1 cancel
p1 stop
p1 giveup
p3 abandon
p3 silent
p3 alive
p2 ready
p2 leave
"""


def test_every_action_parses() -> None:
    stmts = parse_text(ACTIONS).statements
    assert stmts[1] == At(line=3, text="at 12.5", ms=12500, relative=False)
    assert stmts[2] == At(line=4, text="wait 40", ms=40000, relative=True)
    assert isinstance(stmts[3], At) and stmts[3].ms == 0
    acts = stmts[4:]
    assert all(isinstance(a, Act) for a in acts)
    by_line = {a.line: a for a in acts if isinstance(a, Act)}
    p1, p2 = rules.Seat.P1, rules.Seat.P2
    assert by_line[6].verb == "draw" and by_line[6].player is p1
    assert by_line[7].cards == (spec("KH"), spec("KD"), spec("KC"))
    assert by_line[8].verb == "undeclare" and by_line[8].cards == (spec("KH"),)
    assert by_line[9].verb == "direct" and by_line[9].name is None
    assert by_line[10].name == "g7"
    assert by_line[11].src == CardRef(spec("4C")) and by_line[11].cards == (spec("7C"),)
    assert by_line[12].verb == "place" and by_line[12].src == NameRef("g1")
    assert by_line[13].cards == (spec("7H#2"),)
    assert by_line[13].src == ListRef((spec("4C"), spec("5C"), spec("6C")))
    assert by_line[14].src == NameRef("g1") and not by_line[14].new
    assert by_line[15].new and by_line[15].name is None
    assert by_line[16].new and by_line[16].name == "g8"
    assert by_line[17].src == NameRef("g7") and by_line[17].dst == CardRef(spec("8C#2"))
    assert by_line[18].new and by_line[18].dst is None
    assert by_line[19].player is p2 and by_line[19].name == "g9"
    assert [by_line[n].verb for n in range(20, 30)] == [
        "release", "conclude", "cancel", "stop", "giveup", "abandon", "silent", "alive",
        "ready", "leave"]


EXPECTATIONS = """\
start
p1 draw
expect rejected
p1 draw
expect rejected held
expect hand p1: 7H 8H#2
expect pozzetto p1: -
expect tallone p1: 12
expect table: [4C 5C 6C 7C] [KH KD KC]
expect table: -
expect meld [4C 5C 6C 7C]
expect meld [4C 5C 6C 7C] confirmed
expect no meld [4C 5C 6C]
expect melds 2
expect calata p1 open
expect calata p2 none
expect holding p1 7H
expect holding p3 none
expect phase playing
expect status p3 eliminated
expect winner p2
expect winner none
expect draw p1 p2
expect score p1 57
expect score p2 -15
expect total p1 107
expect event chain p2 by p1
expect event forced-draw
expect event confirmed
expect event drew p1
"""


def test_every_expectation_parses() -> None:
    stmts = parse_text(EXPECTATIONS).statements
    p1, p2, p3 = rules.SEATS
    got = {s.line: s for s in stmts}
    assert got[3] == ExpectRejected(line=3, text="expect rejected", word=None)
    assert isinstance(got[5], ExpectRejected) and got[5].word == "held"
    assert got[6] == ExpectCards(line=6, text=got[6].text, zone="hand", player=p1,
                                 cards=(spec("7H"), spec("8H#2")))
    assert isinstance(got[7], ExpectCards) and got[7].zone == "pozzetto" and got[7].cards == ()
    assert isinstance(got[8], ExpectTallone) and got[8].count == 12
    assert isinstance(got[9], ExpectTable) and len(got[9].melds) == 2
    assert got[9].melds[1] == (spec("KH"), spec("KD"), spec("KC"))
    assert isinstance(got[10], ExpectTable) and got[10].melds == ()
    assert isinstance(got[11], ExpectMeld) and got[11].status is None and not got[11].absent
    assert isinstance(got[12], ExpectMeld) and got[12].status == "confirmed"
    assert isinstance(got[13], ExpectMeld) and got[13].absent
    assert isinstance(got[14], ExpectMeldCount) and got[14].count == 2
    assert got[15] == ExpectCalata(line=15, text=got[15].text, player=p1, open=True)
    assert isinstance(got[16], ExpectCalata) and not got[16].open
    assert isinstance(got[17], ExpectHolding) and got[17].card == spec("7H")
    assert isinstance(got[18], ExpectHolding) and got[18].card is None and got[18].player is p3
    assert isinstance(got[19], ExpectPhase) and got[19].phase == "playing"
    assert isinstance(got[20], ExpectStatus) and got[20].status == "eliminated"
    assert isinstance(got[21], ExpectWinner) and got[21].player is p2
    assert isinstance(got[22], ExpectWinner) and got[22].player is None
    assert isinstance(got[23], ExpectDraw) and got[23].players == (p1, p2)
    assert got[24] == ExpectPoints(line=24, text=got[24].text, total=False, player=p1,
                                   points=57)
    assert isinstance(got[25], ExpectPoints) and got[25].points == -15
    assert isinstance(got[26], ExpectPoints) and got[26].total
    assert isinstance(got[27], ExpectEvent) and got[27].words == ("chain", "p2", "by", "p1")
    assert isinstance(got[28], ExpectEvent) and got[28].words == ("forced-draw",)
    assert isinstance(got[29], ExpectEvent) and got[29].words == ("confirmed",)
    assert isinstance(got[30], ExpectEvent) and got[30].words == ("drew", "p1")


def test_match_long() -> None:
    sc = parse_text("match long\nstart\n")
    assert sc.long


@pytest.mark.parametrize(("text", "line", "col", "fragment"), [
    ("start\np1 foo\n", 2, 4, "unknown verb 'foo'"),
    ("start\np4 draw\n", 2, 1, "bad player 'p4'"),
    ("start\nfrobnicate\n", 2, 1, "unknown statement"),
    ("hand p1: 7C 7X\nstart\n", 1, 13, "bad card '7X'"),
    ("hand p1: 7c\nstart\n", 1, 10, "upper case"),
    ("hand p1: 7C#3\nstart\n", 1, 10, "#1 and #2"),
    ("hand p1 7C\nstart\n", 1, 9, "expected ':'"),
    ("hand p1:\nstart\n", 1, 10, "missing cards"),
    ("\n\n   hand   p1: 7C#1 7C#1\nstart\n", 3, 20, "7C#1 is already dealt"),
    ("hand p1: 7C\nhand p2: 7C 7C\nstart\n", 2, 13, "both copies of 7C"),
    ("hand p1: 7C\nhand p1: 8C\nstart\n", 2, 1, "given twice"),
    ("table g1: 4C 5C 6C\ntable g1: 4D 5D 6D\nstart\n", 2, 7, "meld name g1 given twice"),
    ("table: -\nstart\n", 1, 8, "at least one card"),
    ("seed 3\nhand p1: 7C\nstart\n", 2, 1, "cannot be mixed"),
    ("removed 2C\nseed 3\nstart\n", 2, 1, "cannot be mixed"),
    ("seed x\nstart\n", 1, 6, "bad seed"),
    ("hand p1: 7C\n", 1, 1, "without a following 'start'"),
    ("p1 draw\nstart\n", 1, 1, "before 'start'"),
    ("at 3\nstart\n", 1, 1, "before 'start'"),
    ("start\nseed 4\nstart\n", 2, 1, "needs 'match long'"),
    ("start\ntitle late\n", 2, 1, "before the first 'start'"),
    ("match double\nstart\n", 1, 7, "expected 'single' or 'long'"),
    ("start\nwait -3\n", 2, 6, "bad time"),
    ("start\nat 1.5.2\n", 2, 4, "bad time"),
    ("start\nat\n", 2, 4, "missing seconds"),
    ("start\np1 draw now\n", 2, 9, "unexpected 'now'"),
    ("start\np1 declare\n", 2, 12, "missing cards"),
    ("start\np1 attach 7C @4C\n", 2, 14, "expected 'to'"),
    ("start\np1 attach 7C to 4C\n", 2, 17, "unknown meld name '4C' (did you mean @4C?)"),
    ("start\np1 attach 7C to g2\n", 2, 17, "unknown meld name 'g2'"),
    ("start\np1 attach 7C to @7Z\n", 2, 18, "bad card '7Z'"),
    ("start\np1 take 7C from [4C 5C\n", 2, 24, "missing ']'"),
    ("start\np1 put [ ]\n", 2, 10, "at least one card"),
    ("start\np1 direct 7C 8C 9C as\n", 2, 23, "missing meld name"),
    ("start\np1 direct 7C 8C 9C as g1\np1 direct 7D 8D 9D as g1\n", 3, 23, "already in use"),
    ("start\np1 put new as x y\n", 2, 17, "unexpected 'y'"),
    ("start\np1 move 7C from @7C to\n", 2, 24, "missing meld"),
    ("start\nexpect rejected\n", 2, 1, "must directly follow an action"),
    ("start\np1 draw\nat 1\nexpect rejected\n", 4, 1, "must directly follow an action"),
    ("start\nexpect phase sleeping\n", 2, 14, "found 'sleeping'"),
    ("start\nexpect status p1 asleep\n", 2, 18, "found 'asleep'"),
    ("start\nexpect frobs 3\n", 2, 8, "unknown expectation"),
    ("start\nexpect melds two\n", 2, 14, "bad number of melds"),
    ("start\nexpect tallone p1: -1\n", 2, 20, "bad number of cards"),
    ("start\nexpect meld [7C 8C 9C] weird\n", 2, 24, "found 'weird'"),
    ("start\nexpect calata p1 maybe\n", 2, 18, "expected 'open' or 'none'"),
    ("start\nexpect holding p1 7Q\n", 2, 19, "bad card"),
    ("start\nexpect draw p1\n", 2, 16, "missing player"),
    ("start\nexpect draw p1 p1\n", 2, 16, "p1 named twice"),
    ("start\nexpect score p1 x\n", 2, 17, "bad points"),
    ("start\nexpect event forced-draw p1\n", 2, 26, "has no arguments"),
    ("start\nexpect event chain p1 from p2\n", 2, 23, "unexpected 'from'"),
    ("start\nexpect event Chain\n", 2, 14, "bad event kind"),
    ("start\nexpect table: [4C 5C 6C] 7C\n", 2, 26, "expected '['"),
])
def test_parse_errors_name_line_and_column(text: str, line: int, col: int,
                                           fragment: str) -> None:
    with pytest.raises(ScenarioSyntaxError) as info:
        parse_text(text)
    err = info.value
    assert fragment in err.message
    assert (err.line, err.col) == (line, col)
