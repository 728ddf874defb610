"""The client's view model from recorded wire messages (issue 15: state built only from what
the server sends). The messages are recorded from the rules engine through the same codec the
shard uses (`codec.view_to_pb`, `codec.event_to_pb`, each event redacted for the viewer), so
they are exactly what a session at that seat receives."""

from __future__ import annotations

from collections import Counter

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2, gateway_pb2
from machiavelox.client.model import TableModel
from machiavelox.client.model_base import TableClock
from machiavelox.client.widgets import Cursor, meld_chunk, mine_lines, seat_line, table_lines
from machiavelox.client.words import refusal_line

P1, P2, P3 = rules.SEATS
c = rules.card
PLAYERS = ["ann", "bob", "cy"]


def deal() -> rules.Deal:
    """4♣ 5♣ 6♣ on the table; ann holds 8♣ and a triple; bob 7♣ and 9♦."""
    return rules.Deal(
        removed=(c("KD"), c("KH")),
        talloni=((c("2S"), c("3S")), (c("4S"), c("5S")), (c("6S"), c("7S"))),
        hands=((c("8C"), c("2H"), c("3H"), c("4H"), c("QC")),
               (c("7C"), c("9D"), c("JS")),
               (c("10D"), c("10H"))),
        table=((c("4C"), c("5C"), c("6C")),),
        drawn=frozenset(rules.SEATS), direct_meld=frozenset(rules.SEATS))


class Recorder:
    """A table and what a session at `viewer` would receive from it."""

    def __init__(self, viewer: rules.Seat = P1) -> None:
        self.table = rules.Table(deal())
        self.viewer = viewer
        self.seq = 0
        self.now = 0
        self.arrivals = 0  # the arrival index of the last action applied (as a shard numbers)

    def snapshot(self) -> gateway_pb2.PlayResponse:
        view = rules.view_for(self.table, self.viewer)
        statuses = [self.table.status_word(s) for s in rules.SEATS]
        pb = codec.view_to_pb(view, "shard-0.t", self.table.phase.value, statuses)
        return gateway_pb2.PlayResponse(snapshot=common_pb2.Snapshot(view=pb, seq=self.seq))

    def act(self, action: rules.Action, dt: int = 100) -> list[gateway_pb2.PlayResponse]:
        self.now += dt
        out = []
        events = self.table.apply(action, self.now)
        self.arrivals += 1
        for ev in events:
            self.seq += 1
            out.append(gateway_pb2.PlayResponse(event=codec.event_to_pb(
                ev.for_viewer(self.viewer), self.seq, self.arrivals)))
        return out


def cards_of(model: TableModel) -> dict[str, object]:
    """What the model says of where every card is (order and statuses left aside)."""
    return {"hand": sorted(model.hand),
            "seats": [(s.hand_count, sorted(s.pozzetto), s.tallone, s.holding)
                      for s in model.seats],
            "melds": {m.id: Counter(tc.card for tc in m.cards) for m in model.melds}}


def fresh(rec: Recorder) -> TableModel:
    model = TableModel("shard-0.t", PLAYERS, "ann")
    model.take(rec.snapshot())
    return model


def test_events_move_the_cards_exactly_as_the_next_snapshot_has_them() -> None:
    """Between snapshots the model follows the events it can follow card by card (draw,
    declare, direct, attach, place, take, move, release): after each, where every card is
    equals what a fresh snapshot says. Fails if an event's bookkeeping is wrong or missing."""
    rec = Recorder()
    model = fresh(rec)
    steps: list[rules.Action] = [
        rules.Draw(P1),  # ann draws (she sees the card)
        rules.Draw(P2),  # bob draws (she sees a count)
        rules.Declare(P1, (c("2H"), c("3H"), c("4H"))),
        rules.Direct(P1, (c("2H"), c("3H"), c("4H"))),
        rules.Declare(P2, (c("7C"),)),
        rules.Take(P2, c("4C"), 1),
        rules.Release(P2),
        rules.Place(P2, c("7C"), 1),
        rules.Attach(P1, c("8C"), 1),
    ]
    for action in steps:
        for response in rec.act(action):
            model.take(response)
        assert model.stale, "an event makes the model wait for the next snapshot"
        expected = fresh(rec)
        assert cards_of(model) == cards_of(expected), action
    model.take(rec.snapshot())
    assert not model.stale
    assert model.hand == sorted(model.hand, key=lambda i: (rules.card_at(i).suit,
                                                           rules.card_at(i).rank))


def test_a_move_between_melds_follows_the_event() -> None:
    """A table card moved from one meld to a new one is where the event says."""
    rec = Recorder()
    model = fresh(rec)
    for action in (rules.Declare(P2, (c("7C"),)),
                   rules.Move(P2, c("6C"), 1, None)):
        for response in rec.act(action):
            model.take(response)
        assert cards_of(model) == cards_of(fresh(rec))


