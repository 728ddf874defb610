"""What the agorà's streams end with, and what it reads of a stored result (`agora.py`'s
vocabulary, shared with the servicer and the results follower)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .queue import WaitError


class Stopping(WaitError):
    """Matchmaking is shutting down (UNAVAILABLE `matchmaking/stopping` on the wire)."""

    def __init__(self, message: str = "matchmaking is shutting down") -> None:
        super().__init__("matchmaking/stopping", message)


class Expired(WaitError):
    """The friendly lobby outlived its TTL (NOT_FOUND `friendly/expired`)."""

    def __init__(self) -> None:
        super().__init__("friendly/expired", "the friendly table was not filled in time; "
                                             "create a new one")


class Replaced(WaitError):
    """A newer stream follows the ticket (FAILED_PRECONDITION `ticket/replaced`)."""

    def __init__(self) -> None:
        super().__init__("ticket/replaced", "a newer stream took over this ticket")


# ---------------------------------------------------------------------------------- updates
@dataclass(frozen=True)
class Waiting:
    ticket_id: str
    waited_s: int
    window: float


@dataclass(frozen=True)
class Assigned:
    ticket_id: str
    table_id: str
    shard_id: str
    players: tuple[str, ...]


Update = Waiting | Assigned


@dataclass(frozen=True)
class MatchResult:
    """One stored smazzata result, as the agorà uses it."""

    table_id: str
    players: tuple[str, ...]
    scores: tuple[int, ...]
    competitive: bool
    match_ended: bool
    ranks: tuple[float, ...] = ()  # a ranked classic session's end: per seat (issue 16)


class End(enum.Enum):
    CANCELLED = "cancelled"  # the ticket was cancelled: the stream ends normally
    STOPPING = "stopping"  # matchmaking is shutting down: the stream ends with UNAVAILABLE
    EXPIRED = "expired"  # the lobby outlived its TTL: NOT_FOUND friendly/expired
    REPLACED = "replaced"  # a newer stream of the ticket: FAILED_PRECONDITION


_ENDS = {end.value: end for end in End}
