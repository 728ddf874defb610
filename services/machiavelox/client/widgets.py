"""What the table screen draws, as pure functions from the model and the cursor to rich Text
(so they are tested without a terminal). Sized for 80x24: the melds flow along the lines, the
hand wraps at 20 cards a line.

Each card carries its status (P2, M6.6) in style and colour, one colour per seat: consolidated
cards plain; confirmed-not-consolidated underlined; on trial on the background of whose calata
it is; held reversed in the holder's colour. A meld's number is on the colour of the open
calata whose zone it is in, red with `!` when the meld is irregular, `?` when it changed since
the last snapshot. The line under the table says the same in words for the card at the cursor.
The classic table's drawing (`classic_widgets.py`) shares the cursor, a card's face and colour
(`put_card`), the stream's state (`link_mark`), a seat's name (`seat_name`), a meld's number
(`meld_head`) and the cursor's marks on its cards (`cursor_marks`), the melds' flow along the
lines (`flow_lines`), the labelled hand (`hand_rows`), the hint line (`game_hint`), the log and
the six seat colours.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from rich.text import Text

from .cards import face, is_joker, is_red, sorted_cards
from .keys import HINT
from .model import Meld, SeatState, TableModel
from .model_base import AnyModel, LogLine

# p1 blue, p2 magenta, p3 green (and at a classic table p4 orange, p5 cyan, p6 yellow)
SEAT_FG = ("#5fa8ff", "#f07ce6", "#6bdc6b", "#ffa94d", "#4fd6d6", "#e8d44d")
SEAT_BG = ("#1b3d6b", "#5e1f5a", "#1f5226", "#6b3d12", "#14524f", "#5a5214")
JOKER_FG = "#b197fc"
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
SLOT = 4  # a hand card's width: "10♥ "
LINK = {"live": ("●", "green"), "connecting": ("○", "yellow"),
        "reconnecting": ("◌", "yellow"), "closed": ("✕", "red")}  # the stream: mark, style
ModelT = TypeVar("ModelT", bound=AnyModel)


@dataclass
class Cursor:
    """Where the person is looking (screen state, not game state)."""

    area: str = "hand"  # hand or table
    mine: int = 0  # index into `my_cards`
    meld: int = 0  # index into model.melds
    card: int = 0  # index into that meld's cards
    selected: set[int] = field(default_factory=set)  # own cards (hand or pozzetto)
    picked: tuple[int, int] | None = None  # (meld id, card): a table card to move
    by_rank: bool = False
    show_removed: bool = True


def my_cards(model: TableModel, cursor: Cursor) -> list[int]:
    """Own cards in label order: the hand (sorted), then the pozzetto."""
    return [*sorted_cards(model.hand, cursor.by_rank), *sorted_cards(model.pozzetto)]


def mm_ss(seconds: float) -> str:
    s = int(seconds + 0.999)
    return f"{s // 60}:{s % 60:02d}" if s >= 60 else f"{s}s"


def put_card(text: Text, card: int, style: str = "") -> None:
    colour = JOKER_FG if is_joker(card) else "#ff6b6b" if is_red(card) else "#e8e8e8"
    text.append(face(card), style=f"{colour} {style}".strip())


def top_line(model: TableModel, cursor: Cursor, link: str) -> Text:
    text = Text()
    text.append("Machiavelox ", style="bold")
    text.append(f"{model.table_id} ", style="dim")
    phase = model.phase.upper()
    if model.phase == "frozen" and model.stopper is not None:
        phase = f"STOP! by {model.players[model.stopper]}"
    text.append(f"{phase} ", style="bold yellow" if model.phase != "playing" else "bold")
    for what, left in model.clocks():
        if what in ("your calata", "your hold"):
            continue  # on your own line
        text.append(f"{what} {mm_ss(left)} ", style="red" if left < 10 else "")
    if cursor.show_removed and model.removed:
        text.append("removed ", style="dim")
        for c in model.removed:
            put_card(text, c)
            text.append(" ")
    link_mark(text, link, model.stale)
    return text


def link_mark(text: Text, link: str, stale: bool) -> None:
    """The stream's state, at the end of the top line (⟳: a fresh snapshot is due). Both
    games'."""
    mark, style = LINK.get(link, ("?", ""))
    text.append(f"{mark} {link}", style=style)
    if stale:
        text.append(" ⟳", style="dim")


