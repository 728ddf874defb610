"""The `.mxs` rules-scenario runner (see SCENARIO-FORMAT.md in the shared docs).

A scenario is parsed into typed statements (`parser.parse_text`), then executed against a live
`rules.Table` with a virtual clock (`runner.run_file`, `runner.run_paths`).
"""

from .errors import ScenarioFailure, ScenarioSyntaxError
from .parser import parse_text
from .runner import FileResult, run_file, run_paths, run_text

__all__ = [
    "FileResult",
    "ScenarioFailure",
    "ScenarioSyntaxError",
    "parse_text",
    "run_file",
    "run_paths",
    "run_text",
]
