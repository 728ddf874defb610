"""The identity provider's public signing keys (its JWKS), cached and fetched off the event loop.

Verifying a token with a cached key is pure CPU (`SigningKeys.get`); only `ensure` ever waits,
and only for a key id it has not seen: it fetches the key set in a worker thread (PyJWT's
`PyJWKClient`, which times out and follows no redirect), waits at most `timeout_s`, and leaves
the fetch to finish in the background if the provider is slow. What bounds the load on the
provider, whatever the callers send:
- one fetch at a time: every caller waiting for a key shares the fetch in flight;
- fetches are rate-limited by a token bucket (`FETCHES`): a flood of tokens with invented key
  ids costs the provider a few requests, then at most one every few seconds;
- a key set older than `refresh_s` is re-read in the background (the callers use the cached
  one meanwhile), so a key the provider removed stops being accepted within that time.
A failed fetch keeps the cached keys: while the provider is down, tokens signed by a key we
know keep working, and tokens naming an unknown key are refused without waiting (the bucket
holds back further attempts).

Only keys usable for RS256 or ES256 are kept (an HMAC "oct" key or any other algorithm in the
key set is ignored, so a token can never be checked with a symmetric key).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import jwt

from machiavelox.platform.ratelimit import Rate, TokenBucket

log = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "ES256")
"""The only signature algorithms accepted (no "none", no HS*, nothing else)."""

FETCHES = Rate(per_s=0.2, burst=5)
"""Key-set fetches: up to 5 in a row (a rotation, a restart), then one every 5 s at most."""

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_problem(url: str) -> str | None:
    """Why `url` cannot be an identity provider's address (None: it can): https, or http on
    loopback only (a local provider in tests and development)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "it is not a URL"
    if not host:
        return "it has no host"
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback(host)):
        return None
    return "it must be https:// (http:// only on loopback)"


class JwksSource:
    """Reads the key set (blocking: run it in a thread). The key set's URL is `jwks_url`, or
    when empty the `jwks_uri` of the issuer's OpenID discovery document, read once."""

    def __init__(self, issuer: str, jwks_url: str, timeout_s: float) -> None:
        self.issuer = issuer
        self.jwks_url = jwks_url
        self.timeout_s = timeout_s

    def _json(self, url: str) -> dict[str, Any]:
        # PyJWKClient's fetch: a JSON object from an http(s) URL, a timeout, no redirects
        data: dict[str, Any] = jwt.PyJWKClient(url, cache_jwk_set=False,
                                               timeout=self.timeout_s).fetch_data()
        return data

    def _discover(self) -> str:
        doc = self._json(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
        if doc.get("issuer") != self.issuer:
            raise ValueError("the discovery document names another issuer")
        url = doc.get("jwks_uri")
        if not isinstance(url, str):
            raise ValueError("the discovery document has no jwks_uri")
        problem = url_problem(url)
        if problem is not None:
            raise ValueError(f"the discovered jwks_uri is refused: {problem}")
        return url

    def __call__(self) -> dict[str, jwt.PyJWK]:
        if not self.jwks_url:
            self.jwks_url = self._discover()
        keys = jwt.PyJWKSet.from_dict(self._json(self.jwks_url))
        usable = {key.key_id: key for key in keys.keys
                  if key.key_id and key.public_key_use in ("sig", None)
                  and key.algorithm_name in ALGORITHMS}
        if not usable:
            raise ValueError("the key set has no RS256 or ES256 signing key with a kid")
        return usable


class SigningKeys:
    def __init__(self, fetch: Callable[[], dict[str, jwt.PyJWK]], *, timeout_s: float,
                 refresh_s: float, fetches: Rate = FETCHES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._fetch_keys = fetch
        self.timeout_s = timeout_s
        self.refresh_s = refresh_s
        self.clock = clock
        self._bucket = TokenBucket(fetches, clock())
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._inflight: asyncio.Task[None] | None = None

    def get(self, kid: str) -> jwt.PyJWK | None:
        """The cached key of this id (never waits)."""
        return self._keys.get(kid)

    def _stale(self) -> bool:
        return self._fetched_at is None or self.clock() - self._fetched_at >= self.refresh_s

    def _start_fetch(self) -> asyncio.Task[None] | None:
        """The fetch in flight, or a new one if the bucket allows it (None: it does not)."""
        if self._inflight is not None and not self._inflight.done():
            return self._inflight
        if not self._bucket.take(self.clock()):
            return None
        self._inflight = asyncio.get_running_loop().create_task(self._fetch(),
                                                               name="jwks-fetch")
        return self._inflight

    async def _fetch(self) -> None:
        try:
            keys = await asyncio.to_thread(self._fetch_keys)
        except Exception as err:  # the provider is down or wrong: keep what we have
            log.warning("cannot read the identity provider's signing keys (%s); keeping the "
                        "%d cached", err, len(self._keys))
            return
        if set(keys) != set(self._keys):
            log.info("identity provider signing keys: %s", ", ".join(sorted(keys)))
        self._keys = keys
        self._fetched_at = self.clock()

    async def ensure(self, kid: str) -> None:
        """Make the key `kid` known if the provider has it, waiting at most `timeout_s`; a key
        set due for refresh is re-read in the background."""
        if kid in self._keys:
            if self._stale():
                self._start_fetch()
            return
        fetch = self._start_fetch()
        if fetch is None:
            return  # rate-limited: the token will be refused as naming an unknown key
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(fetch), self.timeout_s)
