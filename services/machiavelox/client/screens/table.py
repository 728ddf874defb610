"""The table: everything the rulebook's "Nel videogioco" notes ask to see (P1-P5), every action
of the rules from the keyboard (`keys.py`), every refusal with its human message.

The screen keeps only the cursor and the selection; the table is the model's (built from the
server's snapshots and events), and every action goes to the server, which decides.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from machiavelox import rules

from .. import widgets as W
from ..cards import face
from ..connection import Incoming, Link, TableSession
from ..keys import BY_KEY
from ..model import TableModel
from ..words import describe
from .base import play_app
from .dialogs import ConfirmScreen, HelpScreen

DIGIT_WINDOW_S = 1.0  # two digits within this make one meld number


class TableScreen(Screen[None]):
    def __init__(self, table_id: str, players: list[str], player: str) -> None:
        super().__init__()
        self.model = TableModel(table_id, players, player)
        self.cursor = W.Cursor()
        self.session: TableSession | None = None
        self.link = "connecting"
        self.message = Text("")
        self._digits = ""
        self._digit_at = 0.0
        self._redraw_pending = False
        self._result_shown = False

    def compose(self) -> ComposeResult:
        yield Static(id="top")
        yield Static(id="seats")
        yield Static(id="melds")
        yield Static(id="inspect")
        yield Static(id="log")
        yield Static(id="mine")
        yield Static(id="msg")
        yield Static(id="hint")

    def on_mount(self) -> None:
        app = play_app(self)
        self.session = app.gateway.session(self.model.table_id, self.incoming,
                                           **app.session_options)
        self.run_worker(self.session.run(), exclusive=True, group="session")
        self.set_interval(0.5, self.redraw)  # the clocks
        self.redraw()

    async def on_unmount(self) -> None:
        await self.leave_table()

    async def leave_table(self) -> None:
        if self.session is not None:
            self.session.stop()

    # ---------------------------------------------------------------- from the server
    def incoming(self, item: Incoming) -> None:
        if isinstance(item, Link):
            self.link = item.state
            if self.model.ended:
                pass  # the result stays on the message line
            elif item.state in ("reconnecting", "closed") and item.detail:
                self.say(item.detail, "yellow" if item.state == "reconnecting" else "red")
            elif item.detail.startswith("table/"):
                self.say(item.detail, "yellow")
        else:
            kind = item.WhichOneof("kind")
            lines = self.model.take(item)
            if kind == "refused" and lines:
                line = lines[-1]
                self.say(line.text, "bold #ffa94d" if line.kind == "race" else "red")
            elif kind == "event" and self.session is not None:
                self.session.want_view()
            if kind == "snapshot":
                self._clamp()
                if self.model.ended and self.model.result is not None and not self._result_shown:
                    self._result_shown = True
                    self.say(W.result_text(self.model) + "  Enter: back to the menu", "bold")
                    if self.session is not None:
                        self.session.stop()  # nothing more will happen at this table
        self.schedule_redraw()

    def schedule_redraw(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            self.set_timer(0.03, self.redraw)

    def say(self, text: str, style: str = "") -> None:
        self.message = Text(text[:400], style=style)

    # ---------------------------------------------------------------- drawing
    def redraw(self) -> None:
        self._redraw_pending = False
        if not self.is_mounted:
            return
        m, c = self.model, self.cursor
        width = max(20, self.size.width or 80)
        self.query_one("#top", Static).update(W.top_line(m, c, self.link))
        seats = Text("\n").join(W.seat_line(m, s) for s in m.seats)
        self.query_one("#seats", Static).update(seats)
        melds = self.query_one("#melds", Static)
        melds.update(W.table_lines(m, c, width, max(1, melds.size.height or 8)))
        self.query_one("#inspect", Static).update(W.inspect_line(m, c))
        self.query_one("#log", Static).update(W.log_lines(m, 4))
        self.query_one("#mine", Static).update(W.mine_lines(m, c, width))
        self.query_one("#msg", Static).update(self.message)
        self.query_one("#hint", Static).update(W.hint_line(m))

    def _clamp(self) -> None:
        """Keep the cursor on something that exists after the table changed."""
        c, m = self.cursor, self.model
        mine = W.my_cards(m, c)
        c.selected &= set(mine)
        c.mine = min(c.mine, max(0, len(mine) - 1))
        c.meld = min(c.meld, max(0, len(m.melds) - 1))
        if m.melds:
            c.card = min(c.card, max(0, len(m.melds[c.meld].cards) - 1))
        if c.picked is not None and m.where(c.picked[1]) is None:
            c.picked = None

    # ---------------------------------------------------------------- keys
    def on_key(self, event: events.Key) -> None:
        ch = event.character or ""
        name = BY_KEY.get(event.key)
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
        c, m = self.cursor, self.model
        if c.area == "hand":
            n = len(W.my_cards(m, c))
            c.mine = (c.mine + step) % n if n else 0
        elif m.melds:
            n = len(m.melds[c.meld].cards)
            c.card = (c.card + step) % n if n else 0

    def do_meld(self, key: str) -> None:
        c, m = self.cursor, self.model
        if not m.melds:
            self.say("there is no meld on the table yet", "yellow")
            return
        if c.area == "table":
            c.meld = (c.meld + (1 if key == "down" else -1)) % len(m.melds)
            c.card = 0
        c.area = "table"

    def do_area(self) -> None:
        self.cursor.area = "table" if self.cursor.area == "hand" and self.model.melds else "hand"

    def do_toggle(self) -> None:
        c, m = self.cursor, self.model
        if c.area == "hand":
            mine = W.my_cards(m, c)
            if mine:
                card = mine[c.mine]
                c.selected ^= {card}
            return
        if m.melds:
            meld = m.melds[c.meld]
            if meld.cards:
                tc = meld.cards[c.card]
                if tc.held_by is not None and tc.held_by != m.me:
                    self.say(f"{face(tc.card)} is held by {m.name(tc.held_by)}: not "
                             "selectable (M6.6)", "yellow")
                    return
                pick = (meld.id, tc.card)
                c.picked = None if c.picked == pick else pick

    def do_label(self, ch: str) -> None:
        c, m = self.cursor, self.model
        i = W.LABELS.index(ch)
        mine = W.my_cards(m, c)
        if i >= len(mine):
            self.say(f"no card is labelled {ch}", "yellow")
            return
        c.area, c.mine = "hand", i
        c.selected ^= {mine[i]}

    def do_number(self, ch: str) -> None:
        m, c = self.model, self.cursor
        now = time.monotonic()
        joined = self._digits + ch
        if self._digits and now - self._digit_at < DIGIT_WINDOW_S and int(joined) <= len(m.melds):
            self._digits = joined
        else:
            self._digits = ch
        self._digit_at = now
        number = int(self._digits)
        if not 1 <= number <= len(m.melds):
            self.say(f"there is no meld {number}", "yellow")
            return
        c.area, c.meld, c.card = "table", number - 1, 0

    def do_clear(self) -> None:
        self.cursor.selected.clear()
        self.cursor.picked = None
        self._digits = ""

    # ---------------------------------------------------------------- helpers for actions
    @property
    def seat(self) -> rules.Seat | None:
        return rules.Seat(self.model.me) if self.model.me is not None else None

    def send(self, action: rules.Action) -> None:
        if self.session is None:
            return
        action_id = self.session.act(action)
        self.model.sent[action_id] = action
        self.say(f"sent: {describe(self.model, action)}", "dim")

    def _chosen(self, pool: list[int]) -> list[int]:
        """The selected cards of `pool`, else the one under the hand cursor if in it."""
        c = self.cursor
        chosen = [x for x in W.my_cards(self.model, c) if x in c.selected and x in pool]
        if chosen:
            return chosen
        mine = W.my_cards(self.model, c)
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
        m, c = self.model, self.cursor
        if not m.melds:
            self.say("there is no meld on the table: ↑/↓ or its number picks one", "yellow")
            return None
        return m.melds[c.meld].id

    def _cards(self, indexes: list[int]) -> tuple[rules.Card, ...]:
        return tuple(rules.card_at(i) for i in indexes)

    def _done_with(self, cards: list[int]) -> None:
        self.cursor.selected -= set(cards)

    # ---------------------------------------------------------------- actions (keys.py)
    def do_draw(self) -> None:
        if self.seat is not None:
            self.send(rules.Draw(self.seat))

    def do_declare(self) -> None:
        cards = self._chosen(self.model.hand)
        if self.seat is None or not cards:
            self.say("select the hand cards to declare (letters or Space), then p", "yellow")
            return
        self.send(rules.Declare(self.seat, self._cards(cards)))
        self._done_with(cards)

    def do_undeclare(self) -> None:
        pool = self.model.pozzetto
        cards = self._chosen(pool) or list(pool)
        if self.seat is None or not cards:
            self.say("your pozzetto is empty", "yellow")
            return
        self.send(rules.Undeclare(self.seat, self._cards(cards)))
        self._done_with(cards)

    def do_direct(self) -> None:
        pool = self.model.pozzetto
        cards = self._chosen(pool) or list(pool)
        if self.seat is None or not cards:
            self.say("declare 3 or more cards first (p), then g puts them down", "yellow")
            return
        self.send(rules.Direct(self.seat, self._cards(cards)))
        self._done_with(cards)

    def do_attach(self) -> None:
        card = self._one(self.model.hand, "hand")
        meld = self._target() if card is not None else None
        if self.seat is not None and card is not None and meld is not None:
            self.send(rules.Attach(self.seat, rules.card_at(card), meld))
            self._done_with([card])

    def do_place(self) -> None:
        card = self._one(self.model.pozzetto, "pozzetto")
        meld = self._target() if card is not None else None
        if self.seat is not None and card is not None and meld is not None:
            self.send(rules.Place(self.seat, rules.card_at(card), meld))
            self._done_with([card])

    def _table_card(self) -> tuple[int, int] | None:
        m, c = self.model, self.cursor
        if c.area != "table" or not m.melds or not m.melds[c.meld].cards:
            self.say("go to the table card first (↑/↓ or a meld number, then ←/→)", "yellow")
            return None
        meld = m.melds[c.meld]
        return meld.id, meld.cards[c.card].card

    def do_take(self) -> None:
        at = self._table_card()
        if self.seat is not None and at is not None:
            self.send(rules.Take(self.seat, rules.card_at(at[1]), at[0]))

    def _move_to(self, dst: int | None) -> None:
        m, c = self.model, self.cursor
        me = m.mine
        if self.seat is None or me is None:
            return
        if me.holding is not None:
            self.send(rules.Put(self.seat, dst))
        elif c.picked is not None:
            src, card = c.picked
            self.send(rules.Move(self.seat, rules.card_at(card), src, dst))
            c.picked = None
        else:
            self.say("take a table card first (t), or pick one with Space on the table",
                     "yellow")

    def do_move(self) -> None:
        dst = self._target()
        if dst is not None:
            self._move_to(dst)

    def do_new(self) -> None:
        self._move_to(None)

    def _simple(self, kind: Callable[[rules.Seat], rules.Action]) -> None:
        if self.seat is not None:
            self.send(kind(self.seat))

    def do_release(self) -> None:
        self._simple(rules.Release)

    def do_conclude(self) -> None:
        self._simple(rules.Conclude)

    def do_cancel(self) -> None:
        self._simple(rules.Cancel)

    def do_stop(self) -> None:
        self._simple(rules.Stop)

    def do_give_up(self) -> None:
        self._simple(rules.GiveUp)

    def do_ready(self) -> None:
        self._simple(rules.Ready)

    def do_leave(self) -> None:
        self._simple(rules.Leave)

    def do_abandon(self) -> None:
        me = self.model.mine
        if self.model.ended or (me is not None and me.out):
            self.do_done()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._simple(rules.Abandon)
            else:
                self.say("you stay at the table", "dim")
            self.redraw()

        self.app.push_screen(ConfirmScreen(
            "ABBANDONA: leave this smazzata now?\nYou take −15 points and cannot come back "
            "(M11.6)."), answered)

    # screen
    def do_sort(self) -> None:
        self.cursor.by_rank = not self.cursor.by_rank

    def do_removed(self) -> None:
        self.cursor.show_removed = not self.cursor.show_removed

    def do_refresh(self) -> None:
        if self.session is not None:
            self.session.want_view()

    def do_help(self) -> None:
        self.app.push_screen(HelpScreen())

    def do_done(self) -> None:
        me = self.model.mine
        if self.model.ended or (me is not None and me.out):
            play_app(self).menu()
