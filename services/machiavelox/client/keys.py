"""Every key of the table screen, in one place: the screen dispatches on it, the help panel and
the hint line show it, docs/play.md lists it (a test checks they agree).

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


KEYS: tuple[Key, ...] = (
    # -- selecting
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
    Key(("o",), "sort", "o", "sort your hand by suit or by rank", "screen"),
    Key(("w",), "removed", "w", "show or hide the two removed cards (P1)", "screen"),
    Key(("f",), "refresh", "f", "ask the server for a fresh view", "screen"),
    Key(("question_mark", "h"), "help", "? or h", "this help", "screen"),
    Key(("enter",), "done", "Enter", "after the end (or once you are out): back to the menu",
        "screen"),
)

BY_KEY: dict[str, str] = {k: key.name for key in KEYS for k in key.keys if "…" not in k}

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

HINT = "d draw p declare g diretta a attach l place t take m move c conclude x annulla ?"


def help_text() -> str:
    """The help panel (and docs/play.md's key table) as plain text."""
    lines: list[str] = []
    for group, title in GROUPS:
        lines.append(title)
        for key in KEYS:
            if key.group == group:
                lines.append(f"  {key.shown:<7} {key.text}")
    lines.append("Colours")
    lines.extend(f"  {what}: {means}" for what, means in LEGEND)
    return "\n".join(lines)
