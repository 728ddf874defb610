"""The seats of a classic table (C1): p1..p6, turn order p1, p2, ... (clockwise, C4).

Machiavelox's `rules.Seat` has exactly three members (M1.5), so classic cannot use it as it is;
this enum numbers seats the same way (``p1`` is value 0) so the two agree on the first three.
"""

from __future__ import annotations

import enum

MAX_SEATS = 6


class Seat(enum.IntEnum):
    P1 = 0
    P2 = 1
    P3 = 2
    P4 = 3
    P5 = 4
    P6 = 5

    def __str__(self) -> str:
        return f"p{self.value + 1}"

    @classmethod
    def parse(cls, text: str) -> Seat:
        """``p1`` .. ``p6``; raises ValueError otherwise."""
        if len(text) == 2 and text[0] == "p" and text[1] in "123456":
            return cls(int(text[1]) - 1)
        raise ValueError(f"bad player {text!r}: use p1 .. p6")


ALL_SEATS: tuple[Seat, ...] = tuple(Seat)


def seats_of(players: int) -> tuple[Seat, ...]:
    """The seats of a table of `players` players, in turn order."""
    return ALL_SEATS[:players]
