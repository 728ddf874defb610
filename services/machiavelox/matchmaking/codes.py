"""Invite codes of friendly tables: how they are drawn, read back and named in logs.

A code is `CODE_LENGTH` characters of `CODE_ALPHABET` (31 symbols: no 0/O, 1/I/L, so a code
read aloud or off a screen is typed right), each drawn with `secrets`: 10 x log2(31) = 49.5
bits of entropy (docs/security.md has the guessing arithmetic). Apps show it in two groups of
five (`ABCDE-FGHJK`); `normalize` takes it back in any case, with or without spaces and hyphens.

Logs never carry a code (anyone reading them could sit at the table): `code_ref` names it by
the first 8 hex digits of its SHA-256 (32 bits), so an operator given a code finds its lines,
while about 2^17.5 codes share each reference and a reader of logs learns nothing usable.
"""

from __future__ import annotations

import hashlib
import secrets

# no 0/O, 1/I/L: a code read aloud or off a screen is typed right
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 10
# longest input worth reading: the code with a separator between every two characters
MAX_INPUT = 2 * CODE_LENGTH
_SEPARATORS = str.maketrans("", "", " -")
_ALPHABET = frozenset(CODE_ALPHABET)


def new_code() -> str:
    """A fresh code drawn from the operating system's CSPRNG."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def normalize(typed: str) -> str | None:
    """The code a player typed, canonical (upper case, no separators); None if it cannot be
    a code at all (wrong length or a character outside the alphabet)."""
    if len(typed) > MAX_INPUT:
        return None
    code = typed.translate(_SEPARATORS).upper()
    if len(code) != CODE_LENGTH or not _ALPHABET.issuperset(code):
        return None
    return code


def code_ref(code: str) -> str:
    """What logs say instead of the code: 8 hex digits of its SHA-256."""
    return hashlib.sha256(code.encode()).hexdigest()[:8]
