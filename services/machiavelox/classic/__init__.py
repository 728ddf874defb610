"""Classic Machiavelli: the turn-based game of the family (seeds 003 and 004; RULES-NOTES.md C).

A pure engine like `machiavelox.rules` (and built on it: its cards, meld kinds and errors): no
I/O, no clock (time is an argument, in ms), no randomness outside the deal, so a session is
replayable from its deals and its log. See the classic section of docs/rules-engine.md.

    variants = Variants(players=4, jokers=2, opening=36, turn_time_ms=120_000)
    session = Session(variants, shuffled_deal(variants, seed=7))
    session.apply(Meld(Seat.P1, cards), now_ms=5_000)
    session.apply(End(Seat.P1), now_ms=6_000)
    view = view_for(session, Seat.P2)
"""

from .actions import (
    Attach,
    ClassicAction,
    Draw,
    End,
    EndSession,
    Liveness,
    Meld,
    Move,
    Restore,
    Swap,
)
from .cards import (
    ALL_CLASSIC,
    JOKERS,
    NATURALS,
    ClassicCard,
    Joker,
    card_at,
    copies,
    deck,
    natural,
    parse,
    parse_face,
    sort_key,
)
from .deal import ClassicDeal, shuffled_deal
from .events import ClassicEvent
from .hand import Hand
from .melds import arrange, classify, is_valid, opening_value, readings
from .scoring import HandResult, SessionResult, card_points, hand_points
from .seats import ALL_SEATS, Seat, seats_of
from .session import LogEntry, Session
from .variants import Aces, Scoring, SessionKind, VariantError, Variants
from .view import ClassicView, MeldView, SeatView, view_for

__all__ = [
    "ALL_CLASSIC",
    "ALL_SEATS",
    "JOKERS",
    "NATURALS",
    "Aces",
    "Attach",
    "ClassicAction",
    "ClassicCard",
    "ClassicDeal",
    "ClassicEvent",
    "ClassicView",
    "Draw",
    "End",
    "EndSession",
    "Hand",
    "HandResult",
    "Joker",
    "Liveness",
    "LogEntry",
    "Meld",
    "MeldView",
    "Move",
    "Restore",
    "Scoring",
    "Seat",
    "SeatView",
    "Session",
    "SessionKind",
    "SessionResult",
    "Swap",
    "VariantError",
    "Variants",
    "arrange",
    "card_at",
    "card_points",
    "classify",
    "copies",
    "deck",
    "hand_points",
    "is_valid",
    "natural",
    "opening_value",
    "parse",
    "parse_face",
    "readings",
    "seats_of",
    "shuffled_deal",
    "sort_key",
    "view_for",
]
