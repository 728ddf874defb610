"""Settings of a gateway (environment variables, Helm values `gateway.*`)."""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox.identity.verifier import IdentitySettings
from machiavelox.platform.ratelimit import Rate
from machiavelox.platform.settings import (
    SettingsError,
    env_batch_window_s,
    env_bool,
    env_float,
    env_grace_s,
    env_int,
    env_log_level,
    env_map,
    env_port,
    env_rate,
    env_str,
)

from .login import DEFAULT_LOGINS
from .pace import DEFAULT_ACTIONS, DEFAULT_MESSAGES, DEFAULT_RESYNCS, PaceSettings
from .session import SessionLimits


@dataclass(frozen=True)
class GatewaySettings:
    gateway_id: str  # MACHIAVELOX_GATEWAY_ID
    host: str  # MACHIAVELOX_GATEWAY_HOST
    port: int  # MACHIAVELOX_GATEWAY_PORT
    # MACHIAVELOX_TOKEN_MODE, MACHIAVELOX_TOKEN_KEY (a Secret), MACHIAVELOX_OIDC_*: the tokens
    # accepted (identity.py); the same settings as matchmaking's
    identity: IdentitySettings
    dev_login: bool  # MACHIAVELOX_GATEWAY_DEV_LOGIN: the development Login (login.py), off
    login_rate: Rate  # MACHIAVELOX_GATEWAY_LOGIN_RATE (per second), _BURST: per source address
    # MACHIAVELOX_GATEWAY_SHARDS: shard-0=host:port,... every shard that can exist (the chart
    # lists the StatefulSet's ordinals up to its maximum): a table id of any other shard is
    # NOT_FOUND without opening a link (docs/security.md)
    shards: dict[str, str]
    presence: str  # MACHIAVELOX_PRESENCE_ADDRESS ("" = none)
    # MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS: the agorà relayed to apps ("" = not served here)
    matchmaking: str
    # MACHIAVELOX_GATEWAY_AGORA_LINK: the apps' Enqueues as streams of one multiplexed call to
    # matchmaking (agora_link.py; matchmaking pays gRPC's cost per call once), not a call each
    agora_link: bool
    batch_window_s: float  # MACHIAVELOX_BATCH_WINDOW_MS: frame pacing under load (Outbox)
    # MACHIAVELOX_GATEWAY_ACTION_RATE/_BURST, _RESYNC_RATE/_BURST, _MESSAGE_RATE/_BURST: the
    # pace rules (gateway/pace.py)
    pace: PaceSettings
    # MACHIAVELOX_GATEWAY_SESSION_QUEUE_MESSAGES, _SESSION_QUEUE_BYTES: what may wait for one
    # app to read before its session ends with `session/slow` (gateway/session.py)
    session_limits: SessionLimits
    link_idle_s: float  # MACHIAVELOX_GATEWAY_LINK_IDLE_S: a shard link with no session closes
    grace_s: float  # MACHIAVELOX_GRACE_S
    log_level: str  # MACHIAVELOX_LOG_LEVEL
    # MACHIAVELOX_GATEWAY_TRUST_TRACEPARENT: continue an app's `traceparent` (false: every call
    # starts a new trace, sampled by the gateway's own sampler; docs/security.md)
    trust_traceparent: bool

    @classmethod
    def from_env(cls) -> GatewaySettings:
        identity = IdentitySettings.from_env()
        dev_login = env_bool("GATEWAY_DEV_LOGIN", False)
        if dev_login and not identity.hmac:
            raise SettingsError("MACHIAVELOX_GATEWAY_DEV_LOGIN needs MACHIAVELOX_TOKEN_MODE hmac "
                                "or both: its tokens are development (HMAC) tokens")
        shards = env_map("GATEWAY_SHARDS")
        if not shards:
            raise SettingsError("set MACHIAVELOX_GATEWAY_SHARDS (shard-0=host:port,...)")
        limits = SessionLimits(
            messages=env_int("GATEWAY_SESSION_QUEUE_MESSAGES", SessionLimits.messages,
                             minimum=16),
            bytes=env_int("GATEWAY_SESSION_QUEUE_BYTES", SessionLimits.bytes,
                          minimum=256 * 1024))
        return cls(
            gateway_id=env_str("GATEWAY_ID", "gateway"),
            host=env_str("GATEWAY_HOST", "127.0.0.1"),
            port=env_port("GATEWAY_PORT", 7000),
            identity=identity,
            dev_login=dev_login,
            login_rate=env_rate("GATEWAY_LOGIN", DEFAULT_LOGINS),
            shards=shards,
            presence=env_str("PRESENCE_ADDRESS", ""),
            matchmaking=env_str("GATEWAY_MATCHMAKING_ADDRESS", ""),
            agora_link=env_bool("GATEWAY_AGORA_LINK", True),
            batch_window_s=env_batch_window_s(),
            pace=PaceSettings(actions=env_rate("GATEWAY_ACTION", DEFAULT_ACTIONS),
                              resyncs=env_rate("GATEWAY_RESYNC", DEFAULT_RESYNCS),
                              messages=env_rate("GATEWAY_MESSAGE", DEFAULT_MESSAGES)),
            session_limits=limits,
            link_idle_s=max(1.0, env_float("GATEWAY_LINK_IDLE_S", 300.0)),
            grace_s=env_grace_s(),
            log_level=env_log_level("INFO"),
            trust_traceparent=env_bool("GATEWAY_TRUST_TRACEPARENT", False),
        )

