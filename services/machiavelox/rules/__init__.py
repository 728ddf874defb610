"""The Machiavelox rules engine: pure, deterministic, replayable (see docs/rules-engine.md).

Imports only the standard library. Time is an argument (milliseconds of server time).
"""

from .actions import (
    Abandon,
    Action,
    Attach,
    Cancel,
    Conclude,
    Declare,
    Direct,
    Draw,
    GiveUp,
    Leave,
    Liveness,
    Move,
    Place,
    Put,
    Ready,
    Release,
    Stop,
    Take,
    Undeclare,
)
from .cards import ALL_CARDS, Card, Suit, card, card_at, copies_of, parse_face
from .deal import Deal, shuffled_deal
from .errors import (
    ConflictError,
    IllegalActionError,
    InvalidActionError,
    NotImplementedRuleError,
    RulesError,
)
from .events import Event
from .match import Match, MatchKind, MatchResult
from .melds import MeldKind, classify, is_regular
from .scoring import SmazzataResult
from .seats import SEATS, Seat
from .state import Phase, PlayerStatus
from .table import Table
from .view import CardStatus, PlayerView, card_status, meld_status, view_for

__all__ = [
    "ALL_CARDS",
    "SEATS",
    "Abandon",
    "Action",
    "Attach",
    "Cancel",
    "Card",
    "CardStatus",
    "Conclude",
    "ConflictError",
    "Deal",
    "Declare",
    "Direct",
    "Draw",
    "Event",
    "GiveUp",
    "IllegalActionError",
    "InvalidActionError",
    "Leave",
    "Liveness",
    "Match",
    "MatchKind",
    "MatchResult",
    "MeldKind",
    "Move",
    "NotImplementedRuleError",
    "Phase",
    "Place",
    "PlayerStatus",
    "PlayerView",
    "Put",
    "Ready",
    "Release",
    "RulesError",
    "Seat",
    "SmazzataResult",
    "Stop",
    "Suit",
    "Table",
    "Take",
    "Undeclare",
    "card",
    "card_at",
    "card_status",
    "classify",
    "copies_of",
    "is_regular",
    "meld_status",
    "parse_face",
    "shuffled_deal",
    "view_for",
]
