"""What a shard knows of each seated player's signs of life, and so what the engine is told
(M11; issue 13, item 1: missing data is "unknown", never "absent").

Two sources, one rule:
- **First-hand**: the gateway that holds the player's stream at a table. Its session's
  subscription, every action and every `LivenessItem` it forwards is a sign of life; each one
  gives the player a lease: alive for `LEASE_MS` after it, whatever else is said. (A gateway
  sends a LivenessItem at most every few seconds while the app heartbeats: gateway/links.py.)
- **Presence** (the presence service's WatchLiveness stream, per player): alive, silent for a
  duration, or unknown (presence or its store cannot tell; also while the shard's stream to
  presence is down).

Per (table, player): alive while a lease runs; else what presence says, where a silence is
dated no earlier than the last first-hand sign. The engine gets a `Liveness` input only when
that changes; "unknown" stops the player's absence count, and the engine counts a silence
known after it from then (rules/endings.py), so no outage of ours, of presence's store or of a
link ever becomes a player's absence. Silence is a duration measured on one clock (presence's
own, or this shard's monotonic timeline), never two machines' wall clocks compared.
"""

from __future__ import annotations

from dataclasses import dataclass

LEASE_MS = 12_000  # a first-hand sign keeps the player alive this long (gateways report every 4 s)


@dataclass(frozen=True, slots=True)
class Heard:
    """alive | silent (since `since_ms`, the shard's clock) | unknown."""

    kind: str
    since_ms: int = 0


ALIVE = Heard("alive")
UNKNOWN = Heard("unknown")
Key = tuple[str, str]  # (table id, player id)


class Evidence:
    def __init__(self) -> None:
        self._presence: dict[str, Heard] = {}  # by player (absent: alive, the engine's start)
        self._signs: dict[Key, int] = {}  # the last first-hand sign, shard ms
        self._told: dict[Key, Heard] = {}  # what the engine was last told

    # ------------------------------------------------------------------ what is heard
    def sign(self, key: Key, now_ms: int) -> None:
        """A first-hand sign of life of the player at the table, now."""
        self._signs[key] = now_ms

    def presence(self, player: str, heard: Heard) -> None:
        self._presence[player] = heard

    def presence_unknown(self, players: set[str]) -> None:
        """The stream from presence is down: nothing it said of `players` (every player
        seated here) holds any more."""
        for player in players | set(self._presence):
            self._presence[player] = UNKNOWN

    # ------------------------------------------------------------------ what follows
    def current(self, key: Key, now_ms: int) -> Heard:
        sign = self._signs.get(key)
        if sign is not None and now_ms - sign < LEASE_MS:
            return ALIVE
        heard = self._presence.get(key[1], ALIVE)
        if heard.kind == "silent" and sign is not None and sign > heard.since_ms:
            return Heard("silent", sign)  # first-hand: alive until then
        return heard

    def change(self, key: Key, now_ms: int) -> Heard | None:
        """What the engine must be told about the player at the table now (None: nothing
        new)."""
        heard = self.current(key, now_ms)
        if heard.kind == self._told.get(key, ALIVE).kind:
            return None  # (a silence is told once: its count runs in the engine)
        self._told[key] = heard
        return heard

    def lapsed(self, now_ms: int) -> list[Key]:
        """The (table, player)s told alive whose lease has run out (to be told anew if what
        presence says now is not alive)."""
        return [key for key, sign in self._signs.items()
                if now_ms - sign >= LEASE_MS and self._told.get(key, ALIVE).kind == "alive"]

    def told_alive(self, key: Key) -> bool:
        return self._told.get(key, ALIVE).kind == "alive"

    def forget(self, table_id: str, players: list[str]) -> None:
        """The table left the shard."""
        for player in players:
            self._signs.pop((table_id, player), None)
            self._told.pop((table_id, player), None)

    def forget_player(self, player: str) -> None:
        """No table here seats the player any more."""
        self._presence.pop(player, None)
