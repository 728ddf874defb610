"""The identity provider's tokens (identity/oidc.py) and its key cache (identity/jwks.py), in
process, against a local provider serving its JWKS over HTTP on loopback (tests/support)."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from machiavelox.identity.jwks import FETCHES, JwksSource, SigningKeys
from machiavelox.identity.oidc import OidcSettings, OidcTokens
from machiavelox.platform.errors import ServiceError
from tests.support.identity import AUDIENCE, Provider, crafted, ec_key, rsa_key

RSA = rsa_key("rsa-1")
EC = ec_key("ec-1")
OTHER = rsa_key("rsa-1")  # the same kid, another key: a forger's


@pytest.fixture
def idp() -> Iterator[Provider]:
    provider = Provider()
    provider.publish(RSA, EC)
    try:
        yield provider
    finally:
        provider.close()


def settings(idp: Provider, **env: str) -> OidcSettings:
    return OidcSettings.from_env({**idp.env(), **{f"MACHIAVELOX_{k}": v for k, v in env.items()}})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def with_clock(s: OidcSettings, clock: Clock) -> OidcTokens:
    keys = SigningKeys(JwksSource(s.issuer, s.jwks_url, s.fetch_timeout_s),
                       timeout_s=s.fetch_timeout_s, refresh_s=s.refresh_s, clock=clock)
    return OidcTokens(s, keys)


async def player(verifier: OidcTokens, token: str) -> str:
    await verifier.prepare(token)
    return verifier.verify(token)


async def reason(verifier: OidcTokens, token: str) -> str:
    with pytest.raises(ServiceError) as refused:
        await player(verifier, token)
    assert refused.value.status is grpc.StatusCode.UNAUTHENTICATED
    return refused.value.reason


async def test_rs256_and_es256_tokens_name_their_player(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp))  # keys found through the discovery document
    assert await player(verifier, RSA.sign(idp.claims("ann"))) == "ann"
    assert await player(verifier, EC.sign(idp.claims("bob"))) == "bob"


async def test_the_player_id_comes_from_the_configured_claim(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp, OIDC_PLAYER_CLAIM="player"))
    token = RSA.sign(idp.claims("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", player="ann"))
    assert await player(verifier, token) == "ann"
    assert await reason(verifier, RSA.sign(idp.claims("ann"))) == "auth/bad-player-id"


async def test_an_explicit_jwks_url_needs_no_discovery(idp: Provider) -> None:
    issuer = idp.issuer + "/realms/games"  # no discovery document there (404)
    env = {"OIDC_ISSUER": issuer, "OIDC_JWKS_URL": idp.jwks_url}
    assert await player(OidcTokens(settings(idp, **env)),
                        RSA.sign(idp.claims("ann", iss=issuer))) == "ann"
    del env["OIDC_JWKS_URL"]
    assert await reason(OidcTokens(settings(idp, **env)),
                        RSA.sign(idp.claims("ann", iss=issuer))) == "auth/unknown-key"


async def test_a_discovery_document_of_another_issuer_gives_no_keys(idp: Provider) -> None:
    issuer = idp.issuer + "/"  # the document says idp.issuer: not an exact match
    verifier = OidcTokens(settings(idp, OIDC_ISSUER=issuer))
    assert await reason(verifier, RSA.sign(idp.claims("ann", iss=issuer))) == "auth/unknown-key"
    assert idp.jwks_requests == 0


async def test_clock_skew_is_forgiven_up_to_the_leeway(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp, OIDC_LEEWAY_S="30"))
    now = int(time.time())
    assert await player(verifier, RSA.sign(idp.claims("ann", exp=now - 10))) == "ann"
    assert await player(verifier, RSA.sign(idp.claims("ann", nbf=now + 10))) == "ann"
    assert await reason(verifier, RSA.sign(idp.claims("ann", exp=now - 60))) == "auth/expired"
    assert await reason(verifier, RSA.sign(idp.claims("ann", nbf=now + 60))) == (
        "auth/not-yet-valid")
    assert await reason(verifier, RSA.sign(idp.claims("ann", iat=now + 60))) == (
        "auth/not-yet-valid")


def _public_key_confusion(idp: Provider) -> str:
    return crafted({"alg": "HS256", "typ": "JWT", "kid": RSA.kid}, idp.claims("ann"),
                   hmac_key=RSA.public_pem())


BAD: list[tuple[str, Any, str]] = [
    ("wrong audience", lambda idp: RSA.sign(idp.claims("ann", aud="another-api")),
     "auth/bad-audience"),
    ("no audience", lambda idp: RSA.sign(idp.claims("ann", aud=None)), "auth/bad-token"),
    ("wrong issuer", lambda idp: RSA.sign(idp.claims("ann", iss="https://evil.example")),
     "auth/bad-issuer"),
    ("no expiry", lambda idp: RSA.sign(idp.claims("ann", exp=None)), "auth/bad-token"),
    ("forged", lambda idp: OTHER.sign(idp.claims("ann")), "auth/bad-signature"),
    ("alg none", lambda idp: crafted({"alg": "none", "kid": RSA.kid}, idp.claims("ann")),
     "auth/bad-algorithm"),
    ("HS256 with the public key", _public_key_confusion, "auth/bad-algorithm"),
    ("RS256 header on the EC key", lambda idp: crafted(
        {"alg": "RS256", "kid": EC.kid}, idp.claims("ann"), hmac_key=b"x"), "auth/bad-algorithm"),
    ("no kid", lambda idp: RSA.sign(idp.claims("ann"), kid=None), "auth/no-key-id"),
    ("unknown kid", lambda idp: RSA.sign(idp.claims("ann"), kid="nobody"), "auth/unknown-key"),
    ("not a JWT", lambda idp: "not-a-token", "auth/bad-token"),
    ("no sub", lambda idp: RSA.sign(idp.claims(None)), "auth/bad-player-id"),
    ("sub not a name", lambda idp: RSA.sign(idp.claims("ann\n")), "auth/bad-player-id"),
    ("sub too long", lambda idp: RSA.sign(idp.claims("a" * 33)), "auth/bad-player-id"),
    ("sub a number", lambda idp: RSA.sign(idp.claims(7)), "auth/bad-token"),
]


@pytest.mark.parametrize(("make", "expected"), [(m, r) for _, m, r in BAD],
                         ids=[name for name, _, _ in BAD])
async def test_bad_tokens_are_refused_with_their_reason(idp: Provider, make: Any,
                                                        expected: str) -> None:
    verifier = OidcTokens(settings(idp))
    assert await player(verifier, RSA.sign(idp.claims("ann"))) == "ann"  # keys in the cache
    assert await reason(verifier, make(idp)) == expected


async def test_a_symmetric_key_in_the_key_set_is_never_used(idp: Provider) -> None:
    secret = b"a-shared-secret-of-32-bytes-long"
    idp.extra = [{"kty": "oct", "kid": "oct-1", "alg": "HS256",
                  "k": base64.urlsafe_b64encode(secret).rstrip(b"=").decode()}]
    verifier = OidcTokens(settings(idp))
    hs = crafted({"alg": "HS256", "kid": "oct-1"}, idp.claims("ann"), hmac_key=secret)
    assert await reason(verifier, hs) == "auth/bad-algorithm"
    rs = crafted({"alg": "RS256", "kid": "oct-1"}, idp.claims("ann"), hmac_key=secret)
    assert await reason(verifier, rs) == "auth/unknown-key"  # the oct key is not kept at all


async def test_a_rotated_key_is_fetched_at_its_first_use_then_cached(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp))
    assert await player(verifier, RSA.sign(idp.claims("ann"))) == "ann"
    new = rsa_key("rsa-2")
    idp.publish(new)
    before = idp.jwks_requests
    for _ in range(3):
        assert await player(verifier, new.sign(idp.claims("ann"))) == "ann"
    assert idp.jwks_requests == before + 1
    assert await reason(verifier, RSA.sign(idp.claims("ann"))) == "auth/unknown-key"


async def test_a_removed_key_is_refused_once_the_cached_set_is_refreshed(idp: Provider) -> None:
    clock = Clock()
    verifier = with_clock(settings(idp, OIDC_JWKS_REFRESH_S="60"), clock)
    token = RSA.sign(idp.claims("ann"))
    assert await player(verifier, token) == "ann"
    idp.publish(EC)  # RSA withdrawn, no token names a new key
    clock.now += 30
    assert await player(verifier, token) == "ann"  # not due yet
    clock.now += 31
    await verifier.prepare(token)  # due: re-read in the background
    for _ in range(100):
        try:
            verifier.verify(token)
        except ServiceError as err:
            assert err.reason == "auth/unknown-key"
            break
        await asyncio.sleep(0.02)
    else:
        pytest.fail("the withdrawn key is still accepted")


async def test_a_flood_of_invented_kids_costs_the_provider_a_few_requests(idp: Provider) -> None:
    clock = Clock()  # frozen: the bucket never refills
    verifier = with_clock(settings(idp), clock)
    assert await player(verifier, RSA.sign(idp.claims("ann"))) == "ann"
    for i in range(200):
        assert await reason(verifier, RSA.sign(idp.claims("ann"), kid=f"bogus-{i}")) == (
            "auth/unknown-key")
    assert idp.jwks_requests <= FETCHES.burst
    assert await player(verifier, EC.sign(idp.claims("bob"))) == "bob"  # cached keys serve on


async def test_callers_waiting_for_one_new_key_share_one_fetch(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp))
    tokens = [EC.sign(idp.claims(f"p{i}")) for i in range(20)]
    names = await asyncio.gather(*(player(verifier, t) for t in tokens))
    assert names == [f"p{i}" for i in range(20)]
    assert idp.jwks_requests == 1


async def test_a_hanging_provider_is_waited_for_at_most_the_timeout(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp, OIDC_FETCH_TIMEOUT_S="0.3", OIDC_JWKS_REFRESH_S="1"))
    token = RSA.sign(idp.claims("ann"))
    assert await player(verifier, token) == "ann"
    idp.hang()
    unknown = rsa_key("rsa-9").sign(idp.claims("ann"))
    # bounded: a fetch that waited for the provider would take its 10 s
    with pytest.raises(ServiceError) as refused:
        await asyncio.wait_for(player(verifier, unknown), 3)
    assert refused.value.reason == "auth/unknown-key"
    assert await player(verifier, token) == "ann"  # the cached key still works


async def test_a_provider_that_is_down_leaves_the_cached_keys_working(idp: Provider) -> None:
    verifier = OidcTokens(settings(idp))
    assert await player(verifier, RSA.sign(idp.claims("ann"))) == "ann"
    idp.close()
    assert await reason(verifier, rsa_key("rsa-9").sign(idp.claims("ann"))) == (
        "auth/unknown-key")
    assert await player(verifier, EC.sign(idp.claims("bob"))) == "bob"


def test_the_issuer_and_key_set_must_be_https_off_loopback() -> None:
    base = {"MACHIAVELOX_OIDC_AUDIENCE": AUDIENCE}
    good = OidcSettings.from_env({**base, "MACHIAVELOX_OIDC_ISSUER": "https://id.example/r"})
    assert (good.issuer, good.jwks_url, good.leeway_s, good.player_claim) == (
        "https://id.example/r", "", 30.0, "sub")
    for issuer in ("http://id.example", "ftp://id.example", "https://"):
        with pytest.raises(ValueError, match="MACHIAVELOX_OIDC_ISSUER"):
            OidcSettings.from_env({**base, "MACHIAVELOX_OIDC_ISSUER": issuer})
    with pytest.raises(ValueError, match="MACHIAVELOX_OIDC_JWKS_URL"):
        OidcSettings.from_env({**base, "MACHIAVELOX_OIDC_ISSUER": "https://id.example",
                               "MACHIAVELOX_OIDC_JWKS_URL": "http://id.example/keys"})
    with pytest.raises(ValueError, match="MACHIAVELOX_OIDC_AUDIENCE"):
        OidcSettings.from_env({"MACHIAVELOX_OIDC_ISSUER": "https://id.example"})
    with pytest.raises(ValueError, match="LEEWAY"):
        OidcSettings.from_env({**base, "MACHIAVELOX_OIDC_ISSUER": "https://id.example",
                               "MACHIAVELOX_OIDC_LEEWAY_S": "3600"})
    two = OidcSettings.from_env({"MACHIAVELOX_OIDC_ISSUER": "https://id.example",
                                 "MACHIAVELOX_OIDC_AUDIENCE": "api, games"})
    assert two.audience == ("api", "games")
