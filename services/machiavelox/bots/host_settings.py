"""Settings of the bot host (environment variables, Helm values `botHost.*`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from machiavelox.platform.observability import ObservabilitySettings
from machiavelox.platform.settings import (
    SettingsError,
    env_float,
    env_grace_s,
    env_int,
    env_log_level,
    env_port,
    env_str,
)

from .invite import BOT_INTERVAL_S

LOGINS = ("gateway", "token")


@dataclass(frozen=True)
class BotHostSettings:
    host: str  # MACHIAVELOX_BOT_HOST_HOST
    port: int  # MACHIAVELOX_BOT_HOST_PORT (7600)
    # MACHIAVELOX_BOT_HOST_GATEWAY_ADDRESS: the public gateway the bots play through (host:port)
    gateway: str
    # MACHIAVELOX_BOT_HOST_MAX_BOTS: bots at once (default 60); SeatBots beyond it is refused
    # RESOURCE_EXHAUSTED bots/full
    max_bots: int
    # MACHIAVELOX_BOT_HOST_LOGIN: gateway (default: the gateway's development Login) | token (the
    # host mints the bots' tokens with MACHIAVELOX_TOKEN_KEY, the gateway's key, a Secret: for
    # clusters whose development Login is off)
    login: str
    token_key: bytes = field(repr=False)  # MACHIAVELOX_TOKEN_KEY (login token only)
    # MACHIAVELOX_BOT_HOST_TIME_SCALE: the tables' rules clock speed (MACHIAVELOX_TABLE_TIME_SCALE,
    # 1 in production): the levels' delays are table time
    time_scale: float = 1.0
    # MACHIAVELOX_BOT_HOST_BASIC_INTERVAL_S: seconds between a basic bot's actions (1.5)
    basic_interval_s: float = BOT_INTERVAL_S
    # MACHIAVELOX_BOT_HOST_MAX_BOT_S: a bot is stopped this long after its start (3600)
    max_bot_s: float = 3600.0
    grace_s: float = 5.0  # MACHIAVELOX_GRACE_S
    log_level: str = "INFO"  # MACHIAVELOX_LOG_LEVEL
    observability: ObservabilitySettings = field(  # OTEL_*, MACHIAVELOX_METRICS_PORT, _HOST
        default_factory=lambda: ObservabilitySettings.from_env("bot-host", {}))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BotHostSettings:
        gateway = env_str("BOT_HOST_GATEWAY_ADDRESS", "", env)
        if not gateway:
            raise SettingsError("MACHIAVELOX_BOT_HOST_GATEWAY_ADDRESS must name the gateway "
                                "(host:port) the bots play through")
        login = env_str("BOT_HOST_LOGIN", "gateway", env).lower()
        if login not in LOGINS:
            raise SettingsError(f"MACHIAVELOX_BOT_HOST_LOGIN must be gateway or token, not "
                                f"{login!r}")
        key = env_str("TOKEN_KEY", "", env).encode()
        if login == "token" and len(key) < 16:
            raise SettingsError("MACHIAVELOX_BOT_HOST_LOGIN=token needs MACHIAVELOX_TOKEN_KEY "
                                "(the gateway's, at least 16 bytes)")
        time_scale = env_float("BOT_HOST_TIME_SCALE", 1.0, env)
        interval = env_float("BOT_HOST_BASIC_INTERVAL_S", BOT_INTERVAL_S, env)
        max_bot_s = env_float("BOT_HOST_MAX_BOT_S", 3600.0, env)
        if time_scale <= 0 or interval <= 0 or max_bot_s <= 0:
            raise SettingsError("MACHIAVELOX_BOT_HOST_TIME_SCALE, _BASIC_INTERVAL_S and "
                                "_MAX_BOT_S must be positive")
        return cls(
            host=env_str("BOT_HOST_HOST", "127.0.0.1", env),
            port=env_port("BOT_HOST_PORT", 7600, env),
            gateway=gateway,
            max_bots=env_int("BOT_HOST_MAX_BOTS", 60, env, minimum=1),
            login=login,
            token_key=key if login == "token" else b"",
            time_scale=time_scale,
            basic_interval_s=interval,
            max_bot_s=max_bot_s,
            grace_s=env_grace_s(5.0, env),
            log_level=env_log_level("INFO", env),
            observability=ObservabilitySettings.from_env("bot-host", env),
        )
