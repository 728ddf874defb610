"""The ranked classic queue's table (issue 16; docs/classic.md, "The ranked queue"): four
players and fixed variants, so that every ranked session is rated on the same game.

The variants are seed 003's game as `RULES-NOTES.md` section C reads it, with the house
variants the seeds call standard: two decks (C1: four players), 2 jokers (C2), aces low (C3,
seed 003), the 36-point opening (C8, seed 003), two minutes a turn (C7, seed 003), one
penalty card (C6), face scoring (C9, seed 003), and a session played until someone's total
passes 100 (C11, seed 003's threshold; the lowest total wins). Only the session may be set
(MACHIAVELOX_MATCHMAKING_RANKED_CLASSIC_SESSION: the tests play a single hand): "single",
"threshold N", "hands N" or "elimination N"; an open session is refused (nobody could end a
ranked one fairly).
"""

from __future__ import annotations

from machiavelox._gen.v1 import classic_pb2
from machiavelox.platform.errors import ServiceError

from .classic_rules import rules_of
from .queue import TableRules

RANKED_SEATS = 4
DEFAULT_SESSION = "threshold 100"

_SESSIONS = {"single": classic_pb2.CLASSIC_SESSION_KIND_SINGLE,
             "threshold": classic_pb2.CLASSIC_SESSION_KIND_THRESHOLD,
             "hands": classic_pb2.CLASSIC_SESSION_KIND_HANDS,
             "elimination": classic_pb2.CLASSIC_SESSION_KIND_ELIMINATION}


class BadSession(ValueError):
    """A ranked session that no ranked table may play."""


def ranked_variants(session: str = DEFAULT_SESSION) -> classic_pb2.ClassicVariants:
    """The ranked variants with this session ("threshold 100", "single", ...)."""
    words = session.split()
    kind = _SESSIONS.get(words[0].lower()) if words else None
    if kind is None or len(words) != (1 if words[0].lower() == "single" else 2) or (
            len(words) == 2 and not words[1].isdigit()):
        raise BadSession(f"a ranked classic session is single, threshold N, hands N or "
                         f"elimination N, not {session!r}")
    variants = classic_pb2.ClassicVariants(
        players=RANKED_SEATS, decks=2, jokers=2, aces=classic_pb2.CLASSIC_ACES_LOW,
        opening=36, turn_time_ms=120_000, penalty=1, scoring=classic_pb2.CLASSIC_SCORING_FACE,
        session=kind)
    if len(words) == 2:
        variants.session_n = int(words[1])
    return variants


def ranked_rules(session: str = DEFAULT_SESSION) -> TableRules:
    """The ranked classic table's rules, checked by the engine (`BadSession` if refused)."""
    try:
        return rules_of(ranked_variants(session))
    except ServiceError as err:
        raise BadSession(f"ranked classic session {session!r}: {err}") from None


RANKED_CLASSIC = ranked_rules()
