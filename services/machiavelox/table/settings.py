"""Settings of a table-authority shard (environment variables, Helm values `table.*`)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from machiavelox.platform.dburl import check_database_url
from machiavelox.platform.ratelimit import Rate
from machiavelox.platform.settings import (
    SettingsError,
    env_batch_window_s,
    env_float,
    env_grace_s,
    env_int,
    env_log_level,
    env_port,
    env_rate,
    env_str,
)

DEFAULT_ACTION_RATE = Rate(per_s=20, burst=40)  # the gateway's default, twice


@dataclass(frozen=True)
class TableSettings:
    shard_id: str  # MACHIAVELOX_SHARD_ID; default: the host name (a StatefulSet pod name)
    host: str  # MACHIAVELOX_TABLE_HOST
    port: int  # MACHIAVELOX_TABLE_PORT
    capacity: int  # MACHIAVELOX_TABLE_CAPACITY: most tables in play at once
    scoring: str  # MACHIAVELOX_SCORING_ADDRESS ("" = results are only logged)
    presence: str  # MACHIAVELOX_PRESENCE_ADDRESS ("" = liveness only from gateways)
    time_scale: float  # MACHIAVELOX_TABLE_TIME_SCALE: 1 in production; > 1 speeds up demos
    batch_window_s: float  # MACHIAVELOX_BATCH_WINDOW_MS: frame pacing under load (Outbox)
    # MACHIAVELOX_TABLE_DRAIN_S: on SIGTERM, how long the shard keeps serving its tables in play
    # before it stops (0 locally; the Helm chart sets it below terminationGracePeriodSeconds)
    drain_s: float
    # MACHIAVELOX_TABLE_DEAL_SEED: tests only: every table's first deal is the seeded one, so a
    # test can know the cards (unset in production: deals come from the system's randomness)
    deal_seed: int | None
    # MACHIAVELOX_TABLE_ACTION_RATE, _ACTION_BURST: each player's actions at a table, per
    # second and at once (a second line behind the gateway's limit; docs/security.md)
    action_rate: Rate
    # MACHIAVELOX_TABLE_JOURNAL: where the tables' journal is stored: `sqlite:///path` (the
    # embedded default, in MACHIAVELOX_DATA_DIR), `postgresql://...` (deployed), or `off`
    # (benchmarks only: a crash loses the tables)
    journal: str
    journal_timeout_s: float  # MACHIAVELOX_TABLE_JOURNAL_TIMEOUT_S: a write longer fails
    # MACHIAVELOX_TABLE_RESUME_GRACE_S: an ended table whose results are stored stays in memory
    # this long for late resumes, then leaves (its final snapshot is kept)
    resume_grace_s: float
    # MACHIAVELOX_TABLE_REPORT_WAIT_S: on SIGTERM, how long results in flight to scoring are
    # waited for (what is left is reported by the next start, from the journal)
    report_wait_s: float
    grace_s: float  # MACHIAVELOX_GRACE_S
    log_level: str  # MACHIAVELOX_LOG_LEVEL

    @classmethod
    def from_env(cls) -> TableSettings:
        shard_id = env_str("SHARD_ID", os.environ.get("HOSTNAME") or socket.gethostname())
        data_dir = Path(env_str("DATA_DIR", ".machiavelox-data")).resolve()
        return cls(
            shard_id=shard_id,
            host=env_str("TABLE_HOST", "127.0.0.1"),
            port=env_port("TABLE_PORT", 7100),
            capacity=env_int("TABLE_CAPACITY", 2000, minimum=1),
            scoring=env_str("SCORING_ADDRESS", ""),
            presence=env_str("PRESENCE_ADDRESS", ""),
            time_scale=_positive(env_float("TABLE_TIME_SCALE", 1.0)),
            batch_window_s=env_batch_window_s(),
            drain_s=max(0.0, env_float("TABLE_DRAIN_S", 0.0)),
            deal_seed=env_int("TABLE_DEAL_SEED", 0) if env_str("TABLE_DEAL_SEED", "") else None,
            action_rate=env_rate("TABLE_ACTION", DEFAULT_ACTION_RATE),
            journal=_journal(env_str("TABLE_JOURNAL",
                                     f"sqlite:///{data_dir / f'journal-{shard_id}.sqlite3'}")),
            journal_timeout_s=_positive_s("TABLE_JOURNAL_TIMEOUT_S",
                                          env_float("TABLE_JOURNAL_TIMEOUT_S", 2.0)),
            resume_grace_s=max(0.0, env_float("TABLE_RESUME_GRACE_S", 120.0)),
            report_wait_s=max(0.0, env_float("TABLE_REPORT_WAIT_S", 5.0)),
            grace_s=env_grace_s(),
            log_level=env_log_level("INFO"),
        )


def _journal(url: str) -> str:
    if url != "off":
        check_database_url(url, "MACHIAVELOX_TABLE_JOURNAL")
    return url


def _positive_s(name: str, value: float) -> float:
    if value <= 0:
        raise SettingsError(f"MACHIAVELOX_{name} must be positive")
    return value


def _positive(scale: float) -> float:
    if scale <= 0:
        raise SettingsError("MACHIAVELOX_TABLE_TIME_SCALE must be positive")
    return scale