def seat_line(model: TableModel, seat: SeatState) -> Text:
    text = Text()
    fg = SEAT_FG[seat.seat]
    text.append("▌", style=fg)
    seat_name(text, model, seat.seat, seat.name, fg)
    text.append(f"hand {model.cards_in_hand(seat):>2} · tallone {seat.tallone:>2}")
    if seat.out:
        since = ""
        if seat.out_since_ms is not None:
            ago = (model.clock.now() - seat.out_since_ms) / 1000 / model.clock.scale
            since = f" {mm_ss(max(0.0, ago))} ago"
        text.append(f" · {seat.status.upper()}{since}", style="bold red")
    elif seat.status in ("dormant", "frozen"):
        text.append(f" · {seat.status}", style="yellow")
    if seat.seat != model.me and seat.pozzetto:
        text.append(" · pozz ")
        for c in seat.pozzetto:
            put_card(text, c)
            text.append(" ")
    left = dict(model.seat_clocks(seat))
    if seat.calata_open:
        text.append(" · calata" + (f" {mm_ss(left['calata'])}" if "calata" in left else ""),
                    style=fg)
        if seat.zone:
            text.append(" zone " + ",".join(model.label(m) for m in seat.zone), style=fg)
    if seat.holding is not None:
        text.append(" · holds ")
        put_card(text, seat.holding, "reverse")
        if "hold" in left:
            text.append(f" {mm_ss(left['hold'])}")
    if "abandons" in left and not seat.out:
        absent = model.absent_for_s(seat)
        text.append(f" · absent {mm_ss(absent or 0)}, abandons in {mm_ss(left['abandons'])}",
                    style="yellow")
    if seat.said_stop:
        text.append(" · Stop! used", style="dim")
    if seat.ready:
        text.append(" · ready", style="green")
    return text


def seat_name(text: Text, model: AnyModel, seat: int, name: str, fg: str) -> None:
    """A seat's number and name (12 letters at most; "(you)": the viewer's), in its colour, in
    a column of 19. Both games'."""
    who = f"p{seat + 1} {name[:12]}" + (" (you)" if seat == model.me else "")
    text.append(f"{who:<19}", style=f"bold {fg}")


def _card_style(model: TableModel, meld: Meld, i: int) -> str:
    tc = meld.cards[i]
    if tc.held_by is not None:
        return f"reverse bold on {SEAT_BG[tc.held_by]}"
    if tc.status == "trial" and tc.trial_by is not None:
        return f"on {SEAT_BG[tc.trial_by]}"
    if tc.status == "confirmed":
        return "underline"
    return ""


def meld_chunk(model: TableModel, cursor: Cursor, index: int) -> Text:
    meld = model.melds[index]
    zones = model.zones(meld.id)
    text = meld_head(cursor, index, f"bold on {SEAT_BG[zones[0]]}" if zones else "bold",
                     not meld.regular, meld.provisional)
    for i, tc in enumerate(meld.cards):
        if i:
            text.append(" ")
        put_card(text, tc.card,
                 _card_style(model, meld, i) + cursor_marks(cursor, index, meld.id, i, tc.card))
    return text


def meld_head(cursor: Cursor, index: int, style: str, bad: bool, provisional: bool) -> Text:
    """A meld's number on screen (from 1) and a space: red with `!` when `bad`, `?` when
    `provisional` (changed since the last snapshot), reversed at the table cursor. Both
    games' melds."""
    label = str(index + 1)
    if bad:
        label += "!"
        style += " red"
    if provisional:
        label += "?"
    if cursor.area == "table" and cursor.meld == index:
        style += " reverse"
    text = Text()
    text.append(label, style=style)
    text.append(" ")
    return text


