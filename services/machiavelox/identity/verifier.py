"""Which player tokens a service accepts, built from settings the same way by every service
that verifies tokens (the gateway and matchmaking): `build_verifier`.

MACHIAVELOX_TOKEN_MODE chooses:
- `hmac` (the default): development tokens (`auth.HmacTokens`, MACHIAVELOX_TOKEN_KEY), minted
  by the gateway's development Login when it is on, or by a trusted service holding the key;
- `oidc`: the identity provider's access tokens only (`oidc.OidcTokens`, MACHIAVELOX_OIDC_*);
- `both`: either (a migration): the two share one namespace of player ids, so whoever holds
  the token key can speak for any provider account; never with the development Login on in
  production (the chart refuses it outside `global.environment: development`).
A development token has the form `v1.<player>.<expiry>.<mac>`, a JWT three base64url parts
starting `eyJ`: the form of the token says which verifier checks it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import grpc

from machiavelox.platform.errors import ServiceError, unauthenticated
from machiavelox.platform.settings import SettingsError, env_str

from .oidc import OidcSettings, OidcTokens
from .tokens import HmacTokens, bearer

log = logging.getLogger(__name__)

TOKEN_MODES = ("hmac", "oidc", "both")


@dataclass(frozen=True)
class IdentitySettings:
    mode: str  # MACHIAVELOX_TOKEN_MODE: hmac | oidc | both
    token_key: bytes  # MACHIAVELOX_TOKEN_KEY (a Secret), >= 16 bytes; b"" in oidc mode
    oidc: OidcSettings | None  # MACHIAVELOX_OIDC_* (oidc and both modes)

    @property
    def hmac(self) -> bool:
        """Development (HMAC) tokens are accepted."""
        return self.mode in ("hmac", "both")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> IdentitySettings:
        mode = env_str("TOKEN_MODE", "hmac", env).lower()
        if mode not in TOKEN_MODES:
            raise SettingsError(f"MACHIAVELOX_TOKEN_MODE must be one of {', '.join(TOKEN_MODES)}"
                                f", not {mode!r}")
        key = env_str("TOKEN_KEY", "", env).encode()
        if mode != "oidc" and len(key) < 16:
            raise SettingsError(f"MACHIAVELOX_TOKEN_KEY must be set, at least 16 bytes "
                                f"(MACHIAVELOX_TOKEN_MODE={mode})")
        if mode == "hmac" and env_str("OIDC_ISSUER", "", env):
            raise SettingsError("MACHIAVELOX_OIDC_ISSUER is set but MACHIAVELOX_TOKEN_MODE is "
                                "hmac: set the mode to oidc or both to accept its tokens")
        oidc = OidcSettings.from_env(env) if mode != "hmac" else None
        return cls(mode=mode, token_key=key if mode != "oidc" else b"", oidc=oidc)


def is_development_token(token: str) -> bool:
    return token.startswith("v1.") and token.count(".") == 3


class PlayerTokens:
    """The `TokenVerifier` of a service: development tokens, the provider's, or both."""

    def __init__(self, hmac: HmacTokens | None, oidc: OidcTokens | None) -> None:
        if hmac is None and oidc is None:
            raise ValueError("a service must accept some kind of token")
        self.hmac = hmac
        self.oidc = oidc

    def verify(self, token: str) -> str:
        if is_development_token(token):
            if self.hmac is None:
                raise unauthenticated("auth/bad-token", "development tokens are not accepted")
            return self.hmac.verify(token)
        if self.oidc is None:
            raise unauthenticated("auth/bad-token", "malformed token")
        return self.oidc.verify(token)

    async def prepare(self, token: str) -> None:
        """Fetch what `verify` will need (the provider's signing keys), off the event loop."""
        if self.oidc is not None and not is_development_token(token):
            await self.oidc.prepare(token)

    def interceptors(self) -> list[grpc.aio.ServerInterceptor]:
        """What the service's server must run (`Service(interceptors=...)`)."""
        return [KeysFirst(self)] if self.oidc is not None else []


def build_verifier(settings: IdentitySettings) -> PlayerTokens:
    """The verifier of every service that checks tokens (gateway, matchmaking)."""
    hmac = HmacTokens(settings.token_key) if settings.hmac else None
    oidc = OidcTokens(settings.oidc) if settings.oidc is not None else None
    return PlayerTokens(hmac, oidc)


Continuation = Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]]


class KeysFirst(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Before a call's handler runs, the signing key its bearer token names is fetched if it is
    new (asynchronously, bounded: `jwks.SigningKeys.ensure`), so the handlers' synchronous
    `authenticate` never waits on the network and a rotated key works at its first use."""

    def __init__(self, tokens: PlayerTokens) -> None:
        self.tokens = tokens

    async def intercept_service(self, continuation: Continuation,
                                handler_call_details: grpc.HandlerCallDetails
                                ) -> grpc.RpcMethodHandler:
        try:
            token = bearer(handler_call_details.invocation_metadata)
        except ServiceError:
            pass  # no token: the handler refuses the call (or needs none: Login, health)
        else:
            try:
                await self.tokens.prepare(token)
            except Exception:  # never crash a call here: the handler's verify decides
                log.debug("preparing a token failed", exc_info=True)
        return await continuation(handler_call_details)
