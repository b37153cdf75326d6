"""The cluster's CA on plain data: what it issues, to whom, for what; and the TLS roles those
certificates allow, checked by real TLS handshakes over a socket pair."""

from __future__ import annotations

import base64
import socket
import ssl
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from drover.cluster import ca
from drover.cluster.tls import node_context, peer_certificate, pinned_context, server_context
from drover.core.errors import BadRequest


@pytest.fixture(scope="module")
def authority() -> ca.Authority:
    certificate, key = ca.make_ca("test")
    return ca.Authority.load(certificate, key)


def test_a_node_certificate_names_the_node_it_joined_as_and_is_for_clients_only(authority: ca.Authority) -> None:
    request, _key = ca.signing_request("claims-to-be-other")
    issued = authority.node_certificate("node1", request)
    assert issued.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "node1"
    usage = issued.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert not issued.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    issued.verify_directly_issued_by(authority.certificate)
    name, serial, expires = ca.certificate_facts(ca.cert_pem(issued))
    assert (name, serial) == ("node1", format(issued.serial_number, "x")) and expires > 0


def test_the_controller_certificate_is_for_servers_only(authority: ca.Authority) -> None:
    pem, _key = authority.controller_certificate(["ctl.example", "10.213.0.1"])
    certificate = x509.load_pem_x509_certificate(pem)
    usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "ctl.example" in names.get_values_for_type(x509.DNSName)


def test_a_signing_request_is_refused_when_its_signature_or_form_is_wrong(authority: ca.Authority) -> None:
    with pytest.raises(BadRequest, match="not a PEM CSR"):
        authority.node_certificate("node1", b"-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n")
    request, _ = ca.signing_request("zq-node-7")
    # The request's body changed after it was signed: the signature no longer covers it.
    der = x509.load_pem_x509_csr(request).public_bytes(serialization.Encoding.DER)
    assert der.count(b"zq-node-7") == 1
    tampered = der.replace(b"zq-node-7", b"zq-node-8")
    pem = b"-----BEGIN CERTIFICATE REQUEST-----\n" + base64.encodebytes(tampered) + b"-----END CERTIFICATE REQUEST-----\n"
    with pytest.raises(BadRequest, match="signature does not match"):
        authority.node_certificate("node1", pem)


def test_the_fingerprint_is_the_sha256_of_the_der_certificate(authority: ca.Authority) -> None:
    import hashlib

    der = authority.certificate.public_bytes(serialization.Encoding.DER)
    assert ca.fingerprint(authority.pem) == hashlib.sha256(der).hexdigest()
    assert ca.spaced("ab01") == "AB:01"


def test_a_ca_key_that_is_not_the_certificates_is_refused(authority: ca.Authority) -> None:
    _other_certificate, other_key = ca.make_ca("other")
    with pytest.raises(ValueError, match="does not belong"):
        ca.Authority.load(authority.pem, other_key)


# -- the roles, in real handshakes ------------------------------------------------------------


class Files:
    def __init__(self, directory: Path, authority: ca.Authority) -> None:
        self.ca = directory / "ca.crt"
        self.ca.write_bytes(authority.pem)
        cert, key = authority.controller_certificate(["localhost"])
        self.server_cert, self.server_key = directory / "server.crt", directory / "server.key"
        self.server_cert.write_bytes(cert)
        self.server_key.write_bytes(key)
        request, node_key = ca.signing_request("node1")
        self.node_cert, self.node_key = directory / "node.crt", directory / "node.key"
        self.node_cert.write_bytes(ca.cert_pem(authority.node_certificate("node1", request)))
        self.node_key.write_bytes(node_key)


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[object, str | None]:
    """Both ends of one TLS connection over a socket pair: (what the server learnt of the
    client's certificate, or the exception either side raised; the client's error, if any)."""
    left, right = socket.socketpair()
    seen: list[object] = []

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                seen.append(peer_certificate(tls))
                tls.recv(1)
        except (ssl.SSLError, OSError) as error:
            seen.append(error)

    thread = threading.Thread(target=serve)
    thread.start()
    client_error = None
    try:
        with client.wrap_socket(right, server_hostname="anything") as tls:
            tls.sendall(b"x")
    except (ssl.SSLError, OSError) as error:
        client_error = str(error)
    thread.join(10)
    return seen[0], client_error


def test_a_node_verifies_the_controller_and_is_known_by_its_certificate(tmp_path: Path, authority: ca.Authority) -> None:
    files = Files(tmp_path, authority)
    server = server_context(str(files.server_cert), str(files.server_key), str(files.ca))
    seen, error = handshake(server, node_context(str(files.ca), str(files.node_cert), str(files.node_key)))
    assert error is None
    assert isinstance(seen, tuple) and seen[0] == "node1"


def test_a_joining_host_shows_no_certificate_and_verifies_the_pinned_ca(tmp_path: Path, authority: ca.Authority) -> None:
    files = Files(tmp_path, authority)
    server = server_context(str(files.server_cert), str(files.server_key), str(files.ca))
    seen, error = handshake(server, pinned_context(authority.pem))
    assert (seen, error) == (None, None)
    other_ca, _ = ca.make_ca("other")
    _seen, error = handshake(server, pinned_context(other_ca))
    assert error is not None and "CERTIFICATE_VERIFY_FAILED" in error


def test_a_node_certificate_cannot_serve_as_the_controller(tmp_path: Path, authority: ca.Authority) -> None:
    files = Files(tmp_path, authority)
    impostor = server_context(str(files.node_cert), str(files.node_key), str(files.ca))
    _seen, error = handshake(impostor, pinned_context(authority.pem))
    assert error is not None and "CERTIFICATE_VERIFY_FAILED" in error


def test_the_controller_certificate_cannot_pose_as_a_node(tmp_path: Path, authority: ca.Authority) -> None:
    files = Files(tmp_path, authority)
    server = server_context(str(files.server_cert), str(files.server_key), str(files.ca))
    posing = node_context(str(files.ca), str(files.server_cert), str(files.server_key))
    seen, _error = handshake(server, posing)
    assert isinstance(seen, ssl.SSLError)
