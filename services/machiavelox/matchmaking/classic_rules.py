"""Classic friendly tables at matchmaking's edges (issue 16): the variants of a request,
checked by the engine's own rules, carried through the agorà as `queue.TableRules`, and given
back to the shard's CreateTable.

The agorà and its stores carry a table's variants as one opaque string (`TableRules.classic`:
the canonical wire form of its `ClassicVariants`, every default filled in, base64) and compare
it whole: two requests for the same variant set make the same rules, however they spelled
the defaults. Only this module reads it.
"""

from __future__ import annotations

import base64

from machiavelox import classic_codec
from machiavelox._gen.v1 import classic_pb2

from .queue import TableRules


def rules_of(msg: classic_pb2.ClassicVariants) -> TableRules:
    """The rules of a classic table with these variants; INVALID_ARGUMENT with the engine's
    reason (`variant/players-decks`, `variant/jokers`, ...) when no table can play them."""
    variants = classic_codec.variants_from_pb(msg)
    wire = classic_codec.variants_to_pb(variants).SerializeToString(deterministic=True)
    return TableRules(seats=variants.players, classic=base64.b64encode(wire).decode("ascii"))


def variants_pb(rules: TableRules) -> classic_pb2.ClassicVariants:
    """The variants of a classic table's rules, for its CreateTable."""
    return classic_pb2.ClassicVariants.FromString(base64.b64decode(rules.classic))
