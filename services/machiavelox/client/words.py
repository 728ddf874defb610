"""Events, refusals and actions in plain words, for the table's log (issue 15, P3, P4).

A chain notification names what fell and whose failed calata caused it (P3, M5.5.8); a lost race
names who got there first and the event where they did (M6.4); every refusal keeps the server's
human message, its card names written as people read them (`7H` -> `7♥`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2

from .cards import face, faces

if TYPE_CHECKING:
    from .model import LogLine, TableModel

_SEAT_WORD = re.compile(r"\bp([1-6])\b")  # (p4..p6: classic tables only)
_CARD_WORD = re.compile(r"\b(10|[2-9AJQK])([SHDC])\b")
_SYMBOL = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
_REASONS = {"explicit": "concluded", "auto": "its work in order", "timeout": "40 s up",
            "aborted": "declared cards taken back"}
RACE_CODES = frozenset({"card/held", "card/not-in-meld", "meld/unknown", "card/reserved"})


class Seated(Protocol):
    """A table with its players' names in seat order (either game's model)."""

    players: list[str]


def human(model: Seated, text: str) -> str:
    """A server sentence with seats named (`p2` -> `bob (p2)`) and cards drawn (`7H` -> `7♥`)."""
    def seat(m: re.Match[str]) -> str:
        i = int(m.group(1)) - 1
        return f"{model.players[i]} (p{i + 1})" if i < len(model.players) else m.group(0)

    text = _SEAT_WORD.sub(seat, text)
    return _CARD_WORD.sub(lambda m: m.group(1) + _SYMBOL[m.group(2)], text)


def _meld(model: TableModel, meld_id: int) -> str:
    meld = model.meld(meld_id)
    if meld is None:
        return "a new meld"
    shown = faces(tc.card for tc in meld.cards[:4]) + (" …" if len(meld.cards) > 4 else "")
    return f"meld {model.label(meld_id)} ({shown})" if shown else f"meld {model.label(meld_id)}"


def seat_of(value: int) -> int | None:
    """A wire Seat (1..3) as a seat number 0..2 (None: unspecified)."""
    return value - 1 if 1 <= value <= 3 else None


def event_line(model: TableModel, ev: common_pb2.Event) -> LogLine | None:
    from .model import LogLine

    p = seat_of(ev.player)
    who = model.name(p) if p is not None else ""
    cards = [c.index for c in ev.cards]
    shown = faces(cards)
    k = ev.kind
    kind = "mine" if p is not None and p == model.me else "event"
    text: str
    if k == "drew":
        got = shown if shown else "a card"
        text = f"{who} drew {got}" + (" (forced, M7.3)" if ev.detail == "forced" else "")
    elif k == "forced-draw":
        text = "2 minutes with no draw and no calata: everyone with a tallone draws one (M7.3)"
    elif k == "declared":
        text = f"{who} declared {shown} into the pozzetto"
    elif k == "undeclared":
        hand = "your hand" if p == model.me else f"the hand of {who}"
        text = (f"{shown} not placed: back to {hand}" if ev.detail == "not placed"
                else f"{who} took {shown} back from the pozzetto")
    elif k == "calata-opened":
        text = f"{who} opened a calata"
    elif k == "direct":
        text = f"{who} put down {shown} as a new meld (giocata diretta)"
    elif k == "attached":
        text = f"{who} attached {shown} to {_meld(model, ev.meld)}"
    elif k == "placed":
        text = f"{who} placed {shown} on {_meld(model, ev.meld)}"
    elif k == "took":
        text = f"{who} took {shown} from {_meld(model, ev.meld)} (held for 10 s at most)"
    elif k == "moved":
        text = f"{who} moved {shown} from {_meld(model, ev.meld)} to {_meld(model, ev.to_meld)}"
    elif k == "released":
        text = f"{who} let go of {shown}"
    elif k == "confirmed":
        why = _REASONS.get(ev.detail, ev.detail)
        text = f"{who}: calata confirmed" + (f" ({why})" if why else "")
    elif k == "failed":
        why = _REASONS.get(ev.detail, ev.detail)
        back = f": {shown} back to the hand" if shown else ""
        text = f"{who}: calata failed{back}" + (f" ({why})" if why else "")
    elif k == "void":
        text = f"{who}: calata void, no own card placed: its moves are undone (M5.3.7)"
    elif k == "cancelled":
        text = f"{who}: ANNULLA, the whole calata is undone (M5.5.6)"
    elif k == "chain":
        cause = seat_of(ev.by)
        whose = "your" if p == model.me else f"{model.players[p]}'s" if p is not None else "the"
        reason = human(model, ev.detail) if ev.detail else \
            f"undone because the calata of {model.name(cause)} failed"
        text = f"chain: {whose} {shown or 'work'} fell, {reason}"
        kind = "race" if "beaten on time" in ev.detail and p == model.me else "chain"
    elif k == "consolidated":
        text = f"{who}: calata consolidated (no chain can reach it now)"
    elif k == "stop":
        text = f"{who} said Stop! everyone else is frozen for up to 3 minutes (M9)"
    elif k == "resumed":
        text = "the freeze is over: play resumes (suspended calate get a full 40 s)"
    elif k in ("eliminated", "abandoned"):
        verb = "are" if p == model.me else "is"
        text = f"{who} {verb} {k} (−15)" + (f": {human(model, ev.detail)}" if ev.detail else "")
    elif k == "closed":
        text = f"{who} closed!"
    elif k == "silence":
        text = "2 minutes of silence with every tallone empty: the smazzata ends by count (M10.1)"
    elif k == "tiebreak":
        text = f"tiebreak, 2 minutes: the common pozzetto is {shown} (M10.2)"
    elif k == "ended":
        text = f"the smazzata is over: {human(model, ev.detail)}"
    elif k == "reserved":
        text = f"ping-pong: {shown} is reserved to {who} (M6.5)"
    elif k == "pause":
        text = f"pause (1 minute at most): {human(model, ev.detail)}"
    elif k == "ready":
        text = f"{who} {'are' if p == model.me else 'is'} ready for the next smazzata"
    elif k == "left":
        text = f"{who} left the match" + (f" ({ev.detail})" if ev.detail else "")
    elif k == "smazzata":
        text = f"a new smazzata begins ({ev.detail})"
    elif k == "match-ended":
        text = f"the match is over: {human(model, ev.detail)}"
    elif k == "interrupted":
        text = f"the table was not served for {ev.detail} ms: its clocks stood still"
    else:
        text = " ".join(x for x in (k, who, shown, human(model, ev.detail)) if x)
    if text.startswith(("you ", "you:")):
        text = "Y" + text[1:]
    return LogLine(text, kind, ev.seq or None, p)


def describe(model: TableModel, action: rules.Action | None) -> str:
    """What the person asked for, in words."""
    match action:
        case None:
            return "the session"
        case rules.Draw():
            return "draw"
        case rules.Declare(cards=cs):
            return f"declare {faces(c.index for c in cs)}"
        case rules.Undeclare(cards=cs):
            return f"take back {faces(c.index for c in cs)}"
        case rules.Direct(cards=cs):
            return f"giocata diretta {faces(c.index for c in cs)}"
        case rules.Attach(card=c, meld=m):
            return f"attach {face(c.index)} to meld {model.label(m)}"
        case rules.Place(card=c, meld=m):
            return f"place {face(c.index)} on meld {model.label(m)}"
        case rules.Take(card=c, meld=m):
            return f"take {face(c.index)} from meld {model.label(m)}"
        case rules.Put(meld=m):
            return "put the held card on " + ("a new meld" if m is None
                                              else f"meld {model.label(m)}")
        case rules.Move(card=c, src=src, dst=dst):
            to = "a new meld" if dst is None else f"meld {model.label(dst)}"
            return f"move {face(c.index)} from meld {model.label(src)} to {to}"
    names = {rules.Release: "let go", rules.Conclude: "conclude", rules.Cancel: "ANNULLA",
             rules.Stop: "Stop!", rules.GiveUp: "give up", rules.Abandon: "ABBANDONA",
             rules.Ready: "ready", rules.Leave: "leave the match"}
    return names.get(type(action), type(action).__name__.lower())


def _race_card(action: rules.Action | None) -> int | None:
    match action:
        case rules.Take(card=c) | rules.Move(card=c) | rules.Attach(card=c) | rules.Place(card=c):
            return c.index
    return None


def _race_meld(action: rules.Action | None) -> int | None:
    match action:
        case rules.Attach(meld=m) | rules.Place(meld=m) | rules.Take(meld=m):
            return m
        case rules.Move(src=src, dst=dst):
            return dst if dst is not None else src
        case rules.Put(meld=m):
            return m
    return None


def refusal_line(model: TableModel, action: rules.Action | None, code: str,
                 message: str) -> LogLine:
    """A refusal, with its human message; a lost race names the winner (M6.4)."""
    from .model import LogLine

    said = human(model, message) if message else code
    if action is None:
        if code == "table/unavailable":
            return LogLine("The table cannot be reached for now: reconnecting (your actions "
                           "are sent again when it is back)", "info")
        return LogLine(f"{said} [{code}]", "refusal")
    asked = describe(model, action)
    if code in RACE_CODES:
        winner = _winner(model, action, code)
        if winner is not None:
            return LogLine(f"Lost the race ({asked}): {winner}. {said}", "race")
    return LogLine(f"Refused ({asked}): {said}", "refusal")


def _winner(model: TableModel, action: rules.Action | None, code: str) -> str | None:
    card = _race_card(action)
    if code == "card/held" and card is not None:
        holders = [s.seat for s in model.seats if s.holding == card and s.seat != model.me]
        if holders:
            touch = model.card_touch.get(card)
            at = f" ({touch.when()})" if touch else ""
            return f"{model.name(holders[0])} took {face(card)} first{at}"
    if card is not None:
        touch = model.card_touch.get(card)
        if touch is not None and touch.seat is not None and touch.seat != model.me:
            return f"{model.name(touch.seat)} {touch.kind} {face(card)} first ({touch.when()})"
    meld = _race_meld(action)
    if meld is not None:
        touch = model.meld_touch.get(meld)
        if touch is not None and touch.seat is not None and touch.seat != model.me:
            return (f"{model.name(touch.seat)} changed that meld first ({touch.kind}, "
                    f"{touch.when()})")
    return None
