"""A classic Machiavelli table (issue 16; docs/classic.md, RULES-NOTES.md C): what a player
may see of it (P5: the own hand, the others' counts, the stock's count), whose turn it is and
its time (C7), everyone's opening (C8) and total (C11), the melds with their jokers (C2), every
event in words and the last refusal with the server's message and code; every action of a
turn from the keyboard (`keys.CLASSIC_KEYS`).

The cursor, the selection and the session are the shared `board.BoardScreen`'s; the table is
the `ClassicModel`'s; every action goes to the server (`TableSession.act_classic`), which
decides: the client refuses nothing itself (out of turn, say), it shows the server's answer.
After each event it asks for a fresh snapshot (`want_view`, paced by the session).
"""

from __future__ import annotations

from rich.text import Text

from machiavelox import classic

from .. import classic_widgets as CW
from ..cards import face
from ..classic_model import ClassicModel
from ..classic_words import hand_result, session_result
from ..connection import Incoming, Link, TableSession
from ..keys import CLASSIC_BY_KEY, classic_help_text
from .base import play_app
from .board import BoardScreen


class ClassicTableScreen(BoardScreen[ClassicModel, classic.Seat, classic.ClassicAction]):
    KEY_NAMES = CLASSIC_BY_KEY
    HELP = classic_help_text()
    MELD_LINES = 6

    def __init__(self, table_id: str, players: list[str], player: str) -> None:
        super().__init__(ClassicModel(table_id, players, player))
        self._result_said = ""
        self._hands_told = 0  # the last hand whose result went to the message line

    # ---------------------------------------------------------------- what the board asks
    def own_cards(self) -> list[int]:
        return CW.hand_order(self.model, self.cursor)

    def table_melds(self) -> list[tuple[int, list[int]]]:
        return [(m.id, m.cards) for m in self.model.melds]

    # ---------------------------------------------------------------- from the server
    def incoming(self, item: Incoming) -> None:
        m = self.model
        if isinstance(item, Link):
            self.link_note(item, m.ended)
            self.schedule_redraw()
            return
        kind = item.WhichOneof("kind")
        lines = m.take(item)
        if kind == "refused" and lines:
            self.say(lines[-1].text, "red")
        elif kind == "event" and self.session is not None:
            self.session.want_view()
        elif kind == "classic_snapshot":
            self._clamp()
            if m.phase == "between" and self._hands_told < m.hand_number:
                self._hands_told = m.hand_number
                self.say(hand_result(m), "bold")
        if m.ended and session_result(m) != self._result_said:
            # (the `ended` event's words at once, the snapshot's result when it comes: the
            # table may leave the shard before a last snapshot)
            self._result_said = session_result(m)
            self.say(self._result_said + "  Enter: back to the menu", "bold")
            if m.result is not None and self.session is not None:
                self.session.stop()  # nothing more will happen at this table
        self.schedule_redraw()

    # ---------------------------------------------------------------- drawing
    def drawn_parts(self, width: int, melds_height: int) -> dict[str, Text]:
        m, c = self.model, self.cursor
        return {"top": CW.top_line(m, self.link),
                "seats": Text("\n").join(CW.seat_line(m, s) for s in m.seats),
                "melds": CW.table_lines(m, c, width, melds_height),
                "inspect": CW.inspect_line(m, c, width),
                "mine": CW.hand_lines(m, c, width),
                "hint": CW.hint_line(m)}

    # ---------------------------------------------------------------- helpers for actions
    def seat_of(self, me: int) -> classic.Seat:
        return classic.Seat(me)

    def submit(self, session: TableSession, action: classic.ClassicAction) -> str:
        return session.act_classic(action)

    # ---------------------------------------------------------------- actions (keys.py)
    def do_draw(self) -> None:
        self._simple(classic.Draw)

    def do_lay(self) -> None:
        cards = self._chosen(self.model.hand)
        if self.seat is None or not cards:
            self.say("select the hand cards of the new meld (letters or Space), then g",
                     "yellow")
            return
        self.send(classic.Meld(self.seat, tuple(classic.card_at(i) for i in cards)))
        self._done_with(cards)

    def do_attach(self) -> None:
        self._card_to_meld(self.model.hand, "hand", lambda seat, card, meld: classic.Attach(
            seat, classic.card_at(card), meld))

    def _move_to(self, dst: int | None) -> None:
        c = self.cursor
        if self.seat is None:
            return
        if c.picked is None:
            self.say("pick a table card first: go to it (↑/↓ or its meld's number, ←/→), "
                     "Space", "yellow")
            return
        src, card = c.picked
        self.send(classic.Move(self.seat, classic.card_at(card), src, dst))
        c.picked = None

    def do_move(self) -> None:
        if self.cursor.picked is None:
            self._move_to(None)  # (says how to pick)
            return
        dst = self._target()
        if dst is not None:
            self._move_to(dst)

    def do_swap(self) -> None:
        card = self._one(self.model.hand, "hand")
        at = self._table_card() if card is not None else None
        if self.seat is None or card is None or at is None:
            return
        natural, joker = classic.card_at(card), classic.card_at(at[1])
        if not isinstance(joker, classic.Joker):
            self.say(f"{face(at[1])} is not a joker: go to the joker to swap (C2)", "yellow")
            return
        if isinstance(natural, classic.Joker):
            self.say("select the natural card of your hand that takes the joker's place",
                     "yellow")
            return
        self.send(classic.Swap(self.seat, natural, joker, at[0]))
        self._done_with([card])

    def do_end(self) -> None:
        self._simple(classic.End)

    def do_restore(self) -> None:
        self._simple(classic.Restore)

    def do_end_session(self) -> None:
        self._simple(classic.EndSession)

    # screen
    def do_done(self) -> None:
        me = self.model.mine
        if self.model.ended or (me is not None and me.eliminated):
            play_app(self).menu()
