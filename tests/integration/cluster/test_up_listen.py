"""`drover up --listen ADDR:PORT`: a personal cluster that other hosts may join. It makes the
cluster's CA the first time, serves TLS on the address, and keeps its own node as ever."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.netns import PORT, Hosts, why_not_available


def test_up_listen_makes_the_ca_and_lets_another_host_join() -> None:
    why_not = why_not_available()
    if why_not:
        pytest.skip(why_not)
    with Hosts() as hosts:
        try:
            hosts.add_node("node1")
            ctl = hosts.ctl
            up = ctl.drover("up", "--listen", f"{ctl.address}:{PORT}", "--cpus", "1", "--state-dir", str(ctl.state_dir))
            assert f"made {ctl.state_dir}/tls/ca.crt" in up.stdout
            assert f"serving TLS on ('{ctl.address}', {PORT})" in hosts.controller_log()
            hosts.join("node1", hosts.token())
            listed = json.loads(ctl.drover("nodes", "--json").stdout)
            assert sorted(node["state"] for node in listed) == ["up", "up"]
            assert "node1" in {node["name"] for node in listed}
            # Again: everything is there already; nothing is made twice.
            init = ctl.drover("cluster", "init", "--state-dir", str(ctl.state_dir))
            assert "there already" in init.stdout
            hosts.nodes["node1"].drover("leave", "--state-dir", str(hosts.nodes["node1"].state_dir))
            ctl.drover("down", "--state-dir", str(ctl.state_dir))
        except BaseException:
            print(hosts.logs())
            raise


@pytest.mark.parametrize("listen, says", [
    ("nonsense", "--listen must be HOST:PORT"),
    ("127.0.0.1:99999", "--listen must be HOST:PORT"),
    ("127.0.0.1:7443", "--listen serves TLS only, and "),
])
def test_the_controller_refuses_to_listen_without_tls_or_a_proper_address(tmp_path: Path, listen: str, says: str) -> None:
    started = subprocess.run([sys.executable, "-m", "drover", "controller", "--state-dir", str(tmp_path),
                              "--listen", listen], capture_output=True, text=True, timeout=60)
    assert started.returncode != 0
    assert says in started.stderr, started.stderr
    assert not (tmp_path / "api.sock").exists()
