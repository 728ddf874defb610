"""Service identity between services: mutual TLS with gRPC's own credentials.

Every internal server requires a client certificate signed by the cluster's CA, and every
internal client presents its own (docs/security.md, "Service identity between services").
A certificate carries its service's **role** (`ROLES`) in a URI SAN
`spiffe://machiavelox/<role>`: servers authorize each call by it (`platform/authz.py`). It
also carries the DNS SAN `<role>.machiavelox.internal`, and a client checks the server it
reached against the name of the role it meant to call (`server_name`), not against the
address: a table shard's certificate is the same whatever its pod, namespace or release, and
a pod holding another role's certificate cannot pass for a shard or for scoring.

Settings (read once at start-up; a missing or unreadable file is a SettingsError):

    MACHIAVELOX_INTERNAL_TLS   mtls (default) | off: off only where a service mesh does mutual
                               TLS between the pods itself (docs/deploy.md, Security)
    MACHIAVELOX_TLS_CA         PEM file of the CA certificate(s) peers must chain to
    MACHIAVELOX_TLS_CERT       PEM file of this service's certificate (then its chain, if any)
    MACHIAVELOX_TLS_KEY        PEM file of its private key

`InternalTls` holds what was loaded; `InternalTls.channel` is the one way every client opens
a channel to an internal service, `add_port` the one way an internal server listens.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from . import keepalive
from .settings import PREFIX, SettingsError, env_str

log = logging.getLogger(__name__)

TRUST_DOMAIN = "machiavelox"
ROLES = ("gateway", "table", "matchmaking", "scoring", "presence", "controller",
         "results-reader", "bot-host")
MODES = ("mtls", "off")
_URI_PREFIX = f"spiffe://{TRUST_DOMAIN}/"

Connect = Callable[[str], grpc.aio.Channel]
"""Opens a channel to an address: what `InternalTls.connector` makes for clients."""


def role_uri(role: str) -> str:
    """The URI SAN that names `role`: spiffe://machiavelox/<role>."""
    return _URI_PREFIX + role


def role_of_uri(uri: str) -> str | None:
    """The role a URI SAN names, or None when it is not one of ours."""
    if not uri.startswith(_URI_PREFIX):
        return None
    role = uri[len(_URI_PREFIX):]
    return role if role in ROLES else None


def role_of_uris(uris: Iterable[str]) -> str | None:
    """The one role `uris` (a certificate's URI SANs) name; None: none of ours, or several."""
    roles = {role_of_uri(uri) for uri in uris}
    roles.discard(None)
    return roles.pop() if len(roles) == 1 else None


def server_name(role: str) -> str:
    """The DNS SAN every certificate of `role` carries; clients check servers against it."""
    return f"{role}.{TRUST_DOMAIN}.internal"


def tls_env(ca: str, cert: str, key: str) -> dict[str, str]:
    """The settings of a process that uses these PEM files (paths)."""
    return {f"{PREFIX}INTERNAL_TLS": "mtls", f"{PREFIX}TLS_CA": ca,
            f"{PREFIX}TLS_CERT": cert, f"{PREFIX}TLS_KEY": key}


@dataclass(frozen=True)
class TlsSettings:
    mode: str  # MACHIAVELOX_INTERNAL_TLS
    ca: str  # MACHIAVELOX_TLS_CA
    cert: str  # MACHIAVELOX_TLS_CERT
    key: str = field(repr=False)  # MACHIAVELOX_TLS_KEY

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TlsSettings:
        mode = env_str("INTERNAL_TLS", "mtls", env).lower()
        if mode not in MODES:
            raise SettingsError(f"{PREFIX}INTERNAL_TLS must be mtls or off, not {mode!r}")
        settings = cls(mode, env_str("TLS_CA", "", env), env_str("TLS_CERT", "", env),
                       env_str("TLS_KEY", "", env))
        if mode == "mtls":
            missing = [name for name, value in (("TLS_CA", settings.ca),
                                                ("TLS_CERT", settings.cert),
                                                ("TLS_KEY", settings.key)) if not value]
            if missing:
                raise SettingsError(
                    "internal mutual TLS needs " + ", ".join(PREFIX + m for m in missing)
                    + " (PEM file paths); or MACHIAVELOX_INTERNAL_TLS=off where a service "
                    "mesh does mutual TLS itself")
        return settings

    def load(self, expected_role: str | None = None) -> InternalTls:
        """Read the files and check them: raises SettingsError when one is missing, unreadable
        or wrong (not PEM, a key that is not the certificate's, expired, another role's)."""
        if self.mode == "off":
            return InternalTls.off()
        return InternalTls.load(_read("TLS_CA", self.ca), _read("TLS_CERT", self.cert),
                                _read("TLS_KEY", self.key), expected_role)


