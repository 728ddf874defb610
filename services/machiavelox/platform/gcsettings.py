"""The cycle collector's pace for a service that holds many live objects at once."""

from __future__ import annotations

import gc

YOUNG = 50_000  # container allocations (net) between two young collections (CPython: 700)
MIDDLE = 50  # young collections between two of the middle generation (CPython: 10)
OLD = 100  # middle collections between two full ones (CPython: 10)


def large_generations() -> None:
    """What start-up allocated is frozen (never scanned again), and the generations are
    collected rarely: CPython's defaults collect the older generations every few seconds
    when a process allocates fast and holds much (a matchmaking replica with 10,000 tickets
    waiting spent 30% of its main thread in the collector). Reference counting frees most
    objects; a cycle waits longer to be freed (until the next young collection: at most
    YOUNG objects), and each young collection is a longer pause (tens of ms at most)."""
    gc.freeze()
    gc.set_threshold(YOUNG, MIDDLE, OLD)
