"""Request frames that do not decode, for a given message type: what a hostile client sends with
identity serializers instead of the generated stubs (test_malformed.py, test_decode_fuzz.py).

Each kind is checked to fail protobuf's own parser for that type (`bad_frames` asserts it), so
a test using them attacks the decode path and nothing else.
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError
from google.protobuf.message_factory import GetMessageClass

DEPTH = 200  # nested groups: protobuf's parser stops at 100


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def string_path(message: Descriptor, depth: int = 4) -> list[FieldDescriptor] | None:
    """The fields down to the first string field of `message` (through sub-messages)."""
    for f in message.fields:
        if f.type == FieldDescriptor.TYPE_STRING:
            return [f]
    if depth:
        for f in message.fields:
            if f.type == FieldDescriptor.TYPE_MESSAGE and f.message_type is not None:
                below = string_path(f.message_type, depth - 1)
                if below is not None:
                    return [f, *below]
    return None


def bad_utf8(message: Descriptor) -> bytes | None:
    """`message` with invalid UTF-8 in a string field (None: it has none)."""
    path = string_path(message)
    if path is None:
        return None
    frame = b"ok\xc3\x28\xff\xfe"
    for f in reversed(path):
        frame = field(f.number, frame)
    return frame


def bad_frames(message: Descriptor) -> dict[str, bytes]:
    """Every kind of malformed frame for `message`: name -> bytes."""
    group_start, group_end = varint(99 << 3 | 3), varint(99 << 3 | 4)
    frames = {
        "corrupt": b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",  # a tag that never ends
        "truncated-varint": b"\x08\xff\xff\xff",
        "truncated-length": b"\x0a\x40only-a-few-bytes",
        "deep-nesting": group_start * DEPTH + group_end * DEPTH,
    }
    utf8 = bad_utf8(message)
    if utf8 is not None:
        frames["bad-utf8"] = utf8
    cls = GetMessageClass(message)
    for kind, frame in frames.items():
        try:
            cls.FromString(frame)
        except DecodeError:
            continue
        raise AssertionError(f"the {kind} frame decodes as {message.full_name}")
    return frames
