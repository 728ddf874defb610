"""Hostile input on the classic Machiavelli paths (issue 16 on the cluster; "trust nobody by
default"): what an app may send at a classic table, and the variants it may ask a table for.

Proves:
- in process (Hypothesis): any wire `ClassicAction` (every verb, card indices and meld ids
  anywhere in their types' ranges, hundreds of cards in a meld, a natural where a joker goes
  and back) by any seat, at a random point of a random game, is either refused by the decoder
  with INVALID_ARGUMENT and a `request/...` reason, or refused by the engine with a
  `RulesError` that changes nothing at all (`fingerprint`: the whole session), or applied;
  never any other exception;
- in process: any wire `ClassicVariants` (every field over its type's range, unknown enum
  values) is refused INVALID_ARGUMENT with a `variant/...` reason, or is a variant set a
  table can deal and show to every seat;
- through a real shard and gateway: a classic table's Play stream fed those actions, a
  Machiavelox action, and mutated bytes of them answers each with an outcome or a status
  carrying its reason (never UNKNOWN, INTERNAL, UNAVAILABLE or a hang); the table then still
  serves its players (a Resync gets a classic snapshot, and the player on turn draws).
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from machiavelox import classic, classic_codec, codec, rules
from machiavelox._gen.v1 import classic_pb2, common_pb2, gateway_pb2
from machiavelox.classic import Seat, Session, shuffled_deal, view_for
from machiavelox.local.processes import Proc, channel
from machiavelox.platform.errors import REASON_KEY, ServiceError
from tests.classic.helpers import GreedyPlayer, fingerprint, random_variants
from tests.security.gateway_shard import KEY, cluster, create_table
from tests.support.client import hmac_bearer

pytestmark = pytest.mark.timeout(240)

TABLE = "shard-0.hostile"
PLAYERS = ["ann", "bob", "cy", "dee"]
PLAY = "/machiavelox.v1.GatewayService/Play"
NEVER = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED,
         grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS}
U32 = 2**32 - 1


# ---------------------------------------------------------------------------------- actions
indices = st.one_of(st.integers(0, 159), st.integers(0, U32))  # 156..159: the jokers
melds = st.one_of(st.integers(0, 40), st.integers(0, U32))
wire_cards = st.builds(lambda i: common_pb2.Card(index=i), indices)
empty = common_pb2.Empty()
hostile_actions = st.one_of(
    st.builds(lambda cs: classic_pb2.ClassicAction(meld=common_pb2.Cards(cards=cs)),
              st.lists(wire_cards, max_size=300)),
    st.builds(lambda c, m, has: classic_pb2.ClassicAction(attach=common_pb2.CardToMeld(
        card=c if has else None, meld=m)), wire_cards, melds, st.booleans()),
    st.builds(lambda c, src, dst, new: classic_pb2.ClassicAction(move=common_pb2.MoveCard(
        card=c, from_meld=src, to=common_pb2.MeldTarget(meld=dst, new_meld=new))),
        wire_cards, melds, melds, st.booleans()),
    st.builds(lambda c, j, m: classic_pb2.ClassicAction(swap=classic_pb2.ClassicSwap(
        card=c, joker=j, meld=m)), wire_cards, wire_cards, melds),
    st.sampled_from([classic_pb2.ClassicAction(end=empty), classic_pb2.ClassicAction(draw=empty),
                     classic_pb2.ClassicAction(restore=empty),
                     classic_pb2.ClassicAction(end_session=empty),
                     classic_pb2.ClassicAction()]))


def game_at(seed: int, turns: int) -> tuple[Session, int]:
    """A random variant set's session after `turns` greedy turns (melds on the table), and
    its table time."""
    rng = random.Random(seed)
    variants = random_variants(rng)
    session = Session(variants, shuffled_deal(variants, seed))
    now, player = 1_000, GreedyPlayer()
    for _ in range(turns):
        if session.result is not None or session.hand.over:
            break
        for action in player.turn(session):
            now += 500
            try:
                session.apply(action, now)
            except rules.RulesError:
                break
    return session, now


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 12),
       st.lists(st.tuples(st.integers(0, 5), hostile_actions), min_size=1, max_size=8))
def test_any_wire_action_is_refused_with_its_reason_changing_nothing_or_applied(
        seed: int, turns: int, sent: list[tuple[int, classic_pb2.ClassicAction]]) -> None:
    session, now = game_at(seed, turns)
    players = session.variants.players
    for seat_no, msg in sent:
        seat = Seat(seat_no % players)
        try:
            action = classic_codec.action_from_pb(seat, msg)
        except ServiceError as err:
            assert err.status is grpc.StatusCode.INVALID_ARGUMENT, err
            assert err.reason.startswith("request/"), err.reason
            continue
        now += 100
        session.advance(now)  # (time passing is not the action's: its timers fire first)
        before = fingerprint(session)
        try:
            session.apply(action, now)
        except rules.RulesError as err:
            assert err.code, err  # a stable, machine-readable code
            assert fingerprint(session) == before, f"{action} refused ({err.code}) changed it"


wire_variants = st.builds(
    lambda players, decks, jokers, aces, opening, turn, penalty, scoring, session, n:
    classic_pb2.ClassicVariants(players=players, decks=decks, jokers=jokers, aces=aces,
                                opening=opening, turn_time_ms=turn, penalty=penalty,
                                scoring=scoring, session=session, session_n=n),
    *(st.one_of(st.integers(0, 8), st.integers(0, U32)) for _ in range(3)),
    st.integers(0, 6), st.one_of(st.integers(0, 60), st.integers(0, U32)),
    st.one_of(st.integers(0, 300_000), st.integers(0, U32)), st.one_of(
        st.none(), st.integers(0, 4), st.integers(0, U32)),
    st.integers(0, 6), st.integers(0, 8), st.one_of(st.none(), st.integers(0, U32)))


@settings(max_examples=300, deadline=None)
@given(wire_variants, st.integers(0, 2**32 - 1))
def test_any_wire_variant_set_is_refused_with_its_reason_or_plays(
        msg: classic_pb2.ClassicVariants, seed: int) -> None:
    try:
        variants = classic_codec.variants_from_pb(msg)
    except ServiceError as err:
        assert err.status is grpc.StatusCode.INVALID_ARGUMENT, err
        assert err.reason.startswith("variant/"), err.reason
        return
    session = Session(variants, shuffled_deal(variants, seed))
    for seat in range(variants.players):
        assert view_for(session, Seat(seat)).seats  # every seat is shown its view
    session.apply(classic.Draw(session.hand.turn), 1_000)  # and the first turn plays


# ---------------------------------------------------------------------------------- the wire
@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """A shard with a four-player classic table (ann sits at it), and a gateway to it."""
    quick = {"MACHIAVELOX_GRACE_S": "1"}
    with cluster(tmp_path_factory.mktemp("classic-hostile"), quick, quick) as procs:
        asyncio.run(create_table(procs.shard, TABLE, tuple(PLAYERS),
                                 ruleset=classic_pb2.RULESET_CLASSIC,
                                 classic=classic_pb2.ClassicVariants(players=4, jokers=2)))
        yield procs.gateway


def join() -> bytes:
    return gateway_pb2.PlayRequest(join=gateway_pb2.Join(table_id=TABLE)).SerializeToString()


def action_frame(msg: classic_pb2.ClassicAction, action_id: str) -> bytes:
    return gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
        client_action_id=action_id, classic_action=msg)).SerializeToString()


@st.composite
def frames(draw: Any) -> bytes:
    """A hostile classic action, a Machiavelox action at the classic table, or either's bytes
    with a few flipped, cut or inserted."""
    if draw(st.booleans()):
        frame = action_frame(draw(hostile_actions), draw(st.text(max_size=20)))
    else:
        frame = gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
            client_action_id="m", action=codec.action_to_pb(rules.Draw(rules.Seat.P1)))
        ).SerializeToString()
    data = bytearray(frame)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "cut", "insert"]))
        if op == "flip" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=6))
    return bytes(data)


def play(gateway: Proc, who: str, sent: list[bytes]) -> list[gateway_pb2.PlayResponse]:
    """`who`'s Play stream gets the frames then closes its side; what came back (a status
    with its reason is checked here)."""
    got: list[gateway_pb2.PlayResponse] = []
    with channel(gateway, "app") as ch:
        call = ch.stream_stream(PLAY, response_deserializer=gateway_pb2.PlayResponse.FromString)
        replies = call(iter(sent), metadata=hmac_bearer(KEY, who), timeout=5)
        try:
            for reply in replies:
                got.append(reply)
        except grpc.RpcError as err:
            assert err.code() not in NEVER, (err.code(), err.details())
            reasons = [v for k, v in err.trailing_metadata() or () if k == REASON_KEY]
            assert reasons, f"{err.code()} without a reason: {err.details()}"
    return got


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(frames(), min_size=1, max_size=4))
def test_a_classic_table_answers_hostile_frames_with_reasons(gateway: Proc,
                                                              sent: list[bytes]) -> None:
    play(gateway, "ann", [join(), *sent])


def test_the_classic_table_still_serves_after_hostile_frames(gateway: Proc) -> None:
    """After the hostile frames (the tests above, and these of every player): a Resync gets a
    classic snapshot, and the player whose turn it is draws."""
    garbage = [action_frame(classic_pb2.ClassicAction(meld=common_pb2.Cards(
        cards=[common_pb2.Card(index=i % 200) for i in range(300)])), "x"),
        action_frame(classic_pb2.ClassicAction(attach=common_pb2.CardToMeld(
            card=common_pb2.Card(index=U32), meld=U32)), "y")]
    for who in PLAYERS:
        play(gateway, who, [join(), *garbage])
    resync = gateway_pb2.PlayRequest(resync=gateway_pb2.Resync()).SerializeToString()
    snap = reply_to(gateway, "ann", [join(), resync],
                    lambda r: r.WhichOneof("kind") == "classic_snapshot")
    assert isinstance(snap, gateway_pb2.PlayResponse), snap
    view = classic_codec.view_from_pb(snap.classic_snapshot.view)
    if view.phase != "playing" or view.turn is None:
        return  # (a hostile frame could not end a hand: it plays no card it has not got)
    draw = action_frame(classic_pb2.ClassicAction(draw=empty), "a-draw")
    answer = reply_to(gateway, PLAYERS[int(view.turn)], [join(), draw], lambda r: (
        r.WhichOneof("kind") in ("ack", "refused")
        and "a-draw" in (r.ack.client_action_id, r.refused.client_action_id)))
    # answered (a draw refused only if a hostile frame of that player's was a legal play
    # this turn: the table judged it, as it judges every action)
    assert isinstance(answer, gateway_pb2.PlayResponse), answer


def reply_to(gateway: Proc, who: str, sent: list[bytes],
             wanted: Callable[[gateway_pb2.PlayResponse], bool]
             ) -> gateway_pb2.PlayResponse | str:
    """`who` sends the frames and keeps the stream open (at most 5 s) until a reply that is
    `wanted`: that reply, or what the stream ended with."""
    done = threading.Event()

    def requests() -> Iterator[bytes]:
        yield from sent
        done.wait(5.0)  # (a half-closed stream is ended before its answers)

    with channel(gateway, "app") as ch:
        call = ch.stream_stream(PLAY, response_deserializer=gateway_pb2.PlayResponse.FromString)
        replies = call(requests(), metadata=hmac_bearer(KEY, who), timeout=10)
        try:
            for reply in replies:
                got: gateway_pb2.PlayResponse = reply
                if wanted(got):
                    replies.cancel()
                    return got
        except grpc.RpcError as err:
            return f"ended {err.code().name}: {err.details()}"
        finally:
            done.set()
    return "ended"
