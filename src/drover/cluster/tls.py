"""The TLS contexts of each side, made with the standard library's ssl module.

Trust is the cluster's CA alone, never the system's: the controller's certificate must chain to
it and be a server certificate, a node's must chain to it and be a client certificate (OpenSSL
checks the extended key usage for each role). Host names are not checked: the CA is the
cluster's own and issues server certificates to the controller only, and nodes reach the
controller by whatever address the network gives it.
"""

from __future__ import annotations

import ssl
from typing import Any

MINIMUM = ssl.TLSVersion.TLSv1_2


def server_context(cert: str, key: str, ca: str) -> ssl.SSLContext:
    """The controller's: its certificate; a client certificate is asked for and, when given,
    must chain to the cluster's CA (users' and joining hosts' requests come without one)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = MINIMUM
    context.load_cert_chain(cert, key)
    context.load_verify_locations(cafile=ca)
    context.verify_mode = ssl.CERT_OPTIONAL
    return context


def _client(ca_pem: bytes | None = None, ca_file: str | None = None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = MINIMUM
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    if ca_pem is not None:
        context.load_verify_locations(cadata=ca_pem.decode("ascii"))
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)
    return context


def node_context(ca: str, cert: str, key: str) -> ssl.SSLContext:
    """A node's: the controller verified against the cluster's CA, the node's certificate shown."""
    context = _client(ca_file=ca)
    context.load_cert_chain(cert, key)
    return context


def pinned_context(ca_pem: bytes) -> ssl.SSLContext:
    """A joining host's: the controller verified against a CA whose fingerprint the token pinned."""
    return _client(ca_pem=ca_pem)


def unverified_context() -> ssl.SSLContext:
    """Only to fetch the CA's certificate, which is then checked against the pinned fingerprint
    before anything is sent: nothing said on this connection is trusted."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = MINIMUM
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def peer_certificate(ssl_object: Any) -> tuple[str, str] | None:
    """(common name, serial in lowercase hex) of the verified client certificate of a TLS
    connection; None when the client showed none."""
    certificate = ssl_object.getpeercert() if ssl_object is not None else None
    if not certificate:
        return None
    common_name = ""
    for rdn in certificate.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                common_name = value
    serial = certificate.get("serialNumber", "").lower().lstrip("0") or "0"
    return common_name, serial


def parse_address(text: str, what: str) -> tuple[str, int]:
    """HOST:PORT, [V6]:PORT, or https://HOST:PORT, as (host, port)."""
    from drover.core.errors import BadRequest

    rest = text.removeprefix("https://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise BadRequest(f"{what} must be HOST:PORT (or https://HOST:PORT), not {text!r}")
    return host.removeprefix("[").removesuffix("]"), int(port)