def _read(name: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise SettingsError(f"{PREFIX}{name}: cannot read {path}: {err.strerror}") from None


def certificate_role(cert: x509.Certificate) -> str | None:
    """The role a certificate names in its URI SANs (None: none of ours, or several)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None
    return role_of_uris(san.get_values_for_type(x509.UniformResourceIdentifier))


def _check(ca: bytes, cert: bytes, key: bytes, expected_role: str | None) -> str:
    """The role of `cert`, after checking the three PEM blobs fit together."""
    try:
        if not x509.load_pem_x509_certificates(ca):
            raise ValueError("no certificate")
    except ValueError:
        raise SettingsError(f"{PREFIX}TLS_CA holds no PEM certificate") from None
    try:
        leaf = x509.load_pem_x509_certificates(cert)[0]
    except (ValueError, IndexError):
        raise SettingsError(f"{PREFIX}TLS_CERT holds no PEM certificate") from None
    try:
        private = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError):
        raise SettingsError(f"{PREFIX}TLS_KEY holds no unencrypted PEM private key") from None
    spki = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if private.public_key().public_bytes(*spki) != leaf.public_key().public_bytes(*spki):
        raise SettingsError(f"{PREFIX}TLS_KEY is not the key of the certificate in "
                            f"{PREFIX}TLS_CERT")
    until = f"{leaf.not_valid_after_utc:%Y-%m-%d %H:%M} UTC"
    if leaf.not_valid_after_utc <= datetime.datetime.now(datetime.UTC):
        raise SettingsError(f"{PREFIX}TLS_CERT expired at {until}")
    role = certificate_role(leaf)
    if role is None:
        raise SettingsError(f"{PREFIX}TLS_CERT names no role: it needs one URI SAN "
                            f"{_URI_PREFIX}<role>, <role> one of {', '.join(ROLES)}")
    if expected_role is not None and role != expected_role:
        raise SettingsError(f"{PREFIX}TLS_CERT is a certificate of the role {role!r}; this "
                            f"service is {expected_role!r}")
    log.info("internal mTLS as %s, certificate valid until %s", role, until,
             extra={"tls_role": role})
    return role


class InternalTls:
    """The credentials of this process between services (or none: mode off)."""

    def __init__(self, mode: str, role: str = "", ca: bytes = b"", cert: bytes = b"",
                 key: bytes = b"") -> None:
        self.mode = mode
        self.role = role  # the role our certificate names ("" when off)
        self._ca, self._cert, self._key = ca, cert, key
        self._channel_credentials: Any = None

    @classmethod
    def off(cls) -> InternalTls:
        return cls("off")

    @classmethod
    def load(cls, ca: bytes, cert: bytes, key: bytes,
             expected_role: str | None = None) -> InternalTls:
        return cls("mtls", _check(ca, cert, key, expected_role), ca, cert, key)

    @classmethod
    def from_env(cls, expected_role: str | None = None,
                 env: Mapping[str, str] | None = None) -> InternalTls:
        """This process's credentials from MACHIAVELOX_INTERNAL_TLS and _TLS_* (SettingsError
        when they are missing or wrong); `expected_role`: the role the certificate must name."""
        return TlsSettings.from_env(env).load(expected_role)

    @property
    def enabled(self) -> bool:
        return self.mode == "mtls"

    def __repr__(self) -> str:
        return f"InternalTls({self.mode}{', ' + self.role if self.role else ''})"

    # -------------------------------------------------------------- servers
    def server_credentials(self) -> Any:
        """Requires a client certificate chaining to our CA (the handshake fails otherwise)."""
        return grpc.ssl_server_credentials([(self._key, self._cert)],
                                           root_certificates=self._ca,
                                           require_client_auth=True)

    def add_port(self, server: Any, address: str) -> int:
        """Listen on `address` with these credentials (plaintext when off); the bound port."""
        if not self.enabled:
            return int(server.add_insecure_port(address))
        return int(server.add_secure_port(address, self.server_credentials()))

    # -------------------------------------------------------------- clients
    def _credentials(self) -> Any:
        if self._channel_credentials is None:
            self._channel_credentials = grpc.ssl_channel_credentials(
                root_certificates=self._ca, private_key=self._key, certificate_chain=self._cert)
        return self._channel_credentials

    def _options(self, server_role: str,
                 options: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """Keepalive (platform/keepalive.py) on every internal channel, and with mTLS the
        server's name to check."""
        if not self.enabled:
            return keepalive.with_options(keepalive.CLIENT, options)
        if server_role not in ROLES:
            raise ValueError(f"unknown server role {server_role!r}")
        return keepalive.with_options(
            [*keepalive.CLIENT, ("grpc.ssl_target_name_override", server_name(server_role))],
            options)

    def channel(self, address: str, server_role: str, *, interceptors: Sequence[Any] = (),
                options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
        """An asyncio channel to the internal service of `server_role` at `address`: our
        certificate presented, the server's checked against the CA and `server_role`."""
        extra = self._options(server_role, options)
        chosen = list(interceptors) or None
        if not self.enabled:
            return grpc.aio.insecure_channel(address, options=extra, interceptors=chosen)
        return grpc.aio.secure_channel(address, self._credentials(), options=extra,
                                       interceptors=chosen)

    def sync_channel(self, address: str, server_role: str,
                     options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
        """The same as `channel`, blocking (scripts, tests)."""
        extra = self._options(server_role, options)
        if not self.enabled:
            return grpc.insecure_channel(address, options=extra)
        return grpc.secure_channel(address, self._credentials(), options=extra)

    def connector(self, server_role: str, interceptors: Sequence[Any] = ()) -> Connect:
        """`address -> channel` to services of `server_role` (for code that opens channels
        itself, such as the gateway's shard links)."""
        def connect(address: str) -> grpc.aio.Channel:
            return self.channel(address, server_role, interceptors=interceptors)

        return connect
