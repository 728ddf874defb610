"""The one entry point of every service command (`machiavelox gateway`, `table`, ...).

    def main(argv: list[str]) -> int:
        return run_service("gateway", __doc__, GatewaySettings.from_env, serve, argv)

`run_service` parses the command line (`--help` prints the command's usage, the module
docstring and every setting it reads, then exits 0 without starting anything), reads the
settings, configures the JSON logs and runs `serve(settings)` until it returns (SIGTERM).
Exit codes: 0 stopped cleanly; 1 could not start (a port taken, a store unreachable: one
log line); 2 bad command line or bad settings (one line on stderr, `machiavelox <cmd>: ...`,
no traceback).

The settings listed by `--help` are the ones the code documents, where it reads them (one
source): every line of a comment or docstring of the service's settings module, and of the
platform modules every service uses, that starts with a `MACHIAVELOX_*` or `OTEL_*` name,
with its continuation lines. A setting the settings module reads but does not document is
still listed, by name.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import io
import logging
import re
import sys
import textwrap
import tokenize
from collections.abc import Callable, Coroutine, Iterator, Sequence
from types import ModuleType
from typing import Any, Protocol, TypeVar

from . import logs
from .settings import SettingsError

log = logging.getLogger(__name__)

# The platform modules whose settings every service reads (beside its own settings module).
PLATFORM_SETTINGS = ("machiavelox.platform.server", "machiavelox.platform.tls",
                     "machiavelox.platform.metrics", "machiavelox.platform.telemetry")

EXIT_CODES = ("exit codes: 0 stopped cleanly (SIGTERM, even while starting); 1 could not "
              "start (a port taken, a store unreachable); 2 bad command line or settings")

_NAME = re.compile(r"(?:MACHIAVELOX|OTEL)_[A-Z0-9_]*[A-Z0-9]")
_MENTION = re.compile(_NAME.pattern
                      + r"|(?<![A-Za-z0-9])_[A-Z][A-Z0-9_]*[A-Z0-9]")  # and short forms: _BURST
_BRACES = re.compile(r"((?:MACHIAVELOX|OTEL)_[A-Z0-9_]*)\{([A-Z0-9_,]+)\}([A-Z0-9_]*)")
# How a settings module reads a MACHIAVELOX_ setting (platform/settings.py's helpers).
_READS = (
    (re.compile(r"env_(?:str|int|float|bool|map|port)\(\s*\"([A-Z0-9_]+)\""), ("",)),
    (re.compile(r"env_rate\(\s*\"([A-Z0-9_]+)\""), ("_RATE", "_BURST")),
    (re.compile(r"env_(grace_s|log_level)\("), ("",)),
)


class HasLogLevel(Protocol):  # every service's settings
    @property
    def log_level(self) -> str: ...


S = TypeVar("S", bound=HasLogLevel)


def run_service(name: str, doc: str | None, load_settings: Callable[[], S],
                serve: Callable[[S], Coroutine[Any, Any, None]], argv: Sequence[str], *,
                prepare: Callable[[S], None] | None = None,
                cannot_start: tuple[type[Exception], ...] = ()) -> int:
    """Run the service `name`: see the module docstring. `prepare` runs once the logs are
    configured, before serving (the shard's GC tuning); `cannot_start` are the errors, besides
    OSError, that mean the service could not start (exit 1)."""
    parser = _Parser(_module_of(load_settings), prog=f"machiavelox {name}", description=doc,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    try:
        parser.parse_args(list(argv))
    except SystemExit as stop:  # --help (0) or a bad argument (2, usage printed)
        return stop.code if isinstance(stop.code, int) else 2
    try:
        settings = load_settings()
    except SettingsError as exc:
        return _bad_settings(name, exc)
    logs.configure(name, settings.log_level)
    if prepare is not None:
        prepare(settings)
    failed_to_start: tuple[type[Exception], ...] = (OSError, *cannot_start)
    try:
        asyncio.run(serve(settings))
    except SettingsError as exc:  # read while starting (tracing, certificates, reflection)
        return _bad_settings(name, exc)
    except failed_to_start as exc:
        log.critical("%s cannot start: %s", name, exc)
        return 1
    return 0


class _Parser(argparse.ArgumentParser):
    """Lists the settings in its help, found only when the help is asked for (reading the
    modules' sources takes tens of ms: not on every start)."""

    def __init__(self, settings: ModuleType | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.settings = settings

    def format_help(self) -> str:
        if self.epilog is None:
            self.epilog = settings_help(self.settings)
        return super().format_help()


def _bad_settings(name: str, exc: SettingsError) -> int:
    print(f"machiavelox {name}: {exc}", file=sys.stderr)
    return 2


def _module_of(load_settings: Callable[[], object]) -> ModuleType | None:
    return sys.modules.get(getattr(load_settings, "__module__", "") or "")


# ---------------------------------------------------------------------------------- --help
def settings_help(module: ModuleType | None) -> str:
    """The settings part of a command's `--help`: what `module` (the service's settings) and
    the platform modules document, then what `module` reads without documenting it."""
    own = documented(module)
    shared = documented(*(_load(name) for name in PLATFORM_SETTINGS))
    listed = mentioned("\n".join(own))
    missing = [name for name in settings_read(module) if name not in listed]
    parts = ["settings (environment variables, read once at start):", *_indented(own)]
    if missing:
        parts += textwrap.wrap("also read: " + ", ".join(missing), 96,
                               initial_indent="  ", subsequent_indent="    ")
    parts += ["settings every service reads:", *_indented(shared), "", EXIT_CODES]
    return "\n".join(parts)


def _indented(entries: list[str]) -> list[str]:
    return ["  " + line for entry in entries for line in entry.splitlines()]


def _load(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _source(module: ModuleType | None) -> str:
    if module is None:
        return ""
    try:
        return inspect.getsource(module)
    except (OSError, TypeError):
        return module.__doc__ or ""


def settings_read(module: ModuleType | None) -> list[str]:
    """The MACHIAVELOX_* names `module`'s code reads through platform/settings.py, in order."""
    source = _source(module)
    found: dict[str, int] = {}
    for pattern, suffixes in _READS:
        for match in pattern.finditer(source):
            for suffix in suffixes:
                found.setdefault(f"MACHIAVELOX_{match.group(1).upper()}{suffix}", match.start())
    return sorted(found, key=found.__getitem__)


def mentioned(text: str) -> set[str]:
    """The setting names `text` mentions, short forms spelled out: in
    "MACHIAVELOX_X_RATE/_BURST, _Y_RATE", `_BURST` is MACHIAVELOX_X_BURST (as many trailing
    words replaced as the short form has) and `_Y_RATE` is MACHIAVELOX_Y_RATE."""
    names: set[str] = set()
    last = ""
    text = _BRACES.sub(lambda m: " ".join(f"{m.group(1)}{alt}{m.group(3)}"
                                          for alt in m.group(2).split(",")), text)
    for match in _MENTION.finditer(text):
        word = match.group(0)
        if word.startswith("_"):
            if not last:
                continue
            parts = last.split("_")
            short = word[1:].split("_")
            if len(short) >= len(parts) - 1:
                continue
            word = "_".join(parts[: len(parts) - len(short)] + short)
        names.add(word)
        last = word
    return names


def documented(*modules: ModuleType | None) -> list[str]:
    """Every setting `modules` document, once: each comment or docstring line that starts
    with a setting's name (not in the middle of a paragraph), with the lines that continue it
    (one string per setting; a name already documented is not repeated)."""
    seen: set[str] = set()
    out: list[str] = []
    for module in modules:
        for entry in _entries(_source(module)):
            name = _NAME.match(entry).group(0)  # type: ignore[union-attr]
            if name not in seen:
                seen.add(name)
                out.append(entry)
    return out


def _entries(source: str) -> Iterator[str]:
    for block in _text_blocks(source):
        current: list[str] = []
        indent = 0
        prose = False  # in a paragraph: a name that starts its next line is not an entry
        for line in block:
            text = line.strip()
            depth = len(line) - len(line.lstrip())
            if _NAME.match(text) and not prose:
                if current:
                    yield "\n".join(current)
                current, indent = [text], depth
            elif current and text and (block.comments or depth > indent):
                current.append("    " + text)
            else:
                if current:
                    yield "\n".join(current)
                current, prose = [], bool(text)
        if current:
            yield "\n".join(current)


class _Block(list[str]):
    """The lines of one docstring, or of comments standing alone on consecutive lines (or
    one comment after code)."""

    def __init__(self, comments: bool) -> None:
        super().__init__()
        self.comments = comments


def _text_blocks(source: str) -> Iterator[_Block]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    comments: _Block | None = None
    last_row = -1
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            alone = tok.line[:tok.start[1]].strip() == ""
            if not (alone and comments is not None and comments.comments
                    and tok.start[0] == last_row + 1):
                if comments is not None:
                    yield comments
                comments = _Block(comments=alone)
            comments.append(tok.string.lstrip("#"))
            last_row = tok.start[0]
        elif tok.type == tokenize.STRING and tok.string.endswith(('"""', "'''")):
            block = _Block(comments=False)
            block.extend(tok.string.lstrip("rbuRBU")[3:-3].splitlines())
            yield block
    if comments is not None:
        yield comments
