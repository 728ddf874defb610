"""Classic Machiavelli scenarios (`rules classic`, SCENARIO-FORMAT.md "Classic Machiavelli").

`is_classic(text)` tells a classic scenario from a Machiavelox one; `parse_text` and
`ClassicRunner` parse and run it against `machiavelox.classic`. The package's `run_text`
dispatches here, so `machiavelox scenario` runs both kinds side by side.
"""

from .parser import is_classic, parse_text
from .runner import ClassicRunner

__all__ = ["ClassicRunner", "is_classic", "parse_text"]
