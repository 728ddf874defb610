"""The scoring service's settings, read once from the environment at start-up.

    MACHIAVELOX_SCORING_HOST          where to listen (127.0.0.1)
    MACHIAVELOX_SCORING_PORT          the port (7300; 0 = any free port, logged once bound)
    MACHIAVELOX_GRACE_S               seconds in-flight calls get on SIGTERM (5)
    MACHIAVELOX_LOG_LEVEL             DEBUG, INFO, WARNING, ERROR (INFO)
    MACHIAVELOX_DATA_DIR              where the default SQLite file lives (.machiavelox-data)
    MACHIAVELOX_SCORING_DATABASE_URL  sqlite:///<path> or postgresql://... (the SQLite file
                                      `scoring.sqlite3` under the data dir)
    MACHIAVELOX_SCORING_POLL_S        how often an idle subscriber re-reads the log even without
                                      a wake-up, the safety net under LISTEN/NOTIFY (2)
    MACHIAVELOX_METRICS_PORT, _HOST   /metrics (platform/metrics.py); OTEL_* for tracing
                                      (platform/telemetry.py)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from machiavelox.platform.dburl import SQLITE_PREFIX
from machiavelox.platform.dburl import check_database_url as check_url
from machiavelox.platform.observability import ObservabilitySettings
from machiavelox.platform.settings import (
    SettingsError,
    env_float,
    env_grace_s,
    env_log_level,
    env_port,
    env_str,
)


@dataclass(frozen=True)
class ScoringSettings:
    host: str
    port: int
    grace_s: float
    log_level: str
    database_url: str = field(repr=False)  # may hold a password
    poll_s: float
    observability: ObservabilitySettings = field(
        default_factory=lambda: ObservabilitySettings.from_env("scoring", {}))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ScoringSettings:
        port = env_port("SCORING_PORT", 7300, env)
        grace_s = env_grace_s(5.0, env)
        poll_s = env_float("SCORING_POLL_S", 2.0, env)
        if poll_s <= 0:
            raise SettingsError(f"MACHIAVELOX_SCORING_POLL_S must be positive, not {poll_s}")
        log_level = env_log_level("INFO", env)
        data_dir = Path(env_str("DATA_DIR", ".machiavelox-data", env))
        default_url = SQLITE_PREFIX + str(data_dir / "scoring.sqlite3")
        url = env_str("SCORING_DATABASE_URL", default_url, env)
        check_database_url(url)
        return cls(host=env_str("SCORING_HOST", "127.0.0.1", env), port=port, grace_s=grace_s,
                   log_level=log_level, database_url=url, poll_s=poll_s,
                   observability=ObservabilitySettings.from_env("scoring", env))

    @property
    def backend(self) -> str:
        """``sqlite`` or ``postgresql``: safe to log, unlike the URL (it may hold a password)."""
        return "sqlite" if self.database_url.startswith(SQLITE_PREFIX) else "postgresql"


def check_database_url(url: str) -> None:
    check_url(url, "MACHIAVELOX_SCORING_DATABASE_URL")
