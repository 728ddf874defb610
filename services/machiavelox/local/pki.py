"""A throwaway PKI for the cluster on this machine: a CA and one certificate per service role.

`machiavelox up` makes one at start (and deletes it at the end); the tests make one per test
process (`session_pki`, cached in a temporary directory). The certificates have the form the
services expect in production (docs/security.md, "Service identity between services"):

- the CA: a self-signed ECDSA P-256 certificate, CA:TRUE, path length 0;
- a role's certificate (`<role>.pem`, its key `<role>-key.pem`): CN = the role, the role in a
  URI SAN `spiffe://machiavelox/<role>` (what servers authorize on) and a DNS SAN
  `<role>.machiavelox.internal` (what clients check the server against), usable for both
  server and client authentication.

Validity is short (`VALIDITY`, a week: a local cluster or a test run lasts less).
"""

from __future__ import annotations

import atexit
import datetime
import functools
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from machiavelox.platform.tls import ROLES, InternalTls, role_uri, server_name, tls_env

VALIDITY = datetime.timedelta(days=7)
_SKEW = datetime.timedelta(minutes=5)  # valid from a little before now: clocks differ


@dataclass(frozen=True)
class Pki:
    """A CA and per-role certificates in `directory` (PEM files)."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    def cert(self, role: str) -> Path:
        return self.directory / f"{role}.pem"

    def key(self, role: str) -> Path:
        return self.directory / f"{role}-key.pem"

    def env(self, role: str) -> dict[str, str]:
        """The MACHIAVELOX_INTERNAL_TLS and MACHIAVELOX_TLS_* settings of a process of `role`."""
        return tls_env(str(self.ca), str(self.cert(role)), str(self.key(role)))

    def tls(self, role: str) -> InternalTls:
        """The credentials of `role`, loaded (to open channels as that role)."""
        return InternalTls.from_env(role, self.env(role))


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "machiavelox"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificate(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey,
                 start: datetime.datetime, end: datetime.datetime, *,
                 ca: bool) -> x509.CertificateBuilder:
    """What the CA's and a role's certificate share: names, key, validity, constraints, usage
    (a CA signs certificates; a role's key signs handshakes) and its key identifier."""
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None),
                           critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False,
                                         encipher_only=False, decipher_only=False),
                           critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False))


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)


def make_pki(directory: Path, roles: Iterable[str] = ROLES,
             validity: datetime.timedelta = VALIDITY, ca_name: str = "machiavelox local CA",
             ) -> Pki:
    """Write a new CA and a certificate for each of `roles` into `directory` (created)."""
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - _SKEW, now + validity
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_subject = _name(ca_name)
    ca = _certificate(ca_subject, ca_subject, ca_key, start, end, ca=True).sign(
        ca_key, hashes.SHA256())
    pki = Pki(directory)
    _write(pki.ca, ca.public_bytes(serialization.Encoding.PEM))
    aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    for role in roles:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (_certificate(_name(role), ca_subject, key, start, end, ca=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                      ExtendedKeyUsageOID.CLIENT_AUTH]),
                               critical=False)
                .add_extension(x509.SubjectAlternativeName([
                    x509.UniformResourceIdentifier(role_uri(role)),
                    x509.DNSName(server_name(role))]), critical=False)
                .add_extension(aki, critical=False)
                .sign(ca_key, hashes.SHA256()))
        _write(pki.cert(role), cert.public_bytes(serialization.Encoding.PEM))
        _write(pki.key(role), _pem_key(key), private=True)
    return pki


def throwaway_pki(prefix: str = "machiavelox-pki-") -> Pki:
    """A new PKI in a new temporary directory (`remove` it when done)."""
    return make_pki(Path(tempfile.mkdtemp(prefix=prefix)))


def remove(pki: Pki) -> None:
    shutil.rmtree(pki.directory, ignore_errors=True)


@functools.cache
def session_pki() -> Pki:
    """This process's PKI for tests: made once, removed when the process exits."""
    pki = throwaway_pki("machiavelox-test-pki-")
    atexit.register(remove, pki)
    return pki
