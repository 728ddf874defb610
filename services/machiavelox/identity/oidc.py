"""Access tokens of an identity provider: OIDC/JWT, signed RS256 or ES256 with a key of the
provider's JWKS (docs/security.md, "Player identity").

A token is accepted when its header names an allowed algorithm and a key id (`kid`) of the
provider, the signature is that key's, `iss` is the configured issuer, `aud` one of the
configured audiences, `exp` has not passed and `nbf`/`iat` are not in the future (both with
`leeway_s` for clock skew); the player id is the claim `player_claim` (default `sub`), which
must be a valid player name (1-32 of A-Z a-z 0-9 _ -): it is shown to other players and names
seats, so it is never transformed, only checked. Each refusal is UNAUTHENTICATED with its
reason (`auth/expired`, `auth/bad-audience`, ...; docs/protocol.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import jwt

from machiavelox.platform.errors import ServiceError, unauthenticated
from machiavelox.platform.settings import SettingsError, env_float, env_str

from .jwks import ALGORITHMS, JwksSource, SigningKeys, url_problem
from .tokens import PLAYER_NAME


@dataclass(frozen=True)
class OidcSettings:
    issuer: str  # MACHIAVELOX_OIDC_ISSUER: the `iss` of the tokens, exactly
    audience: tuple[str, ...]  # MACHIAVELOX_OIDC_AUDIENCE: accepted `aud` values, a,b,...
    jwks_url: str  # MACHIAVELOX_OIDC_JWKS_URL ("" = the issuer's discovery document's)
    leeway_s: float  # MACHIAVELOX_OIDC_LEEWAY_S: clock skew allowed on exp, nbf, iat
    player_claim: str  # MACHIAVELOX_OIDC_PLAYER_CLAIM: the claim holding the player id
    refresh_s: float  # MACHIAVELOX_OIDC_JWKS_REFRESH_S: how old the cached key set may get
    fetch_timeout_s: float  # MACHIAVELOX_OIDC_FETCH_TIMEOUT_S: one JWKS/discovery request

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OidcSettings:
        issuer = env_str("OIDC_ISSUER", "", env)
        audience = tuple(a.strip() for a in env_str("OIDC_AUDIENCE", "", env).split(",")
                         if a.strip())
        if not issuer or not audience:
            raise SettingsError("MACHIAVELOX_OIDC_ISSUER and MACHIAVELOX_OIDC_AUDIENCE must be "
                                "set to accept the identity provider's tokens")
        jwks_url = env_str("OIDC_JWKS_URL", "", env)
        for name, url in (("OIDC_ISSUER", issuer), ("OIDC_JWKS_URL", jwks_url)):
            problem = url_problem(url) if url else None
            if problem is not None:
                raise SettingsError(f"MACHIAVELOX_{name} {url!r} is refused: {problem}")
        leeway_s = env_float("OIDC_LEEWAY_S", 30.0, env)
        refresh_s = env_float("OIDC_JWKS_REFRESH_S", 300.0, env)
        timeout_s = env_float("OIDC_FETCH_TIMEOUT_S", 3.0, env)
        if not 0 <= leeway_s <= 300:
            raise SettingsError("MACHIAVELOX_OIDC_LEEWAY_S must be between 0 and 300")
        if refresh_s < 1:
            raise SettingsError("MACHIAVELOX_OIDC_JWKS_REFRESH_S must be at least 1")
        if not 0 < timeout_s <= 30:
            raise SettingsError("MACHIAVELOX_OIDC_FETCH_TIMEOUT_S must be above 0, at most 30")
        return cls(issuer=issuer, audience=audience, jwks_url=jwks_url, leeway_s=leeway_s,
                   player_claim=env_str("OIDC_PLAYER_CLAIM", "sub", env), refresh_s=refresh_s,
                   fetch_timeout_s=timeout_s)


_CLAIM_ERRORS: tuple[tuple[type[jwt.PyJWTError], str, str], ...] = (
    (jwt.ExpiredSignatureError, "auth/expired", "the token has expired"),
    (jwt.ImmatureSignatureError, "auth/not-yet-valid", "the token is not valid yet"),
    (jwt.InvalidAudienceError, "auth/bad-audience", "the token is not meant for this service"),
    (jwt.InvalidIssuerError, "auth/bad-issuer", "the token comes from another issuer"),
    (jwt.InvalidSignatureError, "auth/bad-signature", "bad token signature"),
    (jwt.MissingRequiredClaimError, "auth/bad-token", "the token lacks a required claim"),
)


class OidcTokens:
    """A `TokenVerifier` for the identity provider's access tokens."""

    def __init__(self, settings: OidcSettings, keys: SigningKeys | None = None) -> None:
        self.settings = settings
        self.keys = keys or SigningKeys(
            JwksSource(settings.issuer, settings.jwks_url, settings.fetch_timeout_s),
            timeout_s=settings.fetch_timeout_s, refresh_s=settings.refresh_s)

    @staticmethod
    def _header(token: str) -> tuple[str, str]:
        """The token's (alg, kid), checked: an allowed algorithm and a key id."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise unauthenticated("auth/bad-token", "malformed token") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in ALGORITHMS:
            raise unauthenticated("auth/bad-algorithm", "tokens must be signed RS256 or ES256")
        if not isinstance(kid, str) or not kid:
            raise unauthenticated("auth/no-key-id", "the token names no signing key (kid)")
        return alg, kid

    async def prepare(self, token: str) -> None:
        """Before `verify`: fetch the provider's keys if the token names a key not cached yet
        (off the event loop, bounded in time and rate: `SigningKeys.ensure`)."""
        try:
            _, kid = self._header(token)
        except ServiceError:
            return  # `verify` refuses it without any key
        await self.keys.ensure(kid)

    def verify(self, token: str) -> str:
        alg, kid = self._header(token)
        key = self.keys.get(kid)
        if key is None:
            raise unauthenticated("auth/unknown-key", "the token's key (kid) is not one of the "
                                  "identity provider's signing keys")
        if key.algorithm_name != alg:
            raise unauthenticated("auth/bad-algorithm", "the token's algorithm is not its key's")
        s = self.settings
        try:
            claims = jwt.decode(token, key.key, algorithms=[alg], audience=s.audience,
                                issuer=s.issuer, leeway=s.leeway_s,
                                options={"require": ["exp", "iss", "aud"]})
        except jwt.PyJWTError as err:
            for kind, reason, message in _CLAIM_ERRORS:
                if isinstance(err, kind):
                    raise unauthenticated(reason, message) from None
            raise unauthenticated("auth/bad-token", "malformed token") from None
        player = claims.get(s.player_claim)
        if not isinstance(player, str) or not PLAYER_NAME.fullmatch(player):
            raise unauthenticated("auth/bad-player-id", f"the token's {s.player_claim!r} claim "
                                  "is not a player id (1-32 characters of A-Z a-z 0-9 _ -)")
        return player
