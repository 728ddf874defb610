"""Events, refusals and actions in plain words, for the table's log (issue 15, P3, P4).

A chain notification names what fell and whose failed calata caused it (P3, M5.5.8); a lost race
names who got there first and the event where they did (M6.4); every refusal keeps the server's
human message, its card names written as people read them (`7H` -> `7♥`). What the classic
table's words (`classic_words.py`) say the same way is here too: a server sentence made human
(`human`), an event line's start (`told`) and its words for an unknown kind (`other_event`), a
meld named by its number and first cards (`meld_words`), a move (`move_words`), a refusal of
none of our actions (`session_refusal`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2

from .cards import face, faces
from .model_base import AnyModel, LogLine

if TYPE_CHECKING:
    from .model import TableModel

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


def meld_words(model: AnyModel, meld_id: int) -> str:
    """A meld by its number on screen and its first four cards ("a new meld": not there)."""
    meld = model.meld(meld_id)
    if meld is None:
        return "a new meld"
    cards = meld.card_indexes
    shown = faces(cards[:4]) + (" …" if len(cards) > 4 else "")
    return f"meld {model.label(meld_id)} ({shown})" if shown else f"meld {model.label(meld_id)}"


def told(model: AnyModel, ev: common_pb2.Event,
         seat: int | None) -> tuple[str, list[int], str, str]:
    """What an event's line starts from: who acted (`seat`, in words; "" for the table), the
    cards (indexes, and their faces) and the line's kind ("mine": the viewer's own)."""
    cards = [c.index for c in ev.cards]
    return (model.name(seat) if seat is not None else "", cards, faces(cards),
            "mine" if seat is not None and seat == model.me else "event")


def sentence(text: str) -> str:
    """A log line as a sentence: "you" or "your" first is capitalised; a player's name keeps
    its case (a "youri" stays "youri")."""
    return "Y" + text[1:] if text.startswith(("you ", "you:", "your ")) else text


def other_event(model: AnyModel, ev: common_pb2.Event, who: str, shown: str) -> str:
    """An event of a kind with no words of its own: its kind, who, its cards and its detail."""
    return " ".join(x for x in (ev.kind, who, shown, human(model, ev.detail)) if x)


def seat_of(value: int) -> int | None:
    """A wire Seat (1..3) as a seat number 0..2 (None: unspecified)."""
    return value - 1 if 1 <= value <= 3 else None


def event_line(model: TableModel, ev: common_pb2.Event) -> LogLine | None:
    p = seat_of(ev.player)
    who, _, shown, kind = told(model, ev, p)
    k = ev.kind
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
        text = f"{who} attached {shown} to {meld_words(model, ev.meld)}"
    elif k == "placed":
        text = f"{who} placed {shown} on {meld_words(model, ev.meld)}"
    elif k == "took":
        text = f"{who} took {shown} from {meld_words(model, ev.meld)} (held for 10 s at most)"
    elif k == "moved":
        text = (f"{who} moved {shown} from {meld_words(model, ev.meld)} "
                f"to {meld_words(model, ev.to_meld)}")
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
        text = other_event(model, ev, who, shown)
    return LogLine(sentence(text), kind, ev.seq or None, p)


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
            return "put the held card on " + _meld_or_new(model, m)
        case rules.Move(card=c, src=src, dst=dst):
            return move_words(model, c.index, src, dst)
    names = {rules.Release: "let go", rules.Conclude: "conclude", rules.Cancel: "ANNULLA",
             rules.Stop: "Stop!", rules.GiveUp: "give up", rules.Abandon: "ABBANDONA",
             rules.Ready: "ready", rules.Leave: "leave the match"}
    return names.get(type(action), type(action).__name__.lower())


def _meld_or_new(model: AnyModel, meld_id: int | None) -> str:
    return "a new meld" if meld_id is None else f"meld {model.label(meld_id)}"


def move_words(model: AnyModel, card: int, src: int, dst: int | None) -> str:
    """A table card's move asked for, in words (`dst` None: into a new meld)."""
    return f"move {face(card)} from meld {model.label(src)} to {_meld_or_new(model, dst)}"


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
    said = human(model, message) if message else code
    if action is None:
        return session_refusal(said, code)
    asked = describe(model, action)
    if code in RACE_CODES:
        winner = _winner(model, action, code)
        if winner is not None:
            return LogLine(f"Lost the race ({asked}): {winner}. {said}", "race")
    return LogLine(f"Refused ({asked}): {said}", "refusal")


def session_refusal(said: str, code: str) -> LogLine:
    """A refusal that answers none of our actions (the session's): the table out of reach for
    now, or the server's words (`said`) and code."""
    if code == "table/unavailable":
        return LogLine("The table cannot be reached for now: reconnecting (your actions "
                       "are sent again when it is back)", "info")
    return LogLine(f"{said} [{code}]", "refusal")


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
