"""Settings of a gateway (environment variables, Helm values `gateway.*`)."""

from __future__ import annotations

from dataclasses import dataclass

from machiavelox.platform.settings import SettingsError, env_float, env_int, env_map, env_str


@dataclass(frozen=True)
class GatewaySettings:
    gateway_id: str  # MACHIAVELOX_GATEWAY_ID
    host: str  # MACHIAVELOX_GATEWAY_HOST
    port: int  # MACHIAVELOX_GATEWAY_PORT
    token_key: bytes  # MACHIAVELOX_TOKEN_KEY (a Secret in Kubernetes), >= 16 bytes
    shards: dict[str, str]  # MACHIAVELOX_GATEWAY_SHARDS: shard-0=host:port,...
    shard_template: str  # MACHIAVELOX_GATEWAY_SHARD_TEMPLATE: "{shard}.svc:7100"
    presence: str  # MACHIAVELOX_PRESENCE_ADDRESS ("" = none)
    # MACHIAVELOX_GATEWAY_MATCHMAKING_ADDRESS: the agorà relayed to apps ("" = not served here)
    matchmaking: str
    batch_window_s: float  # MACHIAVELOX_BATCH_WINDOW_MS: frame pacing under load (Outbox)
    grace_s: float  # MACHIAVELOX_GRACE_S
    log_level: str  # MACHIAVELOX_LOG_LEVEL

    @classmethod
    def from_env(cls) -> GatewaySettings:
        key = env_str("TOKEN_KEY", "")
        if len(key.encode()) < 16:
            raise SettingsError("MACHIAVELOX_TOKEN_KEY must be set, at least 16 bytes")
        shards = env_map("GATEWAY_SHARDS")
        template = env_str("GATEWAY_SHARD_TEMPLATE", "")
        if not shards and not template:
            raise SettingsError("set MACHIAVELOX_GATEWAY_SHARDS (shard-0=host:port,...) or "
                                "MACHIAVELOX_GATEWAY_SHARD_TEMPLATE ('{shard}.host:port')")
        return cls(
            gateway_id=env_str("GATEWAY_ID", "gateway"),
            host=env_str("GATEWAY_HOST", "127.0.0.1"),
            port=env_int("GATEWAY_PORT", 7000, minimum=0),
            token_key=key.encode(),
            shards=shards,
            shard_template=template,
            presence=env_str("PRESENCE_ADDRESS", ""),
            matchmaking=env_str("GATEWAY_MATCHMAKING_ADDRESS", ""),
            batch_window_s=_window(env_float("BATCH_WINDOW_MS", 2.0)),
            grace_s=env_float("GRACE_S", 5.0),
            log_level=env_str("LOG_LEVEL", "INFO"),
        )

    def shard_address(self, shard_id: str) -> str | None:
        if shard_id in self.shards:
            return self.shards[shard_id]
        if self.shard_template:
            return self.shard_template.format(shard=shard_id)
        return None


def _window(ms: float) -> float:
    if not 0 <= ms <= 50:
        raise SettingsError("MACHIAVELOX_BATCH_WINDOW_MS must be between 0 and 50")
    return ms / 1000
