"""Event kinds on the wire (issue 14, item 4): every kind of the engine's `EventKind` has its
value in the wire's `EventKind` enum, named after it, and the codec sends both the word and
the value, so apps may switch on either."""

from __future__ import annotations

from machiavelox import codec, rules
from machiavelox._gen.v1 import common_pb2


def test_every_kind_of_the_engine_is_a_value_of_the_wire_enum() -> None:
    wire = {v.name for v in common_pb2.EventKind.DESCRIPTOR.values}
    engine = {f"EVENT_KIND_{kind.name}" for kind in rules.EventKind}
    assert engine <= wire
    assert wire - engine == {"EVENT_KIND_UNSPECIFIED"}  # nothing on the wire the engine lacks


def test_the_codec_sends_the_word_and_the_value() -> None:
    for kind in rules.EventKind:
        msg = codec.event_to_pb(rules.Event(kind, 1, rules.Seat.P2), 7)
        assert msg.kind == kind.value
        assert common_pb2.EventKind.Name(msg.kind_code) == f"EVENT_KIND_{kind.name}"
