"""A classic Machiavelli table's events, refusals and actions in plain words, for its log and
its message line (issue 16). Like `words.py` for Machiavelox, whose `human` it shares: every
refusal keeps the server's own message, its seats named and its cards drawn as people read
them, and its stable code (`end/opening-points`, `turn/not-yours`, ...). An event line's start,
a meld's and a move's words and a refusal of none of our actions are `words.py`'s too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from machiavelox import classic
from machiavelox._gen.v1 import common_pb2

from .cards import face, faces
from .model_base import LogLine
from .words import (
    human,
    meld_words,
    move_words,
    other_event,
    sentence,
    session_refusal,
    told,
)

if TYPE_CHECKING:
    from .classic_model import ClassicModel


def seat_index(value: int) -> int | None:
    """A wire Seat (1..6) as a seat number 0..5 (None: unspecified)."""
    return value - 1 if 1 <= value <= 6 else None


def _plural(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def event_line(model: ClassicModel, ev: common_pb2.Event) -> LogLine:
    p = seat_index(ev.player)
    who, cards, shown, kind = told(model, ev, p)
    k = ev.kind
    text: str
    if k == "turn":
        text = "your turn" if p == model.me else f"{who} plays"
        kind = "info" if p != model.me else kind
    elif k == "melded":
        text = f"{who} put down {shown} as a new meld"
    elif k == "attached":
        text = f"{who} added {shown} to {meld_words(model, ev.meld)}"
    elif k == "moved":
        text = (f"{who} moved {shown} from {meld_words(model, ev.meld)} "
                f"to {meld_words(model, ev.to_meld)}")
    elif k == "swapped":
        card = face(cards[0]) if cards else "a card"
        text = f"{who} put {card} in place of the joker of {meld_words(model, ev.meld)} (C2)"
    elif k == "played":
        text = f"{who} ended the turn, {_plural(ev.count, 'card')} from the hand played"
    elif k == "opened":
        text = f"{who} made the opening (C8)"
    elif k == "drew":
        text = f"{who} drew {shown or 'a card'}"
    elif k == "timeout":
        text = f"{who}: the turn's time is up (C7)"
    elif k == "restored":
        back = f", {shown} back to the hand" if shown else ""
        text = f"{who} gave up the turn: the table as it was{back} (C6)"
    elif k == "penalty":
        got = f": {shown}" if shown else ""
        text = f"{who} drew {_plural(ev.count, 'penalty card')}{got} (C6)"
    elif k == "stock-out":
        text = "A card is due and the stock is empty: the hand ends (C10)"
    elif k == "hand-won":
        text = f"{who} won the hand!"
    elif k == "hand-ended":
        text = f"The hand is over: {human(model, ev.detail)}"
    elif k == "eliminated":
        text = f"{who} is out of the session" + (f" ({ev.detail})" if ev.detail else "")
    elif k == "ended":
        text = f"The session is over: {human(model, ev.detail)}"
    elif k == "absent":
        text = f"{who}: silent, the turn ended by absence"
    elif k == "interrupted":
        text = f"The table was not served for {ev.detail} ms: its clock stood still"
    else:
        text = other_event(model, ev, who, shown)
    return LogLine(sentence(text), kind, ev.seq or None, p)


def describe(model: ClassicModel, action: classic.ClassicAction | None) -> str:
    """What the person asked for, in words."""
    match action:
        case None:
            return "the session"
        case classic.Meld(cards=cs):
            return f"meld {faces(c.index for c in cs)}"
        case classic.Attach(card=c, meld=m):
            return f"add {face(c.index)} to meld {model.label(m)}"
        case classic.Move(card=c, src=src, dst=dst):
            return move_words(model, c.index, src, dst)
        case classic.Swap(card=c, meld=m):
            return f"swap {face(c.index)} for the joker of meld {model.label(m)}"
    names = {classic.End: "end the turn", classic.Draw: "draw", classic.Restore: "give up the turn",
             classic.EndSession: "end the session"}
    return names.get(type(action), type(action).__name__.lower())


def refusal_line(model: ClassicModel, action: classic.ClassicAction | None, code: str,
                 message: str) -> LogLine:
    """A refusal: the server's human message and its code."""
    said = human(model, message) if message else code
    if action is None:
        return session_refusal(said, code)
    return LogLine(f"Refused ({describe(model, action)}): {said} [{code}]", "refusal")


def hand_result(model: ClassicModel) -> str:
    """The last hand's end in words (C9, C10): who won, each one's penalty points."""
    h = model.last_hand
    if h is None:
        return ""
    won = ", ".join(model.name(s.value) for s in h.winners) or "nobody"
    how = "went out" if h.ending == "out" else "the stock ran out"
    pts = ", ".join(f"{model.players[i]} {h.scores[i]:+d}"
                    for i in range(min(len(model.players), len(h.scores))))
    return f"Hand {model.hand_number}: {won} won ({how}). Scores: {pts}."


def session_result(model: ClassicModel) -> str:
    """The session's end in words (C11): the winners and the totals, best first."""
    r = model.result
    if r is None:  # (the `ended` event's own words, before a snapshot tells more)
        detail = human(model, model.ended_detail)
        return "The session is over" + (f": {detail}." if detail else ".")
    won = " and ".join(model.name(s.value) for s in r.winners) or "nobody"
    won = "You won!" if [s.value for s in r.winners] == [model.me] else f"{won} won."
    totals = ", ".join(f"{model.players[s.value]} {r.totals[s.value]}" for s in r.standings
                       if s.value < len(r.totals))
    return f"{won} Totals (lowest wins): {totals}."
