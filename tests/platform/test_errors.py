"""platform/errors.py: what a client's value may show in a status or a span (`shown`), the
status message's own cap, the decoder that turns a request that does not decode into
`request/malformed`, and the player-name check of the development Login (a full match)."""

from __future__ import annotations

import logging

import grpc
import pytest

from machiavelox._gen.v1 import gateway_pb2, table_pb2
from machiavelox.identity.tokens import HmacTokens
from machiavelox.platform.errors import (
    MALFORMED_REASON,
    MAX_DETAILS,
    REASON_KEY,
    SHOWN_CHARS,
    Malformed,
    ServiceError,
    abort,
    decoder,
    invalid_argument,
    shown,
)
from tests.security.malformed_frames import bad_frames


def test_a_short_value_is_shown_whole() -> None:
    assert shown("shard-0.t1") == "shard-0.t1"
    assert shown("x" * SHOWN_CHARS) == "x" * SHOWN_CHARS
    assert shown(["ann", "bob"]) == "['ann', 'bob']"


def test_a_long_value_is_cut_and_says_so() -> None:
    cut = shown("t" * 4_000_000)
    assert len(cut) == SHOWN_CHARS and cut.endswith("...") and cut.startswith("ttt")
    assert shown("abcdefghij", 6) == "abc..."


class Context:
    """What `abort` uses of a grpc.aio.ServicerContext."""

    def __init__(self) -> None:
        self.trailers: tuple[tuple[str, str], ...] = ()
        self.aborted: tuple[grpc.StatusCode, str] | None = None

    def set_trailing_metadata(self, trailers: tuple[tuple[str, str], ...]) -> None:
        self.trailers = trailers

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.aborted = (code, details)
        raise RuntimeError("aborted")


async def test_a_status_message_never_exceeds_its_cap() -> None:
    context = Context()
    with pytest.raises(RuntimeError):
        await abort(context, invalid_argument("request/x", "y" * 100_000))
    assert context.aborted is not None
    code, details = context.aborted
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("request/x: yyy") and len(details) == MAX_DETAILS
    assert context.trailers == ((REASON_KEY, "request/x"),)


def test_a_unary_request_that_does_not_decode_becomes_malformed(
        caplog: pytest.LogCaptureFixture) -> None:
    decode = decoder(table_pb2.CreateTableRequest.FromString, "/t/CreateTable", False)
    assert decode is not None
    good = table_pb2.CreateTableRequest(table_id="shard-0.t")
    assert decode(good.SerializeToString()) == good
    for kind, frame in bad_frames(table_pb2.CreateTableRequest.DESCRIPTOR).items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="machiavelox.platform.errors"):
            out = decode(frame)
        assert isinstance(out, Malformed), kind
        [record] = caplog.records
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert "/t/CreateTable" in record.getMessage()


def test_a_streamed_request_that_does_not_decode_raises_malformed() -> None:
    decode = decoder(gateway_pb2.PlayRequest.FromString, "/g/Play", True)
    assert decode is not None
    for kind, frame in bad_frames(gateway_pb2.PlayRequest.DESCRIPTOR).items():
        with pytest.raises(ServiceError) as raised:
            decode(frame)
        err = raised.value
        assert (err.status, err.reason) == (grpc.StatusCode.INVALID_ARGUMENT,
                                            MALFORMED_REASON), kind
        assert err.__cause__ is None and err.__suppress_context__


def test_no_deserializer_stays_none() -> None:
    assert decoder(None, "/raw/Bytes", False) is None


@pytest.mark.parametrize("name", ["alice\n", "alice\nbob", "\nalice", "alice ", "", "a" * 33,
                                  "al ice", "alicé"])
def test_a_player_name_must_match_whole(name: str) -> None:
    """`$` matches before a final newline: "alice\\n" was accepted; the whole name must match."""
    tokens = HmacTokens(b"k" * 32)
    with pytest.raises(ServiceError) as raised:
        tokens.issue(name)
    assert raised.value.reason == "auth/bad-name"


def test_a_good_player_name_is_accepted() -> None:
    token, _ = HmacTokens(b"k" * 32).issue("alice_B-7")
    assert HmacTokens(b"k" * 32).verify(token) == "alice_B-7"
