"""The cluster's certificate authority: its key and self-signed certificate, the controller's
server certificate, and node certificates issued from a node's signing request.

Keys are ECDSA P-256 (small, fast to make, understood by every TLS stack). A certificate's
extended key usage says what it may do: the controller's is for a TLS server only, a node's for
a TLS client only, so a node's certificate can never pose as the controller, nor the
controller's as a node. A node's certificate names the node in its common name.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import secrets
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from drover.core.errors import BadRequest

CA_VALIDITY = datetime.timedelta(days=3650)
LEAF_VALIDITY = datetime.timedelta(days=1825)  # no renewal yet: long enough to outlive a host
CLOCK_SKEW = datetime.timedelta(minutes=5)  # a certificate is valid from a little before it is made
ORGANIZATION = "Drover cluster"
CONTROLLER_NAME = "drover controller"
NODE_UNIT = "node"  # the organizational unit of every node certificate


def new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def cert_pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def fingerprint(certificate_pem: bytes) -> str:
    """The SHA-256 of the (first) certificate's DER encoding, in lowercase hex: what a join
    token pins."""
    return hashlib.sha256(x509.load_pem_x509_certificate(certificate_pem).public_bytes(
        serialization.Encoding.DER)).hexdigest()


def spaced(fingerprint_hex: str) -> str:
    """AB:CD:... as `openssl x509 -fingerprint -sha256` prints it, to compare by eye."""
    upper = fingerprint_hex.upper()
    return ":".join(upper[i:i + 2] for i in range(0, len(upper), 2))


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _serial() -> int:
    return secrets.randbits(159)  # positive, under the 20 bytes RFC 5280 allows


def make_ca(cluster: str) -> tuple[bytes, bytes]:
    """A new CA: (certificate PEM, key PEM). `cluster` goes into its name, for people."""
    key = new_key()
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"Drover cluster CA {cluster}")])
    now = _now()
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(_serial()).not_valid_before(now - CLOCK_SKEW).not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                     crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert_pem(certificate), key_pem(key)


@dataclass(frozen=True, slots=True)
class Authority:
    """A CA that can sign: its certificate and key."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def load(cls, certificate_pem: bytes, key_pem_bytes: bytes) -> Authority:
        certificate = x509.load_pem_x509_certificate(certificate_pem)
        key = serialization.load_pem_private_key(key_pem_bytes, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("the CA key is not an ECDSA key")
        if key.public_key().public_numbers() != certificate.public_key().public_numbers():  # type: ignore[union-attr]  # an ECDSA CA's certificate holds an ECDSA key
            raise ValueError("the CA key does not belong to the CA certificate")
        return cls(certificate, key)

    @property
    def pem(self) -> bytes:
        return cert_pem(self.certificate)

    def _leaf(self, subject: x509.Name, public_key: ec.EllipticCurvePublicKey, usage: x509.ObjectIdentifier,
              names: list[x509.GeneralName]) -> x509.Certificate:
        now = _now()
        builder = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(self.certificate.subject)
            .public_key(public_key).serial_number(_serial())
            .not_valid_before(now - CLOCK_SKEW).not_valid_after(now + LEAF_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self.key, hashes.SHA256())

    def controller_certificate(self, hosts: list[str]) -> tuple[bytes, bytes]:
        """The controller's server certificate and key, naming `hosts` (names or addresses)."""
        key = new_key()
        subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                             x509.NameAttribute(NameOID.COMMON_NAME, CONTROLLER_NAME)])
        certificate = self._leaf(subject, key.public_key(), ExtendedKeyUsageOID.SERVER_AUTH,
                                 [_general_name(host) for host in dict.fromkeys(hosts) if host])
        return cert_pem(certificate), key_pem(key)

    def node_certificate(self, node: str, request_pem: bytes) -> x509.Certificate:
        """A node's client certificate for the key of its signing request. Only the request's
        key is taken (its signature proves the node holds that key); the name is the one the
        node joins as, whatever the request says."""
        try:
            request = x509.load_pem_x509_csr(request_pem)
        except ValueError as error:
            raise BadRequest(f"the certificate signing request is not a PEM CSR: {error}") from None
        try:
            valid = request.is_signature_valid
        except InvalidSignature:
            valid = False
        if not valid:
            raise BadRequest("the certificate signing request's signature does not match its key")
        public_key = request.public_key()
        if not isinstance(public_key, ec.EllipticCurvePublicKey) or public_key.key_size < 256:
            raise BadRequest("a node's key must be an ECDSA key of 256 bits or more")
        subject = node_subject(node)
        return self._leaf(subject, public_key, ExtendedKeyUsageOID.CLIENT_AUTH, [x509.DNSName(node)])


def node_subject(node: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, NODE_UNIT),
                      x509.NameAttribute(NameOID.COMMON_NAME, node)])


def signing_request(node: str) -> tuple[bytes, bytes]:
    """A new key for a node and its signing request: (request PEM, key PEM). The key stays on
    the node; only the request travels."""
    key = new_key()
    request = x509.CertificateSigningRequestBuilder().subject_name(node_subject(node)).sign(key, hashes.SHA256())
    return request.public_bytes(serialization.Encoding.PEM), key_pem(key)


def certificate_facts(certificate_pem: bytes) -> tuple[str, str, float]:
    """(common name, serial in hex, expiry as a Unix time) of a certificate."""
    certificate = x509.load_pem_x509_certificate(certificate_pem)
    names = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    common_name = str(names[0].value) if names else ""
    return common_name, format(certificate.serial_number, "x"), certificate.not_valid_after_utc.timestamp()


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