def test_a_chain_is_told_with_what_fell_and_whose_calata_caused_it() -> None:
    """P3 / M5.5.8: bob places 7♣ on 4-5-6♣ with 9♦ still in his pozzetto (his calata open),
    ann attaches 8♣ (she needs the 7♣), bob presses ANNULLA: ann's 8♣ falls with it. The log
    names the 8♣, ann, and bob's calata; the model then takes the snapshot as the truth (the
    chain is not the client's to work out)."""
    rec = Recorder()
    model = fresh(rec)
    for action in (rules.Declare(P2, (c("7C"), c("9D"))), rules.Place(P2, c("7C"), 1),
                   rules.Attach(P1, c("8C"), 1), rules.Cancel(P2)):
        for response in rec.act(action):
            model.take(response)
    chains = [line for line in model.log if line.kind == "chain"]
    assert len(chains) == 1, [line.text for line in model.log]
    assert "your 8♣ fell" in chains[0].text and "bob (p2)" in chains[0].text
    assert model.stale
    model.take(rec.snapshot())
    assert c("8C").index in model.hand
    assert cards_of(model) == cards_of(fresh(rec))


def test_others_draws_stay_hidden_and_refusals_keep_their_message() -> None:
    """P5: bob's drawn card is never in ann's log. A refusal keeps the server's human message
    (its card names as people read them); a lost race names who got there first and where."""
    rec = Recorder()
    model = fresh(rec)
    for response in rec.act(rules.Draw(P2)):
        model.take(response)
    assert model.log[-1].text == "bob (p2) drew a card"
    for action in (rules.Declare(P1, (c("QC"),)), rules.Declare(P2, (c("9D"),)),
                   rules.Take(P2, c("5C"), 1)):
        for response in rec.act(action):
            model.take(response)
    took_arrival = rec.arrivals
    model.sent["a1"] = rules.Take(P1, c("5C"), 1)
    code, message = "", ""
    try:
        rec.table.apply(rules.Take(P1, c("5C"), 1), rec.now + 10)
    except rules.ConflictError as err:
        code, message = err.code, err.message
    assert code == "card/held"
    model.take(gateway_pb2.PlayResponse(refused=common_pb2.ActionRefused(
        client_action_id="a1", refusal=common_pb2.Refusal(code=code, message=message))))
    line = model.log[-1]
    assert line.kind == "race", line
    # the winner's action named by its place in the arrival order (Event.arrival_index)
    assert "bob (p2) took 5♣ first" in line.text and f"arrival #{took_arrival}" in line.text
    plain = refusal_line(model, rules.Draw(P1), "draw/empty-tallone",
                         "your tallone is empty (M4.2)")
    assert plain.kind == "refusal" and "your tallone is empty" in plain.text


def test_the_screen_draws_status_colour_and_zone_of_every_card() -> None:
    """P2 / M6.6 on screen: a card on trial is on its player's colour, a held one reversed,
    the meld's number on the colour of the calata whose zone it is; your hand under labels."""
    rec = Recorder()
    for action in (rules.Declare(P2, (c("7C"), c("9D"))), rules.Place(P2, c("7C"), 1),
                   rules.Take(P2, c("4C"), 1)):
        rec.act(action)
    model = fresh(rec)
    cursor = Cursor()
    chunk = meld_chunk(model, cursor, 0)
    assert chunk.plain.startswith("1 ")
    styles = {chunk.plain[span.start:span.end]: str(span.style) for span in chunk.spans}
    assert "on #5e1f5a" in styles["1"], styles  # the zone of bob (p2)
    assert "reverse" in styles["4♣"] and "on #5e1f5a" in styles["7♣"]
    assert "(you)" in seat_line(model, model.seats[0]).plain
    assert "pozz 9♦" in seat_line(model, model.seats[1]).plain  # bob's face-up pozzetto
    mine = mine_lines(model, cursor, 80).plain
    assert "A   B   C" in mine and "2♥" in mine
    assert table_lines(model, cursor, 80, 5).plain.startswith("1 4♣")


def test_the_clock_follows_the_shards_pace() -> None:
    """Deadlines are table time; the seconds shown are the person's: a shard running its
    clock 10 times faster (a demo) shows 40 s of calata as 4 s."""
    now = [100.0]
    clock = TableClock(monotonic=lambda: now[0])
    clock.seen(0, exact=True)
    now[0] += 2.0
    clock.seen(20_000, exact=True)
    assert abs(clock.scale - 10.0) < 1e-6
    assert clock.left_s(60_000) == 4.0
