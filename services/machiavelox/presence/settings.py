"""The presence service's settings, read once from the environment.

Why presence reports *silence*, and the shard decides *dormancy* (10 s) and *abandonment* (90 s):

- Apps send a sign of life about every 2 s. `MACHIAVELOX_PRESENCE_SILENCE_MS` (default 5000, two
  and a half heartbeats, so one lost heartbeat does not flap) is how long presence waits before
  reporting a player silent. A silent change carries `silent_for_ms`, how long the player has
  been silent (a duration on presence's one clock: never a timestamp for another machine to
  compare with its own), so the shard arms its own 10 s and 90 s timers from the start of the
  absence, whatever the sweep latency. It is never more than presence could vouch for: after an
  outage of presence or its store the player is `unknown`, and silence counts from when
  presence could tell again (store.py).
- Any game action is also a sign of life (M11.1); actions reach the shard, not presence.
- The 90 s clock depends on game state presence never sees: it does not run for frozen players
  during a Stop! and restarts when the freeze ends, nor for non-participants in a tiebreak, and
  counts from the start of the game (M11.5); abandonments maturing together are judged together
  (M11.3). Only the table engine, with its deterministic clock and action log, can apply that and
  replay it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from machiavelox.platform.observability import ObservabilitySettings
from machiavelox.platform.settings import (
    SettingsError,
    env_grace_s,
    env_int,
    env_log_level,
    env_port,
    env_str,
)

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True)
class PresenceSettings:
    """Where to listen, which store, and the silence threshold."""

    host: str = "127.0.0.1"  # MACHIAVELOX_PRESENCE_HOST
    port: int = 7400  # MACHIAVELOX_PRESENCE_PORT
    grace_s: float = 5.0  # MACHIAVELOX_GRACE_S
    log_level: str = "INFO"  # MACHIAVELOX_LOG_LEVEL
    # MACHIAVELOX_PRESENCE_REDIS_URL: "" = in memory (one replica only); redis://host:port/db =
    # shared by every replica
    redis_url: str = ""
    silence_ms: int = 5000  # MACHIAVELOX_PRESENCE_SILENCE_MS: a player silent this long is silent
    key_prefix: str = "mxv:"  # MACHIAVELOX_PRESENCE_KEY_PREFIX: of every Redis key
    # OTEL_* (platform/telemetry.py), MACHIAVELOX_METRICS_PORT and _HOST (platform/metrics.py)
    observability: ObservabilitySettings = field(
        default_factory=lambda: ObservabilitySettings.from_env("presence", {}))

    @property
    def sweep_interval_s(self) -> float:
        """How often silence is looked for (and each replica records its beacon): a tenth of
        the threshold, between 10 ms and 1 s."""
        return min(1000, max(10, self.silence_ms // 10)) / 1000

    @property
    def store_timeout_s(self) -> float:
        """Each Redis command's timeout: a fifth of the threshold, between 0.2 s and 1 s (it
        must stay well under the threshold less the apps' 2 s heartbeat interval:
        redis_store.py)."""
        return min(1.0, max(0.2, self.silence_ms / 5000))

    @property
    def stale_ms(self) -> int:
        """A replica whose last beacon is older than this is out of the way of silences: half
        the threshold, and at least three sweeps."""
        return max(self.silence_ms // 2, 3 * int(self.sweep_interval_s * 1000))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PresenceSettings:
        port = env_port("PRESENCE_PORT", cls.port, env)
        grace_s = env_grace_s(cls.grace_s, env)
        level = env_log_level(cls.log_level, env)
        redis_url = env_str("PRESENCE_REDIS_URL", cls.redis_url, env)
        if redis_url and not redis_url.startswith(_REDIS_SCHEMES):
            raise SettingsError("MACHIAVELOX_PRESENCE_REDIS_URL must be empty (in memory) or a "
                                f"redis://host:port/db URL, not {redis_url!r}")
        return cls(
            host=env_str("PRESENCE_HOST", cls.host, env),
            port=port,
            grace_s=grace_s,
            log_level=level,
            redis_url=redis_url,
            silence_ms=env_int("PRESENCE_SILENCE_MS", cls.silence_ms, env, minimum=10),
            key_prefix=env_str("PRESENCE_KEY_PREFIX", cls.key_prefix, env),
            observability=ObservabilitySettings.from_env("presence", env),
        )
