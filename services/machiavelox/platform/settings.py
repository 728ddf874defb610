"""Settings from the environment, read once at start-up, failing fast with a clear message.

Every service has one frozen settings dataclass; each key is an environment variable
`MACHIAVELOX_<NAME>` and maps one-to-one to a Helm value (docs/operations.md lists them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .ratelimit import Rate


class SettingsError(ValueError):
    """A setting is missing or malformed: the service refuses to start."""


PREFIX = "MACHIAVELOX_"


def _raw(name: str, env: Mapping[str, str] | None) -> str | None:
    source = os.environ if env is None else env
    return source.get(PREFIX + name)


def env_str(name: str, default: str, env: Mapping[str, str] | None = None) -> str:
    value = _raw(name, env)
    return default if value is None or value == "" else value


def env_int(name: str, default: int, env: Mapping[str, str] | None = None,
            minimum: int | None = None) -> int:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    try:
        out = int(value)
    except ValueError:
        raise SettingsError(f"{PREFIX}{name} must be an integer, not {value!r}") from None
    if minimum is not None and out < minimum:
        raise SettingsError(f"{PREFIX}{name} must be at least {minimum}, not {out}")
    return out


def env_float(name: str, default: float, env: Mapping[str, str] | None = None) -> float:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise SettingsError(f"{PREFIX}{name} must be a number, not {value!r}") from None


def env_bool(name: str, default: bool, env: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, env)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{PREFIX}{name} must be true or false, not {value!r}")


def env_map(name: str, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``a=x,b=y`` -> {"a": "x", "b": "y"}."""
    value = _raw(name, env)
    out: dict[str, str] = {}
    if not value:
        return out
    for item in value.split(","):
        key, sep, val = item.strip().partition("=")
        if not sep or not key or not val:
            raise SettingsError(f"{PREFIX}{name} must look like name=value,name=value; "
                                f"bad item {item!r}")
        out[key] = val
    return out


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def env_port(name: str, default: int, env: Mapping[str, str] | None = None) -> int:
    """A TCP port, 0-65535 (0: any free port)."""
    port = env_int(name, default, env, minimum=0)
    if port > 65535:
        raise SettingsError(f"{PREFIX}{name} must be at most 65535, not {port}")
    return port


def env_batch_window_s(default_ms: float = 2.0, env: Mapping[str, str] | None = None) -> float:
    """MACHIAVELOX_BATCH_WINDOW_MS (0-50): frame pacing of a multiplexed stream under load
    (platform/outbox.py), in seconds."""
    ms = env_float("BATCH_WINDOW_MS", default_ms, env)
    if not 0 <= ms <= 50:
        raise SettingsError(f"{PREFIX}BATCH_WINDOW_MS must be between 0 and 50, not {ms}")
    return ms / 1000


def env_grace_s(default: float = 5.0, env: Mapping[str, str] | None = None) -> float:
    """MACHIAVELOX_GRACE_S: how long in-flight calls get after SIGTERM."""
    grace_s = env_float("GRACE_S", default, env)
    if grace_s < 0:
        raise SettingsError(f"{PREFIX}GRACE_S must not be negative, not {grace_s}")
    return grace_s


def env_log_level(default: str = "INFO", env: Mapping[str, str] | None = None) -> str:
    """MACHIAVELOX_LOG_LEVEL, one of LOG_LEVELS (any case)."""
    level = env_str("LOG_LEVEL", default, env).upper()
    if level not in LOG_LEVELS:
        raise SettingsError(f"{PREFIX}LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, "
                            f"not {level!r}")
    return level


def env_rate(name: str, default: Rate, env: Mapping[str, str] | None = None) -> Rate:
    """A rate limit from `<name>_RATE` (per second, > 0) and `<name>_BURST` (at once, >= 1)."""
    per_s = env_float(f"{name}_RATE", default.per_s, env)
    burst = env_float(f"{name}_BURST", default.burst, env)
    try:
        return Rate(per_s, burst)  # checks per_s > 0, burst >= 1
    except ValueError:
        raise SettingsError(f"{PREFIX}{name}_RATE must be > 0 and {PREFIX}{name}_BURST >= 1"
                            ) from None
