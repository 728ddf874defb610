"""An action resent with the same `client_action_id` gets its original outcome and is never
applied twice (issue 13, item 5; table/answers.py). The real Shard in process, its answers read
from the gateway link's frame.

Would fail if a resend were applied again (a second arrival, new events), answered otherwise
than the first time (another seq or arrival index, another refusal, a rate limit), if a key
reused for another action were taken, or if a table restored from its journal had forgotten
the keys of its accepted actions.
"""

from __future__ import annotations

from machiavelox import rules
from machiavelox._gen.v1 import common_pb2, table_pb2
from machiavelox.platform.ratelimit import Rate
from machiavelox.table import answers
from machiavelox.table.answers import Answer, Answers
from machiavelox.table.gateway_link import GatewayLink
from machiavelox.table.host import TableHost
from machiavelox.table.shard import Shard
from tests.support.shard_items import action_item

PLAYERS = ["ann", "bob", "cy"]
TABLE = "shard-0.t"
P1 = rules.Seat.P1


async def _noop(frame: table_pb2.ConnectResponse) -> None:
    return None


GENEROUS = Rate(100.0, 100.0)


def table(rate: Rate = GENEROUS) -> tuple[Shard, GatewayLink, TableHost]:
    clock = iter(range(1_000, 10**9, 5))
    shard = Shard("shard-0", 10, lambda: next(clock), action_rate=rate)
    host = shard.create_table(TABLE, PLAYERS, rules.MatchKind.SINGLE, True)
    return shard, GatewayLink("test", _noop), host


def send(shard: Shard, link: GatewayLink, action: rules.Action,
         action_id: str) -> common_pb2.Batch:
    """ann sends `action`; the answer the shard puts in the link's frame for her (a refusal
    of the shard's own, outside a step's batch, as a batch's refusal)."""
    frame = link._outbox.frame()
    shard.settle(shard.handle_frame(link, [action_item(TABLE, "ann", action, action_id)]))
    mine: list[common_pb2.Batch] = []
    for item in frame.items:
        if item.player_id != "ann":
            continue
        if item.HasField("refused"):
            mine.append(common_pb2.Batch(refused=item.refused))
        elif item.batch.HasField("ack") or item.batch.HasField("refused"):
            mine.append(item.batch)
    link._outbox.discard()
    assert len(mine) == 1, frame
    return mine[0]


def test_a_resent_action_gets_the_same_ack_and_is_not_applied_again() -> None:
    shard, link, host = table()
    first = send(shard, link, rules.Draw(P1), "a-1")
    assert first.HasField("ack")
    events, arrivals, hand = host.seq, host.arrivals, host.view(P1).hand
    for _ in range(3):
        again = send(shard, link, rules.Draw(P1), "a-1")
        assert again.ack == first.ack  # same client_action_id, seq, arrival index
    assert (host.seq, host.arrivals, host.view(P1).hand) == (events, arrivals, hand)
    other = send(shard, link, rules.Draw(P1), "a-2")  # a new id is a new action
    assert other.ack.arrival_index == first.ack.arrival_index + 1
    assert len(host.view(P1).hand) == len(hand) + 1


def test_a_resent_refused_action_gets_the_same_refusal() -> None:
    shard, link, _ = table()
    action = rules.Undeclare(P1, (rules.ALL_CARDS[0],))  # nothing declared: refused
    first = send(shard, link, action, "u-1")
    assert first.HasField("refused")
    again = send(shard, link, action, "u-1")
    assert again.refused == first.refused


def test_a_key_reused_for_another_action_is_refused_and_changes_nothing() -> None:
    shard, link, host = table()
    send(shard, link, rules.Draw(P1), "k")
    events = host.seq
    reused = send(shard, link, rules.Stop(P1), "k")
    assert reused.refused.refusal.code == "request/reused-id"
    assert host.seq == events and host.match.phase != "frozen"


def test_a_resend_is_answered_even_past_the_rate_limit() -> None:
    """The rate limit bounds what is applied; a resend applies nothing, and answering it
    otherwise (rate/limited) would tell the app that an action it made was not."""
    shard, link, _ = table(Rate(0.001, 2.0))
    first = send(shard, link, rules.Draw(P1), "r-1")
    send(shard, link, rules.Draw(P1), "r-2")
    assert send(shard, link, rules.Draw(P1), "r-3").refused.refusal.code == "rate/limited"
    assert send(shard, link, rules.Draw(P1), "r-1").ack == first.ack


def test_a_restored_table_answers_resends_alike() -> None:
    """The keys of accepted actions are journaled: a shard restarted after a crash still
    answers a resend (sent by an app that never got the first answer) as the first time."""
    host = TableHost(TABLE, PLAYERS, rules.MatchKind.SINGLE, True, 1_000)
    done = [host.apply("ann", rules.Draw(P1), 2_000 + i, action_id=f"d-{i}") for i in range(3)]
    restored = TableHost.restore(TABLE, bytes(host.journal.data))
    for i, applied in enumerate(done):
        kept = restored.answered("ann", f"d-{i}")
        assert kept is not None and kept.error is None
        assert (kept.first_seq, kept.arrival) == (applied.first_seq, applied.arrival)
    assert restored.answered("ann", "never-sent") is None
    assert restored.answered("bob", "d-0") is None  # keys are per player


def test_the_window_keeps_the_last_ids_and_the_last_two_minutes() -> None:
    kept = Answers()
    seat = rules.Seat.P2
    draw = rules.Draw(seat)
    for i in range(answers.KEEP + 50):  # all within the window: all kept
        kept.remember(seat, f"w-{i}", Answer(i, draw, i + 1, i + 1, None))
    assert kept.get(seat, "w-0") is not None
    late = answers.KEEP + 50 + answers.WINDOW_MS
    kept.remember(seat, "late", Answer(late, draw, 0, 0, None))
    assert kept.get(seat, "w-0") is None  # older than the window, and not among the last KEEP
    assert len(kept) == answers.KEEP
    for i in range(answers.CAP + 10):  # a burst within the window: capped
        kept.remember(seat, f"b-{i}", Answer(late, draw, 0, 0, None))
    assert len(kept) == answers.CAP
