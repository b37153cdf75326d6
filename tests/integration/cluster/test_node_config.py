"""An execd whose controller is on another host checks its TLS settings before it starts
anything, and says what is wrong in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("execd, says", [
    ('controller = "http://10.213.0.1:7443"', "[execd] controller must be https://ADDR:PORT"),
    ('controller = "https://10.213.0.1:7443"', "tls_cert, tls_key, tls_ca is not set; `drover join` writes them"),
    ('controller = "https://10.213.0.1:7443"\ntls_cert = "/nonexistent/node.crt"\ntls_key = "/nonexistent/node.key"\n'
     'tls_ca = "/nonexistent/ca.crt"', "cannot use the node's TLS files"),
])
def test_a_node_with_bad_tls_settings_does_not_start(tmp_path: Path, execd: str, says: str) -> None:
    (tmp_path / "drover.toml").write_text(f"[execd]\n{execd}\n")
    started = subprocess.run([sys.executable, "-m", "drover", "execd", "--state-dir", str(tmp_path)],
                             capture_output=True, text=True, timeout=60)
    assert started.returncode != 0
    assert says in started.stderr, started.stderr
