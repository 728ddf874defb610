"""Fuzzing the decode path of the gateway's Play stream (Hypothesis): arbitrary bytes, and
valid PlayRequest encodings mutated (bytes flipped, cut, inserted, removed).

Proves: the deserializer the error interceptor gives every handler never raises anything but
ServiceError `request/malformed` (a streamed request) or returns anything but the decoded
message or a `Malformed` (a unary one), and decodes what protobuf decodes exactly as protobuf
does; and through a real gateway a sample of the mutated frames gets either a valid answer or
a status with its machine-readable reason, never UNKNOWN, INTERNAL or a hang (the call's
deadline). The examples are bounded (a few hundred in process, a few dozen over gRPC).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from machiavelox import codec, rules
from machiavelox._gen.v1 import gateway_pb2
from machiavelox.local.processes import Proc, channel
from machiavelox.platform.errors import (
    MALFORMED_REASON,
    REASON_KEY,
    Malformed,
    ServiceError,
    decoder,
)
from tests.security.gateway_shard import KEY, cluster, create_table
from tests.support.client import hmac_bearer

pytestmark = pytest.mark.timeout(180)

TABLE = "shard-0.fuzz"
PLAY = "/machiavelox.v1.GatewayService/Play"
STREAMED = decoder(gateway_pb2.PlayRequest.FromString, PLAY, True)
UNARY = decoder(gateway_pb2.PlayRequest.FromString, PLAY, False)
# What a hostile frame may never get: the service failed, or hung until the deadline.
NEVER = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED,
         grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DATA_LOSS}


# ---------------------------------------------------------------------------------- frames
seats = st.sampled_from(list(rules.Seat)[:3])
cards = st.lists(st.sampled_from(rules.ALL_CARDS), min_size=1, max_size=4).map(tuple)
actions = st.one_of(seats.map(rules.Draw),
                    st.builds(rules.Declare, seats, cards),
                    st.builds(rules.Undeclare, seats, cards))
texts = st.text(max_size=40)
requests = st.one_of(
    st.builds(lambda t, s, b: gateway_pb2.PlayRequest(join=gateway_pb2.Join(
        table_id=t, last_seq=s, batched=b)), st.one_of(st.just(TABLE), texts),
        st.integers(0, 2**64 - 1), st.booleans()),
    st.builds(lambda i, a, ms: gateway_pb2.PlayRequest(action=gateway_pb2.ActionRequest(
        client_action_id=i, action=codec.action_to_pb(a), client_sent_ms=ms)),
        texts, actions, st.integers(-(2**63), 2**63 - 1)),
    st.just(gateway_pb2.PlayRequest(heartbeat=gateway_pb2.Heartbeat(client_ms=1))),
    st.just(gateway_pb2.PlayRequest(resync=gateway_pb2.Resync())))


@st.composite
def mutated(draw: Any) -> bytes:
    """A valid PlayRequest's bytes with a few bytes flipped, cut, inserted or removed."""
    frame = bytearray(draw(requests).SerializeToString())
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "remove"]))
        at = draw(st.integers(0, len(frame)))
        if op == "flip" and at < len(frame):
            frame[at] = draw(st.integers(0, 255))
        elif op == "cut":
            del frame[at:]
        elif op == "insert":
            frame[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "remove":
            del frame[at:at + draw(st.integers(1, 4))]
    return bytes(frame)


frames = st.one_of(st.binary(max_size=200), mutated())


def decoded_by_protobuf(frame: bytes) -> gateway_pb2.PlayRequest | None:
    try:
        return gateway_pb2.PlayRequest.FromString(frame)
    except DecodeError:
        return None


# ---------------------------------------------------------------------------------- in process
@settings(max_examples=400, deadline=None)
@given(frames)
def test_the_decoder_gives_the_message_or_malformed_and_nothing_else(frame: bytes) -> None:
    assert STREAMED is not None and UNARY is not None
    expected = decoded_by_protobuf(frame)
    try:
        streamed = STREAMED(frame)
    except ServiceError as err:
        assert expected is None and err.reason == MALFORMED_REASON
    else:
        assert streamed == expected
    unary = UNARY(frame)
    if expected is None:
        assert isinstance(unary, Malformed)
    else:
        assert unary == expected


# ---------------------------------------------------------------------------------- a gateway
@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    """A shard with a table ann sits at, and a gateway routing to it."""
    quick = {"MACHIAVELOX_GRACE_S": "1"}
    with cluster(tmp_path_factory.mktemp("fuzz"), quick, quick) as procs:
        asyncio.run(create_table(procs.shard, TABLE))
        yield procs.gateway


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(frames, min_size=1, max_size=3))
def test_a_gateway_answers_every_frame_with_a_reason(gateway: Proc, sent: list[bytes]) -> None:
    """ann's Play stream gets the frames, then her side closes: whatever they decode to, the
    call ends with OK or a refusal carrying its reason."""
    with channel(gateway, "app") as ch:
        replies = ch.stream_stream(PLAY)(iter(sent), metadata=hmac_bearer(KEY, "ann"),
                                         timeout=5)
        try:
            for _ in replies:
                pass
        except grpc.RpcError as err:
            assert err.code() not in NEVER, (err.code(), err.details())
            reasons = [v for k, v in err.trailing_metadata() or () if k == REASON_KEY]
            assert reasons, f"{err.code()} without a reason: {err.details()}"
            if all(decoded_by_protobuf(frame) is not None for frame in sent):
                assert reasons != [MALFORMED_REASON]
