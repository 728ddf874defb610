"""What a table answered each player's actions, by the app's `client_action_id` (issue 13,
item 5): an idempotency key per (table, player), so a resent action gets its original outcome
(the same Ack, with the same seq and arrival index, or the same refusal) and is never applied
twice.

An answer is kept while it is among its player's last `KEEP` ones or younger than `WINDOW_MS`
of table time, and never past `CAP` a player (a bound on memory, well above what the action
rate limit lets a player send in the window). Accepted actions are journaled with their key,
so a table restored from its journal answers them alike; a refusal is not journaled (nothing
changed), so after a restart a resent refused action is judged afresh: it was never applied,
and applying it then applies it once.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from machiavelox import rules

KEEP = 256  # at least the last 256 ids of a player...
WINDOW_MS = 120_000  # ...and every id of the last 2 minutes (table time)
CAP = 4_096  # ...but never more than this many


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of an action: accepted (first_seq, arrival) or refused (error)."""

    at_ms: int
    action: object  # the engine's action (either ruleset's): compared with a resend's
    arrival: int
    first_seq: int
    error: rules.RulesError | None


class Answers:
    """One table's answers, by player and client_action_id."""

    __slots__ = ("_by_player",)

    def __init__(self) -> None:
        self._by_player: dict[int, OrderedDict[str, Answer]] = {}

    def get(self, seat: int, action_id: str) -> Answer | None:
        kept = self._by_player.get(seat)
        return None if kept is None else kept.get(action_id)

    def remember(self, seat: int, action_id: str, answer: Answer) -> None:
        kept = self._by_player.get(seat)
        if kept is None:
            kept = self._by_player[seat] = OrderedDict()
        kept[action_id] = answer
        kept.move_to_end(action_id)
        horizon = answer.at_ms - WINDOW_MS
        while len(kept) > CAP or (len(kept) > KEEP and next(iter(kept.values())).at_ms < horizon):
            kept.popitem(last=False)

    def __len__(self) -> int:
        return sum(len(kept) for kept in self._by_player.values())
