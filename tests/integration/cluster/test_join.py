"""A node on another host: it joins by token, the controller's host submits, the job runs on the
node, in the node's network namespace. Each "host" is a network namespace with its own state
directory (tests/helpers/netns.py); the controller runs without an execd of its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers.netns import Hosts
from tests.helpers.wait import wait_until


def nodes(hosts: Hosts) -> dict[str, str]:
    return {node["name"]: node["state"] for node in json.loads(hosts.ctl.drover("nodes", "--json").stdout)}


def test_a_job_submitted_on_the_controller_host_runs_on_the_joined_node(hosts: Hosts) -> None:
    assert nodes(hosts) == {}  # no execd of its own: a job can run only on a node that joined
    joined = hosts.join("node1", hosts.token("--ttl", "10m"))
    assert "joined https://10.213.0.1:7443 as node node1" in joined.stdout
    node = hosts.nodes["node1"]
    config = (node.state_dir / "drover.toml").read_text()
    assert 'controller = "https://10.213.0.1:7443"' in config and 'node_name = "node1"' in config
    # joined with --no-munge: no signatures asked of the jobs, though this machine may run a munged
    assert "require_signed_jobs" not in config and "joined without MUNGE (--no-munge)" in joined.stderr
    assert json.loads((node.state_dir / "cluster.json").read_text())["munge_socket"] is None
    key = node.state_dir / "tls" / "node.key"
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    assert "node node1 joined from 10.213.0.2:" in hosts.controller_log()
    assert nodes(hosts) == {"node1": "up"}

    workdir = hosts.root / "work"
    workdir.mkdir()
    # The job says where it runs: the node's name, and the addresses of its network namespace.
    job = int(hosts.ctl.drover("submit", "--parsable", "-D", str(workdir), "-o", "where.out", "--",
                               "sh", "-c", "echo node=$DROVER_NODE; ip -o -4 addr show").stdout.split()[0])
    hosts.ctl.drover("wait", "--timeout", "60", str(job), timeout=90)
    shown = json.loads(hosts.ctl.drover("show", "--json", str(job)).stdout)
    shown = shown[0] if isinstance(shown, list) else shown
    attempts = [a for task in shown["tasks"] for a in task["attempts"]]
    assert [a["node"] for a in attempts] == ["node1"] and shown["state"] == "completed"
    written = (workdir / "where.out").read_text()
    assert "node=node1" in written
    assert "10.213.0.2/24" in written and "10.213.0.1/24" not in written  # the node's namespace, not ctl's


def test_a_node_that_leaves_is_forgotten_and_its_certificate_refused(hosts: Hosts) -> None:
    hosts.join("node1", hosts.token())
    node = hosts.nodes["node1"]
    kept = hosts.root / "kept"
    kept.mkdir()
    for name in ("node.crt", "node.key", "ca.crt"):
        (kept / name).write_bytes((node.state_dir / "tls" / name).read_bytes())
    cluster_file = node.state_dir / "cluster.json"  # what the host's users find the cluster by
    assert json.loads(cluster_file.read_text())["controller"] == hosts.url
    assert oct(os.stat(cluster_file).st_mode & 0o777) == "0o644"
    left = node.drover("leave", "--state-dir", str(node.state_dir))
    assert "node node1 left" in left.stdout
    assert not (node.state_dir / "tls" / "node.crt").exists() and not (node.state_dir / "drover.toml").exists()
    assert not cluster_file.exists()
    assert nodes(hosts) == {}
    assert "node node1 left, from 10.213.0.2:" in hosts.controller_log()

    # The same certificate, kept from before: the controller revoked it.
    start_execd(hosts, "node1", kept, "node1")
    wait_until(lambda: "refused a node channel from 10.213.0.2:" in hosts.controller_log()
               and "was revoked" in hosts.controller_log(), describe="the revoked certificate to be refused")
    assert nodes(hosts) == {}


def start_execd(hosts: Hosts, on: str, tls: Path, node_name: str) -> Path:
    """An execd on host `on` with the certificate in `tls`, saying hello as `node_name`."""
    import subprocess
    import sys

    host = hosts.nodes[on]
    state = hosts.root / f"{on}-as-{node_name}"
    state.mkdir()
    (state / "drover.toml").write_text(
        f'[execd]\ncontroller = "{hosts.url}"\nnode_name = "{node_name}"\n'
        f'tls_cert = "{tls}/node.crt"\ntls_key = "{tls}/node.key"\ntls_ca = "{tls}/ca.crt"\n')
    log = open(state / "execd.log", "ab")
    subprocess.Popen(host.command(sys.executable, "-m", "drover", "execd", "--state-dir", str(state), "--cpus", "1"),
                     stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    log.close()
    return state
