"""The classic table's model and drawing (issue 16), fed with what the cluster sends: the
classic engine plays a session and its views and events go through the wire codec
(`classic_codec.view_to_pb`, `event_to_pb` after `for_viewer`, as a shard redacts them), then
into `ClassicModel`; no terminal, no network."""

from __future__ import annotations

from itertools import combinations

from machiavelox import classic, classic_codec
from machiavelox._gen.v1 import classic_pb2, common_pb2, gateway_pb2
from machiavelox.classic import Seat
from machiavelox.client import classic_widgets as CW
from machiavelox.client import classic_words as words
from machiavelox.client.classic_model import ClassicModel
from machiavelox.client.model_base import TableClock
from machiavelox.client.widgets import Cursor
from machiavelox.client.words import sentence

PLAYERS = ["ada", "bob", "cy"]


class Wire:
    """A classic session as one viewer's Play stream would carry it."""

    def __init__(self, variants: classic.Variants, viewer: Seat, seed: int) -> None:
        self.variants = variants
        self.viewer = viewer
        self.session = classic.Session(variants, classic.shuffled_deal(variants, seed=seed))
        self.seq = len(self.session.hand.events)  # the deal's own (the first turn, C4)
        self.now_ms = 0

    def snapshot(self) -> gateway_pb2.PlayResponse:
        view = classic.view_for(self.session, self.viewer)
        return gateway_pb2.PlayResponse(classic_snapshot=classic_pb2.ClassicSnapshot(
            view=classic_codec.view_to_pb(view, "t-1", self.variants), seq=self.seq))

    def act(self, action: classic.ClassicAction) -> list[gateway_pb2.PlayResponse]:
        """The action applied by the engine; its events as this viewer gets them."""
        self.now_ms += 1000
        out = []
        for ev in self.session.apply(action, self.now_ms):
            self.seq += 1
            out.append(gateway_pb2.PlayResponse(event=classic_codec.event_to_pb(
                ev.for_viewer(self.viewer), self.seq)))
        return out


def meld_in(cards: tuple[classic.ClassicCard, ...], aces: classic.Aces
            ) -> tuple[classic.ClassicCard, ...] | None:
    for combo in combinations(cards, 3):
        if classic.is_valid(combo, aces):
            return combo
    return None


def a_table_whose_first_player_can_meld(viewer_first: bool
                                        ) -> tuple[Wire, tuple[classic.ClassicCard, ...]]:
    variants = classic.Variants(players=3)
    for seed in range(200):  # (bounded: most deals hold a meld of three)
        wire = Wire(variants, Seat.P1, seed)
        turn = wire.session.hand.turn
        if (turn == Seat.P1) != viewer_first:
            continue
        found = meld_in(tuple(sorted(wire.session.hand.hands[turn], key=classic.sort_key)),
                        variants.aces)
        if found is not None:
            return wire, found
    raise AssertionError("no deal of 200 lets the first player meld")


def test_a_snapshot_shows_what_the_player_may_see() -> None:
    """The own hand exactly, the others only as counts, the stock's count, whose turn it is,
    everyone's opening and total (P5, C8, C11); the screen's lines say it."""
    wire, _ = a_table_whose_first_player_can_meld(viewer_first=True)
    model = ClassicModel("t-1", PLAYERS, "ada")
    model.take(wire.snapshot())
    hand = wire.session.hand
    assert sorted(model.hand) == sorted(c.index for c in hand.hands[Seat.P1])
    assert [s.hand_count for s in model.seats] == [13, 13, 13]
    assert model.stock == len(hand.stock) == 104 - 39
    assert model.turn == 0 and model.my_turn and not model.stale
    assert all(s.opened for s in model.seats), "no opening rule: everyone has opened (C8)"
    cursor = Cursor()
    assert "stock 65" in CW.top_line(model, "live").plain
    line = CW.seat_line(model, model.seats[0]).plain
    assert "ada (you)" in line and "your turn" in line and "hand 13" in line
    assert "bob" in CW.seat_line(model, model.seats[1]).plain
    shown = CW.hand_lines(model, cursor).plain
    assert "(13 cards)" in shown and "A" in shown.splitlines()[1]
    assert "Your turn" in CW.inspect_line(model, cursor).plain


def test_events_move_cards_at_once_and_the_next_snapshot_settles_them() -> None:
    """A meld of the viewer leaves the hand and shows on the table at once (marked changed:
    `?`), a draw of another player counts a card without showing it, and the next snapshot
    replaces it all; a refusal keeps the server's message, seats named, and its code."""
    wire, found = a_table_whose_first_player_can_meld(viewer_first=True)
    model = ClassicModel("t-1", PLAYERS, "ada")
    model.take(wire.snapshot())
    for response in wire.act(classic.Meld(Seat.P1, found)):
        model.take(response)
    assert not {c.index for c in found} & set(model.hand)
    assert len(model.melds) == 1 and model.melds[0].provisional and model.stale
    assert model.turn_changed
    assert "1? " in CW.table_lines(model, Cursor(), 80, 3).plain
    assert model.log[-1].text.startswith("You put down")
    for response in wire.act(classic.End(Seat.P1)):
        model.take(response)
    assert model.turn == 1, "the turn passed to bob (the `turn` event)"
    assert any("ended the turn, 3 cards" in line.text for line in model.log)
    for response in wire.act(classic.Draw(Seat.P2)):
        model.take(response)
    assert model.seats[1].hand_count == 14 and model.stock == 64
    assert "bob (p2) drew a card" in [line.text for line in model.log]
    model.take(wire.snapshot())
    assert not model.stale and not model.melds[0].provisional and model.melds[0].kind
    assert model.turn == 2 and len(model.hand) == 10

    refused = gateway_pb2.PlayResponse(refused=common_pb2.ActionRefused(
        client_action_id="ada-1", refusal=common_pb2.Refusal(
            code="turn/not-yours", message="it is p3's turn, not p1's (C5)")))
    model.sent["ada-1"] = classic.Draw(Seat.P1)
    (line,) = model.take(refused)
    assert line.text == ("Refused (draw): it is cy (p3)'s turn, not ada (p1)'s (C5) "
                         "[turn/not-yours]")
    assert model.last_refusal is line


