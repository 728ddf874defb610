"""Matchmaking's abuse settings: defaults, overrides, and bad values refused at start-up."""

from __future__ import annotations

import pytest

from machiavelox.matchmaking.limits import DEFAULT_RATES
from machiavelox.matchmaking.settings import MatchmakingSettings
from machiavelox.platform.ratelimit import Rate
from machiavelox.platform.settings import SettingsError

BASE = {"MACHIAVELOX_TOKEN_KEY": "test-key-0123456789abcdef",
        "MACHIAVELOX_MATCHMAKING_SHARDS": "shard-0=127.0.0.1:7100"}


def test_the_defaults_are_the_limits_of_the_code() -> None:
    settings = MatchmakingSettings.from_env(BASE)
    assert settings.rates == DEFAULT_RATES
    assert settings.lobby_ttl_s == 900


def test_each_limit_and_the_ttl_can_be_set() -> None:
    settings = MatchmakingSettings.from_env({
        **BASE, "MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S": "1.5",
        "MACHIAVELOX_MATCHMAKING_JOIN_FAILED_RATE": "0.5",
        "MACHIAVELOX_MATCHMAKING_JOIN_FAILED_BURST": "2",
        "MACHIAVELOX_MATCHMAKING_CREATE_FRIENDLY_BURST": "3"})
    assert settings.lobby_ttl_s == 1.5
    assert settings.rates.join_failed == Rate(0.5, 2)
    assert settings.rates.create_friendly == Rate(DEFAULT_RATES.create_friendly.per_s, 3)
    assert settings.rates.enqueue == DEFAULT_RATES.enqueue


@pytest.mark.parametrize("key,value", [
    ("MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S", "0"),
    ("MACHIAVELOX_MATCHMAKING_LOBBY_TTL_S", "soon"),
    ("MACHIAVELOX_MATCHMAKING_ENQUEUE_RATE", "0"),
    ("MACHIAVELOX_MATCHMAKING_JOIN_FAILED_BURST", "0.5"),
    ("MACHIAVELOX_MATCHMAKING_CANCEL_RATE", "-1"),
])
def test_a_bad_value_is_refused(key: str, value: str) -> None:
    with pytest.raises(SettingsError) as err:
        MatchmakingSettings.from_env({**BASE, key: value})
    assert key in str(err.value) or key.removesuffix("_BURST") in str(err.value)
