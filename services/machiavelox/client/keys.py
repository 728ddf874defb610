"""Every key of the table screens, in one place: the screens dispatch on it, the help panel and
the hint line show it, docs/play.md lists it (a test checks they agree). `KEYS` are the
Machiavelox table's, `CLASSIC_KEYS` the classic Machiavelli table's; both share the keys that
select (`SELECT`) and most of the screen's.

Lower-case letters are actions (one key each, as fast as a speed game needs); upper-case letters
select the cards of your hand and pozzetto by the label shown over them; digits go to a meld by
its number; arrows move the cursors. Every action of the rulebook has its key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Key:
    keys: tuple[str, ...]  # Textual key names
    name: str  # the screen's `do_<name>`
    shown: str  # how the help panel writes the key
    text: str  # what it does
    group: str


SELECT: tuple[Key, ...] = (
    Key(("left", "right"), "cursor", "←/→", "move along your hand (or along a meld)", "select"),
    Key(("up", "down"), "meld", "↑/↓", "previous/next meld (the cursor goes to the table)",
        "select"),
    Key(("tab",), "area", "Tab", "switch between your cards and the table", "select"),
    Key(("space",), "toggle", "Space", "select the card under the cursor (on the table: pick "
        "it to move)", "select"),
    Key(("A…Z",), "label", "A…Z", "select one of your cards by its label", "select"),
    Key(("0…9",), "number", "1…9", "go to a meld by its number (two digits quickly: 12)",
        "select"),
    Key(("escape",), "clear", "Esc", "clear the selection", "select"),
)
SORT = Key(("o",), "sort", "o", "sort your hand by suit or by rank", "screen")
REFRESH = Key(("f",), "refresh", "f", "ask the server for a fresh view", "screen")
HELP = Key(("question_mark", "h"), "help", "? or h", "this help", "screen")
DONE = Key(("enter",), "done", "Enter", "after the end (or once you are out): back to the menu",
           "screen")

KEYS: tuple[Key, ...] = (
    *SELECT,
    # -- playing (M4-M6)
    Key(("d",), "draw", "d", "draw from your tallone (M4.2)", "play"),
    Key(("p",), "declare", "p", "declare the selected hand cards into your pozzetto (M5.3)",
        "play"),
    Key(("u",), "undeclare", "u", "take selected pozzetto cards back into the hand", "play"),
    Key(("g",), "direct", "g", "giocata diretta: the selected (or all) pozzetto cards down as a "
        "new meld (M5.1)", "play"),
    Key(("a",), "attach", "a", "attach the selected hand card to the meld at the cursor (M5.2)",
        "play"),
    Key(("l",), "place", "l", "place (colloca) the selected pozzetto card on the meld at the "
        "cursor (M5.3)", "play"),
    Key(("t",), "take", "t", "take (hold) the table card at the cursor (M6.1)", "play"),
    Key(("m",), "move", "m", "put the held card on the meld at the cursor; or move the picked "
        "card there", "play"),
    Key(("n",), "new", "n", "put the held (or picked) card into a new meld", "play"),
    Key(("r",), "release", "r", "let go of the held card", "play"),
    Key(("c",), "conclude", "c", "conclude your calata (M5.4)", "play"),
    Key(("x",), "cancel", "x", "ANNULLA: undo your whole calata (M5.5.6)", "play"),
    Key(("s", "exclamation_mark"), "stop", "s or !", "Stop! (once per smazzata, M9)", "play"),
    Key(("y",), "give_up", "y", "give up your Stop! (−15, M9.6)", "play"),
    Key(("q",), "abandon", "q", "ABBANDONA (asks to confirm; −15, M11.6)", "play"),
    Key(("k",), "ready", "k", "ready for the next smazzata (long match, M13.4)", "play"),
    Key(("e",), "leave", "e", "leave the long match during the pause (M13.5)", "play"),
    # -- screen
    SORT,
    Key(("w",), "removed", "w", "show or hide the two removed cards (P1)", "screen"),
    REFRESH, HELP, DONE,
)

# Classic Machiavelli (C1-C11): turn by turn, so no race; the same letters where the two games
# have a like gesture (a new meld g, attach a, move m/n, end c, give up x, leave e).
CLASSIC_KEYS: tuple[Key, ...] = (
    *SELECT,
    Key(("d",), "draw", "d", "draw one card from the stock, which ends your turn (C5)", "play"),
    Key(("g",), "lay", "g", "put the selected hand cards down as a new meld (C5)", "play"),
    Key(("a",), "attach", "a", "add the selected hand card to the meld at the cursor (C5)",
        "play"),
    Key(("m",), "move", "m", "move the picked table card to the meld at the cursor (C3)",
        "play"),
    Key(("n",), "new", "n", "move the picked table card into a new meld (C3)", "play"),
    Key(("j",), "swap", "j", "swap the selected hand card for the joker at the cursor (C2)",
        "play"),
    Key(("c",), "end", "c", "end your turn: the table in order, a hand card played (C5, C8)",
        "play"),
    Key(("x",), "restore", "x", "give up the turn: the table as it was, a penalty card (C6)",
        "play"),
    Key(("e",), "end_session", "e", "between two hands of an open session: end it (C11)",
        "play"),
    SORT, REFRESH, HELP, DONE,
)


def by_key(keys: tuple[Key, ...]) -> dict[str, str]:
    """Textual key name -> the screen's `do_<name>` (the label and digit ranges aside)."""
    return {k: key.name for key in keys for k in key.keys if "…" not in k}


BY_KEY = by_key(KEYS)
CLASSIC_BY_KEY = by_key(CLASSIC_KEYS)

GROUPS = (("select", "Selecting"), ("play", "Playing"), ("screen", "Screen"))

LEGEND = (
    ("7♣", "consolidated: definitive"),
    ("7♣ underlined", "confirmed, not yet consolidated (a chain may still reach it, M5.5.8)"),
    ("7♣ on a colour", "on trial: placed by that player's open calata (M5.4.3)"),
    ("7♣ reversed", "held by the player of that colour (M6.6): not selectable"),
    ("meld number on a colour", "in the zone of that player's open calata (M6.6)"),
    ("meld number red, !", "the meld is irregular right now"),
    ("meld number ?", "changed since the last snapshot (the next one tells)"),
)

CLASSIC_LEGEND = (
    ("▶", "whose turn it is (and the time left, when the turns are timed: C7)"),
    ("opened", "the player has made the opening (C8; always, without an opening rule)"),
    ("JK=9♥", "a joker on the table and the card it stands for (C2)"),
    ("meld number red, !", "not a valid meld now: the turn cannot end so (C5)"),
    ("meld number ?", "changed since the last snapshot (the next one tells)"),
)

HINT = "d draw p declare g diretta a attach l place t take m move c conclude x annulla ?"
CLASSIC_HINT = "d draw g meld a attach Space pick m move n new j joker c end x restore ?"


def help_text(keys: tuple[Key, ...] = KEYS,
              legend: tuple[tuple[str, str], ...] = LEGEND) -> str:
    """The help panel (and docs/play.md's key table) as plain text."""
    lines: list[str] = []
    for group, title in GROUPS:
        lines.append(title)
        for key in keys:
            if key.group == group:
                lines.append(f"  {key.shown:<7} {key.text}")
    lines.append("Colours" if legend is LEGEND else "On screen")
    lines.extend(f"  {what}: {means}" for what, means in legend)
    return "\n".join(lines)


def classic_help_text() -> str:
    return help_text(CLASSIC_KEYS, CLASSIC_LEGEND)
