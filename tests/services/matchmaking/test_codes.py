"""Invite codes: at least 40 bits drawn from the unambiguous alphabet, typed back loosely,
named in logs by a reference that does not give the code away."""

from __future__ import annotations

import hashlib
import math

from machiavelox.matchmaking.codes import (
    CODE_ALPHABET,
    CODE_LENGTH,
    MAX_INPUT,
    code_ref,
    new_code,
    normalize,
)


def test_codes_carry_at_least_40_bits_of_the_unambiguous_alphabet() -> None:
    assert CODE_LENGTH * math.log2(len(set(CODE_ALPHABET))) >= 40
    assert not set("0O1IL") & set(CODE_ALPHABET)
    codes = [new_code() for _ in range(2_000)]
    assert all(len(c) == CODE_LENGTH and set(c) <= set(CODE_ALPHABET) for c in codes)
    assert len(set(codes)) == len(codes)
    # every symbol is drawn (2,000 codes x 10 draws: a missing one means a broken draw)
    assert set("".join(codes)) == set(CODE_ALPHABET)


def test_a_code_is_read_back_in_any_case_with_spaces_or_hyphens() -> None:
    code = "ABCDE23456"
    for typed in (code, code.lower(), "abcde-23456", " ABCDE 23456 ", "A-B-C-D-E-2-3-4-5-6"):
        assert normalize(typed) == code, typed
    for bad in ("", "ABCDE2345", "ABCDE234567", "ABCDE2345O", "ABCDE2345I", "ABCDÉ23456",
                "ABCDE_23456", "A" * (MAX_INPUT + 1), "ß" * 5 + "ABCDE"):
        assert normalize(bad) is None, bad


def test_logs_name_a_code_by_a_short_hash() -> None:
    code = "ABCDE23456"
    ref = code_ref(code)
    assert ref == hashlib.sha256(code.encode()).hexdigest()[:8]
    assert code not in ref and code_ref("ABCDE23457") != ref
