"""Settings of matchmaking (environment variables, Helm values `matchmaking.*`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from machiavelox.identity.verifier import IdentitySettings
from machiavelox.platform.observability import ObservabilitySettings
from machiavelox.platform.settings import (
    SettingsError,
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

from .limits import DEFAULT_RATES, AgoraRates
from .queue import LOBBY_TTL_MS, TableRules
from .ranked import DEFAULT_SESSION, BadSession, ranked_rules
from .seatcheck import SEAT_CHECK_S
from .store import ATTACH_MS, LEASE_MS

_REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


@dataclass(frozen=True)
class MatchmakingSettings:
    host: str  # MACHIAVELOX_MATCHMAKING_HOST
    port: int  # MACHIAVELOX_MATCHMAKING_PORT
    # MACHIAVELOX_TOKEN_MODE, MACHIAVELOX_TOKEN_KEY (the gateway's, a Secret), MACHIAVELOX_OIDC_*:
    # the tokens accepted, the same settings as the gateway's (identity/verifier.py)
    identity: IdentitySettings
    shards: dict[str, str]  # MACHIAVELOX_MATCHMAKING_SHARDS: shard-0=host:port,...
    scoring: str  # MACHIAVELOX_SCORING_ADDRESS ("" = no ratings, seats freed only by a restart)
    # MACHIAVELOX_MATCHMAKING_BOT_HOST_ADDRESS: the bot host (host:port) that seats practice
    # tables' bots; "" = no practice tables (FAILED_PRECONDITION practice/off)
    bot_host: str
    tick_ms: int  # MACHIAVELOX_MATCHMAKING_TICK_MS: how often the queue is matched
    # MACHIAVELOX_MATCHMAKING_AGORA_LINK: serve the gateways' agorà link (link.py); false: not
    # served (as a replica older than the link: the gateways then make a call per app)
    agora_link: bool
    window: float  # MACHIAVELOX_MATCHMAKING_WINDOW: initial skill window, ordinal points
    widen_per_s: float  # MACHIAVELOX_MATCHMAKING_WIDEN_PER_S: window growth per waited second
    lobby_ttl_s: float  # MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S: an unplaced friendly lobby's life
    # MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S: how often the shards are asked which seated tables
    # they do not have (those tables' seats are freed: seatcheck.py)
    seat_check_s: float
    # MACHIAVELOX_MATCHMAKING_LEASE_S: a placement whose placer has not kept it alive this long
    # is taken over and undone (store.py; its placer renews it every second)
    lease_s: float
    # MACHIAVELOX_MATCHMAKING_DETACHED_S: a ticket or friendly seat whose stream's process has
    # not kept it alive this long is detached (it waits no more; an app may re-attach before)
    detached_s: float
    # MACHIAVELOX_MATCHMAKING_REDIS_URL: "" = the agorà's state in this process's memory (one
    # replica only); redis://host:port/db = shared by every replica (redis_store.py)
    redis_url: str
    # MACHIAVELOX_MATCHMAKING_RANKED_CLASSIC_SESSION: the ranked classic tables' session
    # ("threshold 100"; "single", "hands N", "elimination N": ranked.py)
    ranked: TableRules
    key_prefix: str  # MACHIAVELOX_MATCHMAKING_KEY_PREFIX: of every Redis key ("mxm:")
    # MACHIAVELOX_MATCHMAKING_{ENQUEUE,CANCEL,CREATE_FRIENDLY,JOIN_FRIENDLY,JOIN_FAILED}_RATE
    # (per second) and _BURST: each player's pace per call (limits.py, docs/security.md)
    rates: AgoraRates
    grace_s: float  # MACHIAVELOX_GRACE_S
    log_level: str  # MACHIAVELOX_LOG_LEVEL
    observability: ObservabilitySettings  # OTEL_*, MACHIAVELOX_METRICS_PORT, _METRICS_HOST

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MatchmakingSettings:
        identity = IdentitySettings.from_env(env)
        shards = env_map("MATCHMAKING_SHARDS", env)
        if not shards:
            raise SettingsError("MACHIAVELOX_MATCHMAKING_SHARDS must name at least one shard: "
                                "shard-0=host:port,shard-1=host:port")
        for shard_id in shards:
            if "." in shard_id:
                raise SettingsError(f"shard id {shard_id!r} in MACHIAVELOX_MATCHMAKING_SHARDS "
                                    "must not contain a dot (table ids are <shard>.<suffix>)")
        port = env_port("MATCHMAKING_PORT", 7200, env)
        window = env_float("MATCHMAKING_WINDOW", 5.0, env)
        widen = env_float("MATCHMAKING_WIDEN_PER_S", 1.0, env)
        if window < 0 or widen < 0:
            raise SettingsError("MACHIAVELOX_MATCHMAKING_WINDOW and _WIDEN_PER_S must not be "
                                "negative")
        grace_s = env_grace_s(5.0, env)
        level = env_log_level("INFO", env)
        lobby_ttl_s = env_float("MATCHMAKING_LOBBY_TTL_S", LOBBY_TTL_MS / 1000, env)
        if lobby_ttl_s <= 0:
            raise SettingsError("MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S must be positive")
        seat_check_s = env_float("MATCHMAKING_SEAT_CHECK_S", SEAT_CHECK_S, env)
        if seat_check_s <= 0:
            raise SettingsError("MACHIAVELOX_MATCHMAKING_SEAT_CHECK_S must be positive")
        lease_s = env_float("MATCHMAKING_LEASE_S", LEASE_MS / 1000, env)
        detached_s = env_float("MATCHMAKING_DETACHED_S", ATTACH_MS / 1000, env)
        if lease_s < 2 or detached_s < 2:
            raise SettingsError("MACHIAVELOX_MATCHMAKING_LEASE_S and _DETACHED_S must be at "
                                "least 2 (seconds: they are renewed every second)")
        redis_url = env_str("MATCHMAKING_REDIS_URL", "", env)
        if redis_url and not redis_url.startswith(_REDIS_SCHEMES):
            raise SettingsError("MACHIAVELOX_MATCHMAKING_REDIS_URL must be empty (in memory) or "
                                f"a redis://host:port/db URL, not {redis_url!r}")
        session = env_str("MATCHMAKING_RANKED_CLASSIC_SESSION", DEFAULT_SESSION, env)
        try:
            ranked = ranked_rules(session)
        except BadSession as err:
            raise SettingsError(f"MACHIAVELOX_MATCHMAKING_RANKED_CLASSIC_SESSION: {err}") from None
        rates = AgoraRates(
            enqueue=env_rate("MATCHMAKING_ENQUEUE", DEFAULT_RATES.enqueue, env),
            cancel=env_rate("MATCHMAKING_CANCEL", DEFAULT_RATES.cancel, env),
            create_friendly=env_rate("MATCHMAKING_CREATE_FRIENDLY",
                                     DEFAULT_RATES.create_friendly, env),
            join_friendly=env_rate("MATCHMAKING_JOIN_FRIENDLY", DEFAULT_RATES.join_friendly, env),
            join_failed=env_rate("MATCHMAKING_JOIN_FAILED", DEFAULT_RATES.join_failed, env))
        return cls(
            host=env_str("MATCHMAKING_HOST", "127.0.0.1", env),
            port=port,
            identity=identity,
            shards=shards,
            scoring=env_str("SCORING_ADDRESS", "", env),
            bot_host=env_str("MATCHMAKING_BOT_HOST_ADDRESS", "", env),
            tick_ms=env_int("MATCHMAKING_TICK_MS", 200, env, minimum=10),
            agora_link=env_bool("MATCHMAKING_AGORA_LINK", True, env),
            window=window,
            widen_per_s=widen,
            lobby_ttl_s=lobby_ttl_s,
            seat_check_s=seat_check_s,
            lease_s=lease_s,
            detached_s=detached_s,
            redis_url=redis_url,
            ranked=ranked,
            key_prefix=env_str("MATCHMAKING_KEY_PREFIX", "mxm:", env),
            rates=rates,
            grace_s=grace_s,
            log_level=level,
            observability=ObservabilitySettings.from_env("matchmaking", env),
        )