def test_jokers_invalid_melds_and_timed_turns_on_screen() -> None:
    """A joker on the table shows the card it stands for (C2), a meld made invalid in the
    middle of a turn is marked `!` and said in words (C5), and a timed turn shows its time
    (C7) from the view's deadline."""
    variants = classic.Variants(players=2, jokers=2, turn_time_ms=120_000)
    for seed in range(300):
        wire = Wire(variants, Seat.P1, seed)
        hand = wire.session.hand
        if hand.turn != Seat.P1:
            continue
        mine = tuple(sorted(hand.hands[Seat.P1], key=classic.sort_key))
        jokers = [c for c in mine if isinstance(c, classic.Joker)]
        found = next((c for c in combinations(mine, 3) if jokers and jokers[0] in c
                      and classic.is_valid(c, variants.aces)), None)
        if found is not None:
            break
    else:
        raise AssertionError("no deal of 300 gives p1 a joker meld")
    clock = TableClock(monotonic=lambda: 0.0)
    model = ClassicModel("t-1", ["ada", "bob"], "ada", clock)
    wire.act(classic.Meld(Seat.P1, found))
    natural = next(c for c in found if not isinstance(c, classic.Joker))
    wire.act(classic.Move(Seat.P1, natural, 1, None))  # two cards left: not a valid meld
    model.take(wire.snapshot())
    cursor = Cursor(area="table", meld=0)
    drawn = CW.table_lines(model, cursor, 80, 3).plain
    assert "1! " in drawn and "JK" in drawn, drawn
    assert "NOT a valid meld" in CW.inspect_line(model, cursor).plain
    wire.act(classic.Restore(Seat.P1))
    model.take(wire.snapshot())
    assert model.turn == 1
    # (the view's deadline, table time; the clock's pace is measured only from events)
    assert model.turn_left_s() is not None
    assert "bob 2:00" in CW.top_line(model, "live").plain

    joker_meld = None
    for seed in range(300):  # a meld with a joker standing for a card
        wire = Wire(variants, Seat.P1, seed)
        hand = wire.session.hand
        turn = hand.turn
        mine = tuple(sorted(hand.hands[turn], key=classic.sort_key))
        joker_meld = next((c for c in combinations(mine, 3)
                           if any(isinstance(x, classic.Joker) for x in c)
                           and classic.is_valid(c, variants.aces)), None)
        if joker_meld is not None:
            wire.act(classic.Meld(turn, joker_meld))
            break
    assert joker_meld is not None
    model = ClassicModel("t-1", ["ada", "bob"], "ada")
    model.take(wire.snapshot())
    assert any(model.melds[0].stands_for), model.melds[0]
    assert "JK=" in CW.table_lines(model, Cursor(), 80, 3).plain


def test_the_end_of_a_session_is_said_from_its_event_then_from_the_view() -> None:
    """A single-hand session played to its end (a stock-out: every turn a draw, C10): the
    `ended` event's words are the result at once (a table may leave the shard before a last
    snapshot comes), and the final snapshot's result names the winner and the totals, lowest
    first (C11)."""
    variants = classic.Variants(players=2)
    wire = Wire(variants, Seat.P2, seed=5)
    model = ClassicModel("t-1", ["ada", "bob"], "bob")
    model.take(wire.snapshot())
    for _ in range(200):  # (bounded: 78 cards in the stock)
        if wire.session.result is not None:
            break
        for response in wire.act(classic.Draw(wire.session.hand.turn)):
            model.take(response)
    assert wire.session.result is not None and model.ended and model.result is None
    said = words.session_result(model)
    assert said.startswith("The session is over: ") and "ada (p1)" in said, said
    assert any(line.text.startswith("A card is due and the stock is empty") for line in model.log)
    model.take(wire.snapshot())
    result = wire.session.result
    said = words.session_result(model)
    winner = "You won!" if result.winners == (Seat.P2,) else "ada (p1) won."
    assert said.startswith(winner) and "Totals (lowest wins)" in said, said
    assert "Enter: back to the menu" in CW.hint_line(model).plain


def test_a_log_line_capitalises_you_and_your_but_never_a_name() -> None:
    """Both games' log lines: the viewer's "you"/"your" first is capitalised; a player named
    "youri" keeps the case of the name (the classic log used to make it "Youri")."""
    assert sentence("you drew a card") == "You drew a card"
    assert sentence("you: Stop!") == "You: Stop!"
    assert sentence("your turn") == "Your turn"
    assert sentence("youri (p2) drew a card") == "youri (p2) drew a card"
