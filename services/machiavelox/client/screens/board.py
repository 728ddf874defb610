"""What the two table screens share (Machiavelox's `table.py`, classic Machiavelli's
`classic_table.py`): the Play session and its link state, the message line, the drawing of the
screen's parts and its pace, the key dispatch from a key table (`keys.py`), the keys that
select (the hand cards by their labels, the melds by their numbers, the cursor on the hand or
along a meld, a table card picked to move), and the sending of an action (`send`: a simple one
by the own seat, `_simple`; one card onto the meld at the cursor, `_card_to_meld`). A table
screen says what its own cards and melds are (`own_cards`, `table_melds`), draws its parts
(`drawn_parts`), and makes and submits its game's actions (`seat_of`, `submit`, its own
`do_<name>`s).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from typing import ClassVar, Generic, TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from .. import widgets as W
from ..connection import Incoming, Link, TableSession
from ..keys import help_text
from ..model_base import AnyModel
from .base import play_app
from .dialogs import HelpScreen

DIGIT_WINDOW_S = 1.0  # two digits within this make one meld number
PARTS = ("top", "seats", "melds", "inspect", "log", "mine", "msg", "hint")  # top to bottom
LOG_LINES = 4  # the log's lines on screen

ModelT = TypeVar("ModelT", bound=AnyModel)
SeatT = TypeVar("SeatT")
ActionT = TypeVar("ActionT")


class BoardScreen(Screen[None], Generic[ModelT, SeatT, ActionT]):
    """A table: the screen keeps only the cursor and the selection; the game is the model's
    (built from the server's snapshots and events), and every action goes to the server."""

    KEY_NAMES: ClassVar[dict[str, str]] = {}  # Textual key -> do_<name>
    HELP: ClassVar[str] = help_text()
    MELD_LINES: ClassVar[int] = 8  # the melds' lines until the layout has sized them

    def __init__(self, model: ModelT) -> None:
        super().__init__()
        self.model = model
        self.table_id = model.table_id
        self.cursor = W.Cursor()
        self.session: TableSession | None = None
        self.link = "connecting"
        self.message = Text("")
        self._digits = ""
        self._digit_at = 0.0
        self._redraw_pending = False

    # ---------------------------------------------------------------- what a table tells
    @abstractmethod
    def own_cards(self) -> list[int]:
        """The person's cards in label order (A, B, ...)."""

    @abstractmethod
    def table_melds(self) -> list[tuple[int, list[int]]]:
        """The melds in screen order: (meld id, its cards in display order)."""

    def why_not_pick(self, meld: int, card: int) -> str:
        """Why the card at (meld index, card index) cannot be picked ("" if it can)."""
        return ""

    @abstractmethod
    def incoming(self, item: Incoming) -> None:
        """What the session brings (a server message, a note about the link), taken into the
        model and the screen."""

    @abstractmethod
    def drawn_parts(self, width: int, melds_height: int) -> dict[str, Text]:
        """The parts of the screen but the log and the message line, by id (`PARTS`), for a
        screen `width` wide whose melds have `melds_height` lines."""

    @abstractmethod
    def seat_of(self, me: int) -> SeatT:
        """The viewer's seat number as this game's actions name it."""

    @abstractmethod
    def submit(self, session: TableSession, action: ActionT) -> str:
        """Send this game's `action` on the session; its id."""

    @abstractmethod
    def _move_to(self, dst: int | None) -> None:
        """The picked (or held) table card onto meld `dst` (None: into a new meld)."""

    # ---------------------------------------------------------------- the screen's life
    def compose(self) -> ComposeResult:
        for part in PARTS:
            yield Static(id=part)

    def redraw(self) -> None:
        self._redraw_pending = False
        if not self.is_mounted:
            return
        width = max(20, self.size.width or 80)
        melds_height = max(1, self.query_one("#melds", Static).size.height or self.MELD_LINES)
        drawn = {**self.drawn_parts(width, melds_height),
                 "log": W.log_lines(self.model, LOG_LINES), "msg": self.message}
        for part in PARTS:
            self.query_one(f"#{part}", Static).update(drawn[part])

    def on_mount(self) -> None:
        app = play_app(self)
        self.session = app.gateway.session(self.table_id, self.incoming,
                                           **app.session_options)
        self.run_worker(self.session.run(), exclusive=True, group="session")
        self.set_interval(0.5, self.redraw)  # the clocks
        self.redraw()

    async def on_unmount(self) -> None:
        await self.leave_table()

    async def leave_table(self) -> None:
        if self.session is not None:
            self.session.stop()

    def link_note(self, item: Link, over: bool) -> None:
        """A note about the stream on the message line (not once the game is over)."""
        self.link = item.state
        if over:
            pass  # the result stays on the message line
        elif item.state in ("reconnecting", "closed") and item.detail:
            self.say(item.detail, "yellow" if item.state == "reconnecting" else "red")
        elif item.detail.startswith("table/"):
            self.say(item.detail, "yellow")

    def schedule_redraw(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            self.set_timer(0.03, self.redraw)

    def say(self, text: str, style: str = "") -> None:
        self.message = Text(text[:400], style=style)

    def _clamp(self) -> None:
        """Keep the cursor on something that exists after the table changed."""
        c = self.cursor
        mine = self.own_cards()
        melds = self.table_melds()
        c.selected &= set(mine)
        c.mine = min(c.mine, max(0, len(mine) - 1))
        c.meld = min(c.meld, max(0, len(melds) - 1))
        if melds:
            c.card = min(c.card, max(0, len(melds[c.meld][1]) - 1))
        if c.picked is not None and not any(c.picked[1] in cards for _, cards in melds):
            c.picked = None

    # ---------------------------------------------------------------- keys
    def on_key(self, event: events.Key) -> None:
        ch = event.character or ""
        name = self.KEY_NAMES.get(event.key)
        if len(ch) == 1 and ch.isalpha() and ch.isupper():
            name = "label"
        elif len(ch) == 1 and ch.isdigit():
            name = "number"
        if name is None:
            return
        event.stop()
        event.prevent_default()
        handler = getattr(self, f"do_{name}")
        if name in ("cursor", "meld"):
            handler(event.key)
        elif name in ("label", "number"):
            handler(ch)
        else:
            handler()
        self._clamp()
        self.redraw()

    # selecting
    def do_cursor(self, key: str) -> None:
        step = 1 if key == "right" else -1
        c = self.cursor
        melds = self.table_melds()
        if c.area == "hand":
            n = len(self.own_cards())
            c.mine = (c.mine + step) % n if n else 0
        elif melds:
            n = len(melds[c.meld][1])
            c.card = (c.card + step) % n if n else 0

    def do_meld(self, key: str) -> None:
        c, n = self.cursor, len(self.table_melds())
        if not n:
            self.say("there is no meld on the table yet", "yellow")
            return
        if c.area == "table":
            c.meld = (c.meld + (1 if key == "down" else -1)) % n
            c.card = 0
        c.area = "table"

    def do_area(self) -> None:
        self.cursor.area = "table" if self.cursor.area == "hand" and self.table_melds() \
            else "hand"

    def do_toggle(self) -> None:
        c = self.cursor
        if c.area == "hand":
            mine = self.own_cards()
            if mine:
                c.selected ^= {mine[c.mine]}
            return
        melds = self.table_melds()
        if melds and melds[c.meld][1]:
            why = self.why_not_pick(c.meld, c.card)
            if why:
                self.say(why, "yellow")
                return
            meld_id, cards = melds[c.meld]
            pick = (meld_id, cards[c.card])
            c.picked = None if c.picked == pick else pick

    def do_label(self, ch: str) -> None:
        c = self.cursor
        i = W.LABELS.index(ch)
        mine = self.own_cards()
        if i >= len(mine):
            self.say(f"no card is labelled {ch}", "yellow")
            return
        c.area, c.mine = "hand", i
        c.selected ^= {mine[i]}

    def do_number(self, ch: str) -> None:
        c, n = self.cursor, len(self.table_melds())
        now = time.monotonic()
        joined = self._digits + ch
        if self._digits and now - self._digit_at < DIGIT_WINDOW_S and int(joined) <= n:
            self._digits = joined
        else:
            self._digits = ch
        self._digit_at = now
        number = int(self._digits)
        if not 1 <= number <= n:
            self.say(f"there is no meld {number}", "yellow")
            return
        c.area, c.meld, c.card = "table", number - 1, 0

    def do_clear(self) -> None:
        self.cursor.selected.clear()
        self.cursor.picked = None
        self._digits = ""

    # ---------------------------------------------------------------- helpers for actions
    def _chosen(self, pool: list[int]) -> list[int]:
        """The selected cards of `pool`, else the one under the hand cursor if in it."""
        c = self.cursor
        mine = self.own_cards()
        chosen = [x for x in mine if x in c.selected and x in pool]
        if chosen:
            return chosen
        if c.area == "hand" and mine and mine[c.mine] in pool:
            return [mine[c.mine]]
        return []

    def _one(self, pool: list[int], what: str) -> int | None:
        chosen = self._chosen(pool)
        if len(chosen) == 1:
            return chosen[0]
        if not chosen and len(pool) == 1:
            return pool[0]
        self.say(f"select one card of your {what} (its letter, or Space)" if not chosen else
                 f"select only one card of your {what} ({len(chosen)} are selected)", "yellow")
        return None

    def _target(self) -> int | None:
        """The id of the meld at the cursor."""
        melds = self.table_melds()
        if not melds:
            self.say("there is no meld on the table: ↑/↓ or its number picks one", "yellow")
            return None
        return melds[self.cursor.meld][0]

    def _table_card(self) -> tuple[int, int] | None:
        """(meld id, card) at the table cursor."""
        c, melds = self.cursor, self.table_melds()
        if c.area != "table" or not melds or not melds[c.meld][1]:
            self.say("go to the table card first (↑/↓ or a meld number, then ←/→)", "yellow")
            return None
        meld_id, cards = melds[c.meld]
        return meld_id, cards[c.card]

    def _done_with(self, cards: list[int]) -> None:
        self.cursor.selected -= set(cards)

    @property
    def seat(self) -> SeatT | None:
        """The viewer's seat (None: a table it does not sit at)."""
        return self.seat_of(self.model.me) if self.model.me is not None else None

    def send(self, action: ActionT) -> None:
        if self.session is None or self.model.ended:
            return  # (a key pressed once the table is over: its result stays on the line)
        action_id = self.submit(self.session, action)
        self.model.sent[action_id] = action
        self.say(f"sent: {self.model.describe(action)}", "dim")

    def _simple(self, kind: Callable[[SeatT], ActionT]) -> None:
        """An action of the own seat alone (draw, end the turn, ...)."""
        if self.seat is not None:
            self.send(kind(self.seat))

    def _card_to_meld(self, pool: list[int], what: str,
                      action: Callable[[SeatT, int, int], ActionT]) -> None:
        """One card of `pool` (the person's `what`) onto the meld at the cursor: `action(seat,
        card, meld id)` sent."""
        card = self._one(pool, what)
        meld = self._target() if card is not None else None
        if self.seat is not None and card is not None and meld is not None:
            self.send(action(self.seat, card, meld))
            self._done_with([card])

    # acting
    def do_new(self) -> None:
        """The picked (or held) table card into a new meld."""
        self._move_to(None)

    # screen
    def do_sort(self) -> None:
        self.cursor.by_rank = not self.cursor.by_rank

    def do_refresh(self) -> None:
        if self.session is not None:
            self.session.want_view()

    def do_help(self) -> None:
        self.app.push_screen(HelpScreen(self.HELP))
