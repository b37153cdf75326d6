"""`drover cluster init` and what the controller needs to serve TLS: which certificate, key and
CA it uses (the admin's from drover.toml, or the cluster's own under `<state>/tls/`), made the
first time when they are the cluster's own."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from drover.cluster import ca
from drover.cluster.files import TlsFiles, read, write_private
from drover.config_schema import ControllerSection
from drover.core.errors import DroverError


@dataclass(frozen=True, slots=True)
class ControllerTls:
    """The files the controller serves TLS with. `ca_key` is None when the admin gave their own
    certificates without the CA's key: then the controller cannot issue node certificates."""

    cert: str
    key: str
    ca: str
    ca_key: str | None
    own: bool  # made by `drover cluster init` (False: the admin's, from drover.toml)

    def fingerprint(self) -> str:
        return ca.fingerprint(read(self.ca))


def controller_tls(state_dir: str, section: ControllerSection) -> ControllerTls:
    """The admin's files if drover.toml names them (all of tls_cert, tls_key and tls_ca, or
    none), else the cluster's own."""
    given = {"tls_cert": section.tls_cert, "tls_key": section.tls_key, "tls_ca": section.tls_ca}
    if any(given.values()):
        missing = [key for key, value in given.items() if not value]
        if missing:
            raise DroverError(f"[controller] sets {', '.join(k for k, v in given.items() if v)} but not "
                              f"{', '.join(missing)}: give the certificate, its key and the CA together")
        assert section.tls_cert and section.tls_key and section.tls_ca
        return ControllerTls(section.tls_cert, section.tls_key, section.tls_ca, section.tls_ca_key, own=False)
    if section.tls_ca_key:
        raise DroverError("[controller] sets tls_ca_key without tls_cert, tls_key and tls_ca")
    files = TlsFiles.of(state_dir)
    return ControllerTls(files.controller_cert, files.controller_key, files.ca_cert, files.ca_key, own=True)


@dataclass(frozen=True, slots=True)
class InitResult:
    tls: ControllerTls
    made: list[str]  # the files this run wrote (none: all were there)


def init(state_dir: str, section: ControllerSection, hosts: list[str] | None = None) -> InitResult:
    """Make what is missing of the cluster's own CA and controller certificate (idempotent);
    with the admin's certificates, check they are there. `hosts` are names or addresses the
    controller's certificate names besides this host's (the address it listens on)."""
    tls = controller_tls(state_dir, section)
    made: list[str] = []
    if not tls.own:
        for path in (tls.cert, tls.key, tls.ca, *([tls.ca_key] if tls.ca_key else [])):
            if not os.path.isfile(path):
                raise DroverError(f"{path}, named in [controller] of drover.toml, is not there")
        return InitResult(tls, made)
    files = TlsFiles.of(state_dir)
    os.makedirs(files.directory, mode=0o700, exist_ok=True)
    os.chmod(files.directory, 0o700)
    have_ca = os.path.exists(files.ca_cert) and os.path.exists(files.ca_key)
    if not have_ca:
        certificate, key = ca.make_ca(socket.gethostname())
        write_private(files.ca_key, key)
        write_private(files.ca_cert, certificate, 0o644)
        made += [files.ca_cert, files.ca_key]
    if not have_ca or not (os.path.exists(files.controller_cert) and os.path.exists(files.controller_key)):
        authority = ca.Authority.load(read(files.ca_cert), read(files.ca_key))
        names = [socket.gethostname(), "localhost", "127.0.0.1", "::1", *(hosts or [])]
        certificate, key = authority.controller_certificate(names)
        write_private(files.controller_key, key)
        write_private(files.controller_cert, certificate, 0o644)
        made += [files.controller_cert, files.controller_key]
    return InitResult(tls, made)
