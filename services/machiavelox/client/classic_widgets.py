"""What the classic table screen draws, as pure functions from the model and the cursor to rich
Text (tested without a terminal), sized for 80x24 with up to six seats. The drawing of a card,
the stream's state, a seat's name, a meld's number and the cursor's marks on its cards, the
flowing of the melds along the lines, the labelled hand rows and the hint line are the
Machiavelox screen's (`widgets.py`); the rest is classic's: whose turn it is and its time (C7),
each seat's cards in hand, opening (C8) and total (C11), the stock's count, a joker with the
card it stands for (C2), a meld that is not valid right now (red `!`), the hand's and session's
ends.
"""

from __future__ import annotations

from rich.text import Text

from machiavelox import classic
from machiavelox.rules import RANK_NAMES

from . import classic_words as words
from .cards import sorted_cards
from .classic_model import ClassicModel, ClassicSeatState
from .keys import CLASSIC_HINT
from .widgets import (
    SEAT_FG,
    Cursor,
    cursor_marks,
    flow_lines,
    game_hint,
    hand_rows,
    link_mark,
    meld_head,
    mm_ss,
    put_card,
    seat_name,
)


def hand_order(model: ClassicModel, cursor: Cursor) -> list[int]:
    """The own hand in label order (sorted by suit or by rank, jokers last)."""
    return sorted_cards(model.hand, cursor.by_rank)


def stands_for(face: str) -> str:
    """A joker's wire face (``9H``) as people read it (``9♥``)."""
    if not face:
        return ""
    try:
        parsed, _ = classic.parse_face(face)
    except ValueError:
        return face
    if parsed is None:
        return face
    rank, suit = parsed
    return f"{RANK_NAMES[rank - 1]}{suit.symbol}"


def top_line(model: ClassicModel, link: str) -> Text:
    text = Text()
    text.append("Classic ", style="bold")
    text.append(f"{model.table_id} ", style="dim")
    text.append(f"hand {model.hand_number} ")
    phase = {"playing": "PLAYING", "between": "BETWEEN HANDS", "ended": "ENDED"}[model.phase]
    text.append(f"{phase} ", style="bold" if model.phase == "playing" else "bold yellow")
    text.append(f"· stock {model.stock} ")
    v = model.variants
    if v is not None and v.opening:
        text.append(f"· opening {v.opening} ")
    left = model.turn_left_s()
    if left is not None and model.turn is not None:
        who = "you" if model.turn == model.me else model.players[model.turn]
        text.append(f"· {who} {mm_ss(left)} ", style="bold red" if left < 10 else "bold")
    link_mark(text, link, model.stale)
    return text


def seat_line(model: ClassicModel, seat: ClassicSeatState) -> Text:
    text = Text()
    fg = SEAT_FG[seat.seat % len(SEAT_FG)]
    on_turn = model.turn == seat.seat and model.phase == "playing"
    text.append("▶" if on_turn else "▌", style=f"bold {fg}")
    seat_name(text, model, seat.seat, seat.name, fg)
    text.append(f"hand {model.cards_in_hand(seat):>2} · total {seat.total:>4}")
    if seat.eliminated:
        text.append(" · ELIMINATED", style="bold red")
    elif not seat.playing:
        text.append(" · not in this hand", style="dim")
    else:
        text.append(" · opened" if seat.opened else " · not opened",
                    style="green" if seat.opened else "yellow")
    if on_turn:
        text.append(" · your turn" if seat.seat == model.me else " · plays", style=f"bold {fg}")
        left = model.turn_left_s()
        if left is not None:
            text.append(f" {mm_ss(left)}", style="red" if left < 10 else "")
        if model.turn_changed:
            text.append(" (table changed)", style="dim")
    if model.standings and model.standings[0] == seat.seat and model.hand_number > 1:
        text.append(" · leads", style="dim")
    return text


def meld_chunk(model: ClassicModel, cursor: Cursor, index: int) -> Text:
    meld = model.melds[index]
    text = meld_head(cursor, index, "bold", not meld.kind and not meld.provisional,
                     meld.provisional)
    for i, card in enumerate(meld.cards):
        if i:
            text.append(" ")
        put_card(text, card, cursor_marks(cursor, index, meld.id, i, card).strip())
        stood = stands_for(meld.stands_for[i]) if i < len(meld.stands_for) else ""
        if stood:
            text.append(f"={stood}", style="dim")
    return text


def table_lines(model: ClassicModel, cursor: Cursor, width: int, height: int) -> Text:
    return flow_lines(model, cursor, meld_chunk, width, height)


def inspect_line(model: ClassicModel, cursor: Cursor, width: int = 80) -> Text:
    """The meld at the table cursor in words, or what the person may do now."""
    if cursor.area == "table" and model.melds:
        meld = model.melds[min(cursor.meld, len(model.melds) - 1)]
        text = Text(f"meld {cursor.meld + 1}: ")
        if meld.provisional:
            text.append("changed, updating", style="dim")
        elif meld.kind:
            text.append(f"a {meld.kind}")
        else:
            text.append("NOT a valid meld now (the turn cannot end so, C5)", style="bold red")
        if meld.cards:
            i = min(cursor.card, len(meld.cards) - 1)
            text.append(" · at the cursor ")
            put_card(text, meld.cards[i])
            stood = stands_for(meld.stands_for[i]) if i < len(meld.stands_for) else ""
            if stood:
                text.append(f", a joker standing for {stood} (j swaps it)")
        text.truncate(width)
        return text
    return Text(status_words(model)[:width], style="dim")


def status_words(model: ClassicModel) -> str:
    """What the table waits for, in words."""
    v = model.variants
    if model.ended:
        return words.session_result(model)
    if model.phase == "between":
        more = (" · e ends the session (open session, C11)"
                if v is not None and v.session is classic.SessionKind.OPEN else "")
        return f"{words.hand_result(model)} The next hand is dealt shortly{more}"
    if model.my_turn:
        if model.turn_changed:
            return "Your turn, the table changed: c ends it (the table in order), x gives it up"
        opening = f" (your opening: {v.opening} points, new melds only, C8)" \
            if v is not None and v.opening and model.mine is not None \
            and not model.mine.opened else ""
        return f"Your turn: g meld, a add, Space+m move, then c; or d draws{opening}"
    if model.turn is not None:
        return f"{model.name(model.turn)} plays" + (f" · {v.describe()}" if v else "")
    return ""


def hand_lines(model: ClassicModel, cursor: Cursor, width: int = 80) -> Text:
    """Your hand, each card under its label."""
    hand = hand_order(model, cursor)
    text = Text("your hand ", style="bold")
    text.append(f"({len(hand)} cards)", style="dim")
    chosen = [c for c in hand if c in cursor.selected]
    if chosen:
        text.append(f" · {len(chosen)} selected", style="bold")
    if not hand:
        text.append(" (empty)", style="dim")
    text.append_text(hand_rows(hand, cursor, width))
    return text


def hint_line(model: ClassicModel) -> Text:
    return game_hint(model, "between", "e end an open session   ? help", CLASSIC_HINT)