def cursor_marks(cursor: Cursor, index: int, meld_id: int, i: int, card: int) -> str:
    """The cursor's marks on card `i` (`card`) of meld `index` (`meld_id`): picked to move,
    bold reversed; at the table cursor, underlined bold (each after a space). Both games'."""
    style = ""
    if cursor.picked == (meld_id, card):
        style += " bold reverse"
    if cursor.area == "table" and cursor.meld == index and cursor.card == i:
        style += " underline bold"
    return style


def table_lines(model: TableModel, cursor: Cursor, width: int, height: int) -> Text:
    """The melds flowing along `height` lines of `width`, the cursor's line kept in sight."""
    return flow_lines(model, cursor, meld_chunk, width, height)


def flow_lines(model: ModelT, cursor: Cursor, chunk: Callable[[ModelT, Cursor, int], Text],
               width: int, height: int) -> Text:
    """The model's melds (each drawn by `chunk(model, cursor, index)`) flowing along `height`
    lines of `width`; the line of the table cursor's meld kept in sight (from the top when
    the cursor is on the hand). Both games' tables."""
    chunks = [chunk(model, cursor, i) for i in range(len(model.melds))]
    at = cursor.meld if cursor.area == "table" else None
    if not chunks:
        return Text("(no meld on the table yet)", style="dim")
    lines: list[Text] = [Text()]
    cursor_line = 0
    for i, chunk_text in enumerate(chunks):
        if lines[-1].cell_len and lines[-1].cell_len + 3 + chunk_text.cell_len > width:
            lines.append(Text())
        if lines[-1].cell_len:
            lines[-1].append(" │ ", style="dim")
        lines[-1].append_text(chunk_text)
        if i == at:
            cursor_line = len(lines) - 1
    start = max(0, min(cursor_line - height + 1, len(lines) - height)) if at is not None else 0
    shown = lines[start:start + height]
    out = Text("\n").join(shown)
    if len(lines) > height:
        out.append(f"  ({len(chunks)} melds; ↑/↓ for more)", style="dim")
    return out


def inspect_line(model: TableModel, cursor: Cursor) -> Text:
    """The card at the table cursor in words (P2, M6.6)."""
    if cursor.area != "table" or not model.melds:
        return Text()
    meld = model.melds[min(cursor.meld, len(model.melds) - 1)]
    text = Text(f"meld {cursor.meld + 1}: ")
    text.append("regular" if meld.regular else "IRREGULAR",
                style="" if meld.regular else "bold red")
    text.append(f", {meld.status}")
    zones = model.zones(meld.id)
    if zones:
        text.append(", zone of " + " and ".join(model.name(z) for z in zones))
    if meld.cards:
        tc = meld.cards[min(cursor.card, len(meld.cards) - 1)]
        text.append(" · ")
        put_card(text, tc.card)
        if tc.held_by is not None:
            text.append(f" held by {model.name(tc.held_by)}", style=SEAT_FG[tc.held_by])
        elif tc.status == "trial" and tc.trial_by is not None:
            text.append(f" on trial by {model.name(tc.trial_by)}", style=SEAT_FG[tc.trial_by])
        else:
            text.append(f" {tc.status}")
    if meld.provisional:
        text.append(" (updating)", style="dim")
    return text


