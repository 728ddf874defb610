"""The three seats at a table (M1.5): p1, p2, p3."""

from __future__ import annotations

import enum


class Seat(enum.IntEnum):
    P1 = 0
    P2 = 1
    P3 = 2

    def __str__(self) -> str:
        return f"p{self.value + 1}"

    @classmethod
    def parse(cls, text: str) -> Seat:
        """``p1`` .. ``p3``; raises ValueError otherwise."""
        if len(text) == 2 and text[0] == "p" and text[1] in "123":
            return cls(int(text[1]) - 1)
        raise ValueError(f"bad player {text!r}: use p1, p2 or p3")


SEATS: tuple[Seat, Seat, Seat] = (Seat.P1, Seat.P2, Seat.P3)
