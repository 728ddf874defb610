"""Bearer tokens: the `TokenVerifier` interface every service checks calls with
(`authenticate`), and the development tokens (`HmacTokens`). Production tokens are the identity
provider's (oidc.py); which kinds a service accepts is its token mode (identity.py).

Development token: ``v1.<player>.<expires unix s>.<base64url HMAC-SHA256 of the first three
parts>``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time
from typing import Protocol

from machiavelox.platform.errors import ServiceError, invalid_argument, unauthenticated

PLAYER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")  # whole names only: use fullmatch


class TokenVerifier(Protocol):
    def verify(self, token: str) -> str:
        """The player id the token proves, or raise ServiceError(UNAUTHENTICATED)."""
        ...


class HmacTokens:
    def __init__(self, secret: bytes, ttl_s: int = 24 * 3600) -> None:
        if len(secret) < 16:
            raise ValueError("the token key must be at least 16 bytes")
        self.secret = secret
        self.ttl_s = ttl_s

    def _sign(self, body: str) -> str:
        mac = hmac.new(self.secret, body.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def issue(self, player: str, now_s: int | None = None) -> tuple[str, int]:
        if not PLAYER_NAME.fullmatch(player):
            raise invalid_argument("auth/bad-name", "a player name is 1-32 characters of "
                                   "A-Z a-z 0-9 _ -")
        expires = (int(time.time()) if now_s is None else now_s) + self.ttl_s
        body = f"v1.{player}.{expires}"
        return f"{body}.{self._sign(body)}", expires

    def verify(self, token: str) -> str:
        parts = token.split(".")
        if len(parts) != 4 or parts[0] != "v1":
            raise unauthenticated("auth/bad-token", "malformed token")
        body = ".".join(parts[:3])
        if not hmac.compare_digest(self._sign(body), parts[3]):
            raise unauthenticated("auth/bad-token", "bad token signature")
        try:
            expires = int(parts[2])
        except ValueError:
            raise unauthenticated("auth/bad-token", "malformed token") from None
        if expires < time.time():
            raise unauthenticated("auth/expired", "the token has expired")
        return parts[1]


def bearer(metadata: tuple[tuple[str, str | bytes], ...] | None) -> str:
    """The token of an `authorization: Bearer <token>` metadata entry."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token:
                return token.strip()
    raise unauthenticated("auth/missing", "send 'authorization: Bearer <token>' metadata")


def authenticate(verifier: TokenVerifier, metadata: tuple[tuple[str, str | bytes], ...] | None
                 ) -> str:
    try:
        return verifier.verify(bearer(metadata))
    except ServiceError:
        raise
    except Exception as err:  # a verifier must never crash a call
        raise unauthenticated("auth/bad-token", f"token rejected: {err}") from None
