"""`drover cluster init` on a state directory: what it makes, with which modes, once; and the
admin's own certificates from drover.toml instead."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from drover.cluster import ca
from drover.cluster.files import check_node_name
from drover.cluster.setup import controller_tls, init
from drover.config_schema import ControllerSection
from drover.core.errors import BadRequest, DroverError


def mode(path: str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_init_makes_the_ca_and_the_controllers_certificate_once(tmp_path: Path) -> None:
    first = init(str(tmp_path), ControllerSection(), ["10.213.0.1"])
    tls_dir = tmp_path / "tls"
    assert sorted(os.path.basename(p) for p in first.made) == ["ca.crt", "ca.key", "controller.crt", "controller.key"]
    assert mode(str(tls_dir)) == 0o700
    assert (mode(first.tls.ca_key or ""), mode(first.tls.key)) == (0o600, 0o600)
    fingerprint = first.tls.fingerprint()
    again = init(str(tmp_path), ControllerSection())
    assert again.made == [] and again.tls.fingerprint() == fingerprint
    # A lost controller certificate is made again, by the same CA.
    os.unlink(first.tls.cert)
    remade = init(str(tmp_path), ControllerSection())
    assert [os.path.basename(p) for p in remade.made] == ["controller.crt", "controller.key"]
    assert remade.tls.fingerprint() == fingerprint


def test_the_admins_certificates_are_used_as_given_and_given_together(tmp_path: Path) -> None:
    certificate, key = ca.make_ca("admin")
    (tmp_path / "ca.pem").write_bytes(certificate)
    server, server_key = ca.Authority.load(certificate, key).controller_certificate(["ctl"])
    (tmp_path / "server.pem").write_bytes(server)
    (tmp_path / "server.key").write_bytes(server_key)
    section = ControllerSection(tls_cert=str(tmp_path / "server.pem"), tls_key=str(tmp_path / "server.key"),
                                tls_ca=str(tmp_path / "ca.pem"))
    result = init(str(tmp_path / "state"), section)
    assert (result.made, result.tls.own, result.tls.ca_key) == ([], False, None)
    assert result.tls.fingerprint() == ca.fingerprint(certificate)
    assert not (tmp_path / "state" / "tls").exists()
    with pytest.raises(DroverError, match="but not tls_key, tls_ca"):
        controller_tls(str(tmp_path), ControllerSection(tls_cert=str(tmp_path / "server.pem")))
    with pytest.raises(DroverError, match="is not there"):
        init(str(tmp_path), ControllerSection(tls_cert="/nonexistent/a", tls_key=str(tmp_path / "server.key"),
                                              tls_ca=str(tmp_path / "ca.pem")))


@pytest.mark.parametrize("name", ["node1", "n-1.example.org", "A" * 63])
def test_node_names_are_host_names(name: str) -> None:
    assert check_node_name(name) == name


@pytest.mark.parametrize("name", ["", "-n", "n_1", "n 1", "n/1", "A" * 64, "é", "n.", "x" * 254])
def test_anything_else_is_not_a_node_name(name: str) -> None:
    with pytest.raises(BadRequest, match="not a valid node name"):
        check_node_name(name)
