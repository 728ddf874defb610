"""How much the property tests explore, one rule for all of them: CI (CI=true) runs a fixed,
derandomized set of examples so a landing is reproducible; developers' runs explore new random
examples every time (MACHIAVELOX_HYPOTHESIS_RANDOM=1 forces that in CI too), and
MACHIAVELOX_HYPOTHESIS_EXAMPLES sets how many (60 by default; long explorations)."""

from __future__ import annotations

import os

from hypothesis import settings

DERANDOMIZE = os.environ.get("CI") == "true" and not os.environ.get("MACHIAVELOX_HYPOTHESIS_RANDOM")
EXAMPLES = int(os.environ.get("MACHIAVELOX_HYPOTHESIS_EXAMPLES", "60"))


def exploring(**more: int) -> settings:
    """The settings of a property test (`more`: e.g. stateful_step_count)."""
    if DERANDOMIZE:
        return settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                        **more)  # type: ignore[arg-type]
    return settings(max_examples=EXAMPLES, deadline=None, **more)  # type: ignore[arg-type]
