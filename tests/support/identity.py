"""A local identity provider for tests: its OpenID discovery document and JWKS served over HTTP
on 127.0.0.1 by a thread of the test process, with keys the test makes (RSA and EC P-256, with
`cryptography`), and tokens signed by them, good or crafted."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

AUDIENCE = "machiavelox-test"
JWKS_PATH = "/keys"
HANG_LIMIT_S = 10.0
"""A hanging provider answers after this long at most (so its threads always end)."""


@dataclass
class SigningKey:
    kid: str
    alg: str  # RS256 or ES256
    private: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey

    def jwk(self) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            data = dict(RSAAlgorithm.to_jwk(public, as_dict=True))
        else:
            data = dict(ECAlgorithm.to_jwk(public, as_dict=True))
        data.update(kid=self.kid, use="sig", alg=self.alg)
        return data

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, claims: dict[str, Any], kid: str | None = "", **header: Any) -> str:
        """A token signed by this key; `kid` "" is the key's own, None leaves it out."""
        headers = dict(header)
        if kid is not None:
            headers["kid"] = kid or self.kid
        return jwt.encode(claims, self.private, algorithm=self.alg, headers=headers)


def rsa_key(kid: str) -> SigningKey:
    return SigningKey(kid, "RS256", rsa.generate_private_key(public_exponent=65537,
                                                             key_size=2048))


def ec_key(kid: str) -> SigningKey:
    return SigningKey(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def crafted(header: dict[str, Any], claims: dict[str, Any], hmac_key: bytes | None = None) -> str:
    """A token assembled by hand: unsigned (alg none), or HMAC-SHA256 signed with `hmac_key`
    (what an attacker does with a public key's bytes: PyJWT itself refuses to)."""
    body = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    if hmac_key is None:
        return body + "."
    return f"{body}.{_b64(hmac.new(hmac_key, body.encode(), hashlib.sha256).digest())}"


class Provider:
    """Serves `/.well-known/openid-configuration` and the JWKS of `publish`ed keys (`extra`:
    more raw JWKs, e.g. a symmetric one). `hang()` makes every request wait (a provider that
    accepts connections and never answers), `close()` takes it down."""

    def __init__(self) -> None:
        self.keys: list[SigningKey] = []
        self.extra: list[dict[str, Any]] = []
        self.jwks_requests = 0
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._released.set()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                provider._released.wait(HANG_LIMIT_S)
                body: dict[str, Any]
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": provider.issuer, "jwks_uri": provider.issuer + JWKS_PATH}
                elif self.path == JWKS_PATH:
                    with provider._lock:
                        provider.jwks_requests += 1
                        body = {"keys": [k.jwk() for k in provider.keys] + provider.extra}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.jwks_url = self.issuer + JWKS_PATH
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                        name="jwks", daemon=True)
        self._thread.start()

    def publish(self, *keys: SigningKey) -> None:
        with self._lock:
            self.keys = list(keys)

    def hang(self) -> None:
        self._released.clear()

    def close(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)

    def claims(self, sub: object, **changes: Any) -> dict[str, Any]:
        """Good claims for `sub` (None: no sub; valid for 5 minutes), with `changes` applied
        (a change to None removes the claim)."""
        now = int(time.time())
        out: dict[str, Any] = {"iss": self.issuer, "aud": AUDIENCE, "sub": sub, "iat": now,
                               "exp": now + 300}
        if sub is None:
            del out["sub"]
        for name, value in changes.items():
            if value is None:
                out.pop(name, None)
            else:
                out[name] = value
        return out

    def env(self, **settings: str) -> dict[str, str]:
        """A service's MACHIAVELOX_* settings to accept this provider's tokens (oidc mode)."""
        env = {"MACHIAVELOX_TOKEN_MODE": "oidc", "MACHIAVELOX_OIDC_ISSUER": self.issuer,
               "MACHIAVELOX_OIDC_AUDIENCE": AUDIENCE}
        env.update({f"MACHIAVELOX_{k.upper()}": v for k, v in settings.items()})
        return env


@contextmanager
def provider(*keys: SigningKey) -> Iterator[Provider]:
    idp = Provider()
    idp.publish(*keys)
    try:
        yield idp
    finally:
        idp.close()