def mine_lines(model: TableModel, cursor: Cursor, width: int = 80) -> Text:
    """Your pozzetto (or the tiebreak's common one), then your hand, each card under its label."""
    cards = my_cards(model, cursor)
    n_hand = len(model.hand)
    text = Text()
    pozz = cards[n_hand:]
    title = "common " if model.in_tiebreak and model.common else "pozzetto "
    if model.phase == "tiebreak" and not model.in_tiebreak and model.common:
        text.append("tiebreak's common pozzetto ", style="bold")  # face-up for all (M10.2)
        for c in model.common:
            put_card(text, c)
            text.append(" ")
        text.append("\n")
    text.append(title, style="bold")
    if not pozz:
        text.append("(empty)", style="dim")
    for j, c in enumerate(pozz):
        i = n_hand + j
        text.append(f"{LABELS[i] if i < len(LABELS) else ' '}:", style="dim")
        put_card(text, c, _mine_style(cursor, i, c))
        text.append(" ")
    hand = cards[:n_hand]
    if not hand:
        text.append("\nhand (empty)", style="dim")
    text.append_text(hand_rows(hand, cursor, width))
    return text


def hand_rows(hand: list[int], cursor: Cursor, width: int) -> Text:
    """The hand in rows, each card under the label that selects it (each row starts with a
    line break). Both games' hands."""
    text = Text()
    per_line = max(1, (width - 1) // SLOT)
    for start in range(0, len(hand), per_line):
        labels = Text("\n")
        row = Text("\n")
        for i in range(start, min(start + per_line, len(hand))):
            c = hand[i]
            mark = LABELS[i] if i < len(LABELS) else " "
            labels.append(f"{mark:<{SLOT}}", style="bold" if c in cursor.selected else "dim")
            put_card(row, c, _mine_style(cursor, i, c))
            row.append(" " * (SLOT - len(face(c))))
        text.append_text(labels)
        text.append_text(row)
    return text


def _mine_style(cursor: Cursor, i: int, card: int) -> str:
    style = ""
    if card in cursor.selected:
        style += " reverse"
    if cursor.area == "hand" and cursor.mine == i:
        style += " underline bold"
    return style.strip()


def hint_line(model: TableModel) -> Text:
    return game_hint(model, "pause", "k ready for the next smazzata   e leave the match   ? help",
                     HINT)


def game_hint(model: AnyModel, waiting: str, waiting_keys: str, keys: str) -> Text:
    """The hint line: Enter back to the menu once the game is over; the keys of phase
    `waiting` (between two deals) in it; else the game's `keys`. Both games'."""
    if model.ended:
        return Text("Enter: back to the menu   ? help", style="bold")
    if model.phase == waiting:
        return Text(waiting_keys, style="bold")
    return Text(keys, style="dim")


def result_text(model: TableModel) -> str:
    """The end of the smazzata in words (M12)."""
    r = model.result
    if r is None:
        return "The smazzata is over." + (f" {model.match_over}" if model.match_over else "")
    scores = ", ".join(f"{model.players[i]} {r.scores[i]:+d}" for i in range(min(3, len(r.scores))))
    if r.draw:
        tied = [model.name(s - 1) for s in r.draw]
        who = "A draw (patta) between " + ", ".join(tied[:-1]) + " and " + tied[-1]
    elif 1 <= r.winner <= 3:
        who = f"{model.players[r.winner - 1]} (p{r.winner}) won"
        if r.winner - 1 == model.me:
            who = "You won!"
    else:
        who = "nobody won"
    how = f" ({r.ending})" if r.ending and r.ending != "draw" else ""
    return f"{who}{how}. Points: {scores}."


class Logged(Protocol):
    """A table with a log (either game's model)."""

    me: int | None
    log: list[LogLine]


def log_lines(model: Logged, height: int) -> Text:
    styles = {"mine": SEAT_FG[model.me] if model.me is not None else "", "refusal": "red",
              "race": "bold #ffa94d", "chain": "bold #ffd43b", "info": "dim"}
    text = Text()
    for i, line in enumerate(model.log[-height:]):
        if i:
            text.append("\n")
        style = styles.get(line.kind, "")
        if line.kind == "event" and line.seat is not None:
            style = SEAT_FG[line.seat]
        text.append(line.text, style=style)
    return text
