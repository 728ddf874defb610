"""The table: everything the rulebook's "Nel videogioco" notes ask to see (P1-P5), every action
of the rules from the keyboard (`keys.py`), every refusal with its human message.

The screen keeps only the cursor and the selection (the shared `board.BoardScreen`: session,
keys, selecting); the table is the model's (built from the server's snapshots and events), and
every action goes to the server, which decides. A table joined by code that turns out to be a
classic Machiavelli one (its first snapshot is a `classic_snapshot`: an assignment does not say
the ruleset) is handed to the classic table screen.
"""

from __future__ import annotations

from rich.text import Text

from machiavelox import rules

from .. import widgets as W
from ..cards import face
from ..connection import Incoming, Link, TableSession
from ..keys import BY_KEY, help_text
from ..model import TableModel
from .base import play_app
from .board import BoardScreen
from .dialogs import ConfirmScreen


class TableScreen(BoardScreen[TableModel, rules.Seat, rules.Action]):
    KEY_NAMES = BY_KEY
    HELP = help_text()
    MELD_LINES = 8

    def __init__(self, table_id: str, players: list[str], player: str) -> None:
        super().__init__(TableModel(table_id, players, player))
        self.players = list(players)
        self._result_shown = False

    # ---------------------------------------------------------------- what the board asks
    def own_cards(self) -> list[int]:
        return W.my_cards(self.model, self.cursor)

    def table_melds(self) -> list[tuple[int, list[int]]]:
        return [(m.id, [tc.card for tc in m.cards]) for m in self.model.melds]

    def why_not_pick(self, meld: int, card: int) -> str:
        m = self.model
        tc = m.melds[meld].cards[card]
        if tc.held_by is not None and tc.held_by != m.me:
            return f"{face(tc.card)} is held by {m.name(tc.held_by)}: not selectable (M6.6)"
        return ""

    # ---------------------------------------------------------------- from the server
    def incoming(self, item: Incoming) -> None:
        if isinstance(item, Link):
            self.link_note(item, self.model.ended)
        else:
            kind = item.WhichOneof("kind")
            if kind == "classic_snapshot":  # a classic table (joined by code): its own screen
                if self.session is not None:
                    self.session.stop()
                play_app(self).sit(self.table_id, self.players, ruleset="classic")
                return
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

    # ---------------------------------------------------------------- drawing
    def drawn_parts(self, width: int, melds_height: int) -> dict[str, Text]:
        m, c = self.model, self.cursor
        return {"top": W.top_line(m, c, self.link),
                "seats": Text("\n").join(W.seat_line(m, s) for s in m.seats),
                "melds": W.table_lines(m, c, width, melds_height),
                "inspect": W.inspect_line(m, c),
                "mine": W.mine_lines(m, c, width),
                "hint": W.hint_line(m)}

    # ---------------------------------------------------------------- helpers for actions
    def seat_of(self, me: int) -> rules.Seat:
        return rules.Seat(me)

    def submit(self, session: TableSession, action: rules.Action) -> str:
        return session.act(action)

    def _cards(self, indexes: list[int]) -> tuple[rules.Card, ...]:
        return tuple(rules.card_at(i) for i in indexes)

    # ---------------------------------------------------------------- actions (keys.py)
    def do_draw(self) -> None:
        self._simple(rules.Draw)

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
        self._card_to_meld(self.model.hand, "hand",
                           lambda seat, card, meld: rules.Attach(seat, rules.card_at(card), meld))

    def do_place(self) -> None:
        self._card_to_meld(self.model.pozzetto, "pozzetto",
                           lambda seat, card, meld: rules.Place(seat, rules.card_at(card), meld))

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
    def do_removed(self) -> None:
        self.cursor.show_removed = not self.cursor.show_removed

    def do_done(self) -> None:
        me = self.model.mine
        if self.model.ended or (me is not None and me.out):
            play_app(self).menu()
