"""Which tokens a service accepts (identity/verifier.py: the token mode, one construction for
gateway and matchmaking) and the development Login (gateway/login.py: off by default,
throttled per source address)."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest

from machiavelox.gateway.login import DevLogin, source_of
from machiavelox.gateway.settings import GatewaySettings
from machiavelox.identity.tokens import HmacTokens
from machiavelox.identity.verifier import IdentitySettings, build_verifier
from machiavelox.matchmaking.settings import MatchmakingSettings
from machiavelox.platform.errors import ServiceError
from machiavelox.platform.ratelimit import Rate
from machiavelox.platform.settings import SettingsError
from tests.support.identity import Provider, rsa_key

KEY = "test-key-0123456789abcdef"
RSA = rsa_key("rsa-1")


@pytest.fixture
def idp() -> Iterator[Provider]:
    provider = Provider()
    provider.publish(RSA)
    try:
        yield provider
    finally:
        provider.close()


def identity(env: dict[str, str]) -> IdentitySettings:
    return IdentitySettings.from_env({f"MACHIAVELOX_{k}": v for k, v in env.items()})


def refusal(call: object, *args: object) -> ServiceError:
    with pytest.raises(ServiceError) as refused:
        call(*args)  # type: ignore[operator]
    return refused.value


def test_development_tokens_are_the_default_and_need_the_key() -> None:
    settings = identity({"TOKEN_KEY": KEY})
    assert (settings.mode, settings.hmac, settings.oidc) == ("hmac", True, None)
    with pytest.raises(SettingsError, match="MACHIAVELOX_TOKEN_KEY"):
        identity({})
    with pytest.raises(SettingsError, match="MACHIAVELOX_TOKEN_MODE"):
        identity({"TOKEN_KEY": KEY, "TOKEN_MODE": "trust-me"})
    with pytest.raises(SettingsError, match="TOKEN_MODE is hmac"):  # a provider set up in vain
        identity({"TOKEN_KEY": KEY, "OIDC_ISSUER": "https://id.example"})


def test_oidc_mode_needs_the_provider_and_no_key() -> None:
    settings = identity({"TOKEN_MODE": "oidc", "OIDC_ISSUER": "https://id.example",
                         "OIDC_AUDIENCE": "games", "TOKEN_KEY": KEY})
    assert settings.token_key == b"" and not settings.hmac
    assert settings.oidc is not None and settings.oidc.audience == ("games",)
    with pytest.raises(SettingsError, match="MACHIAVELOX_OIDC_ISSUER"):
        identity({"TOKEN_MODE": "oidc"})
    with pytest.raises(SettingsError, match="MACHIAVELOX_TOKEN_KEY"):
        identity({"TOKEN_MODE": "both", "OIDC_ISSUER": "https://id.example",
                  "OIDC_AUDIENCE": "games"})


async def test_each_mode_accepts_its_tokens_only(idp: Provider) -> None:
    dev_token, _ = HmacTokens(KEY.encode()).issue("ann")
    jwt_token = RSA.sign(idp.claims("bob"))
    provider_env = {k.removeprefix("MACHIAVELOX_"): v for k, v in idp.env().items()}
    modes = {"hmac": {"TOKEN_KEY": KEY}, "oidc": provider_env,
             "both": {**provider_env, "TOKEN_MODE": "both", "TOKEN_KEY": KEY}}
    accepted: dict[str, set[str]] = {}
    for mode, env in modes.items():
        verifier = build_verifier(identity(env))
        accepted[mode] = set()
        for token in (dev_token, jwt_token):
            await verifier.prepare(token)
            try:
                accepted[mode].add(verifier.verify(token))
            except ServiceError as err:
                assert err.status is grpc.StatusCode.UNAUTHENTICATED
                assert err.reason == "auth/bad-token"
        assert bool(verifier.interceptors()) == (mode != "hmac")
    assert accepted == {"hmac": {"ann"}, "oidc": {"bob"}, "both": {"ann", "bob"}}


def test_gateway_and_matchmaking_read_the_same_identity_settings(
        monkeypatch: pytest.MonkeyPatch, idp: Provider) -> None:
    for key, value in {**idp.env(), "MACHIAVELOX_GATEWAY_SHARDS": "shard-0=127.0.0.1:1",
                       "MACHIAVELOX_MATCHMAKING_SHARDS": "shard-0=127.0.0.1:1"}.items():
        monkeypatch.setenv(key, value)
    gateway, matchmaking = GatewaySettings.from_env(), MatchmakingSettings.from_env()
    assert gateway.identity == matchmaking.identity
    assert gateway.identity.oidc is not None and not gateway.dev_login
    monkeypatch.setenv("MACHIAVELOX_GATEWAY_DEV_LOGIN", "true")  # mints tokens nobody accepts
    with pytest.raises(SettingsError, match="MACHIAVELOX_GATEWAY_DEV_LOGIN"):
        GatewaySettings.from_env()


def test_login_is_off_unless_given_its_tokens() -> None:
    err = refusal(DevLogin().issue, "ann", "ipv4:127.0.0.1:5000")
    assert (err.status, err.reason) == (grpc.StatusCode.UNIMPLEMENTED, "auth/login-disabled")


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_logins_are_throttled_per_source_address() -> None:
    clock = Clock()
    login = DevLogin(HmacTokens(KEY.encode()), Rate(per_s=1.0, burst=2), clock)
    for port in (5000, 5001):  # a new connection is the same source
        token, _ = login.issue("ann", f"ipv4:10.0.0.7:{port}")
        assert HmacTokens(KEY.encode()).verify(token) == "ann"
    err = refusal(login.issue, "ann", "ipv4:10.0.0.7:5002")
    assert (err.status, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "rate/limited")
    assert "retry in 1 s" in err.message
    login.issue("bob", "ipv4:10.0.0.8:5000")  # another address has its own bucket
    clock.now += 1.0
    login.issue("ann", "ipv4:10.0.0.7:5003")
    err = refusal(login.issue, "ann\n", "ipv6:[::1]:1")  # names are still checked
    assert err.reason == "auth/bad-name"


def test_the_source_of_a_peer_is_its_address_without_the_port() -> None:
    assert source_of("ipv4:10.0.0.7:53211") == "ipv4:10.0.0.7"
    assert source_of("ipv6:[2001:db8::1]:53211") == "ipv6:[2001:db8::1]"
    assert source_of("unix:/tmp/socket") == "unix:/tmp/socket"
