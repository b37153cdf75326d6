"""Users of another host: two real users on a node's host (a network namespace) run the
installed `drover` there; it finds the cluster from what `drover join` wrote, verifies the
controller by the cluster's CA, and proves who they are with a MUNGE credential made for each
request by the host's munged (a private one the test starts, with its own key). Each user's job
runs as that user; neither sees nor changes the other's; and credentials that are forged,
replayed, expired or made for another request are refused, each refusal logged with the
peer's address."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.helpers.munge import Munged
from tests.helpers.munge_cluster import hosts_with_munge
from tests.helpers.netns import NO_MUNGE, Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import LOGIN_PATH, run_as_user
from tests.helpers.wait import wait_until


@pytest.fixture
def across(users: tuple[str, str], system_install: SystemInstall) -> Iterator[tuple[Hosts, Munged]]:
    with hosts_with_munge(["node1"]) as made:
        yield made


def as_user_on(hosts: Hosts, install: SystemInstall, host: str) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run(user, *argv)`: the installed command run as `user` on `host`, finding its cluster
    the way every user of that host does (the cluster file `drover join` wrote)."""
    node = hosts.nodes[host]

    def run(user: str, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = run_as_user(user, argv, prefix=node.command(),
                             env={"PATH": f"{install.bindir}:{LOGIN_PATH}",
                                  "DROVER_CLUSTER_FILE": str(node.state_dir / "cluster.json")})
        if check and result.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} as {user} on {host} exited {result.returncode}\n{result.stderr}")
        return result
    return run


def test_users_of_a_joined_host_submit_and_their_jobs_run_as_them(
        across: tuple[Hosts, Munged], users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts, _ = across
    alice, bob = users
    run = as_user_on(hosts, system_install, "node1")
    cluster_file = hosts.nodes["node1"].state_dir / "cluster.json"
    assert oct(cluster_file.stat().st_mode & 0o777) == "0o644"
    submitted = run(alice, "drover", "submit", "--parsable", "-o", "who.out", "--", "sh", "-c", "id -un; hostname -I")
    job = submitted.stdout.split()[0]
    run(alice, "drover", "wait", "--timeout", "60", job)
    home = Path(pwd.getpwnam(alice).pw_dir)
    written = (home / "who.out").read_text().split()
    assert written[0] == alice and "10.213.0.2" in written  # as alice, on node1
    listed = json.loads(run(alice, "drover", "status", "--all", "--json").stdout)
    assert [j["id"] for j in listed] == [int(job)] and listed[0]["owner"] == alice
    # bob, on the same host: cannot see, cancel or hold alice's jobs; his own list is empty
    waiting = run(alice, "drover", "submit", "--parsable", "--hold", "--", "true").stdout.split()[0]
    assert json.loads(run(bob, "drover", "status", "--all", "--json").stdout) == []
    for verb in ("show", "cancel", "release"):
        refused = run(bob, "drover", verb, waiting, check=False)
        assert refused.returncode != 0 and f"belongs to {alice}" in refused.stderr, (verb, refused.stderr)
    run(alice, "drover", "cancel", waiting)  # she can, from her host
    assert json.loads(run(alice, "drover", "show", "--json", waiting).stdout)["state"] == "cancelled"
    # a user of another host is never the cluster's admin
    refused = run(alice, "drover", "token", "create", check=False)
    assert refused.returncode != 0 and "only root and the cluster's operators" in refused.stderr


PROBE = """
import json, socket, ssl, sys, time
from drover.cluster import munge
cluster = json.load(open(sys.argv[1]))
host, port = cluster["controller"][8:].rsplit(":", 1)
context = ssl.create_default_context(cadata=cluster["ca_pem"])

def send(method, target, body, credential):
    with socket.create_connection((host, int(port))) as raw, context.wrap_socket(raw, server_hostname=host) as s:
        head = f"{method} {target} HTTP/1.1\\r\\nHost: drover\\r\\nContent-Length: {len(body)}\\r\\n"
        if credential is not None:
            head += f"X-Drover-Credential: {credential}\\r\\n"
        s.sendall(head.encode() + b"\\r\\n" + body)
        reply = b""
        while b"\\r\\n\\r\\n" not in reply:
            reply += s.recv(65536)
        head, _, body = reply.partition(b"\\r\\n\\r\\n")
        length = int(head.lower().split(b"content-length:")[1].split()[0])
        while len(body) < length:
            body += s.recv(65536)
        return int(reply.split()[1]), body.decode(errors="replace")

def made(method, target, body, ttl=0):
    return munge.encode(munge.request_digest(method, target, body), cluster["munge_socket"], ttl)

fresh = made("GET", "/v1/jobs", b"")
short_lived = made("GET", "/v1/jobs", b"", ttl=1)
print(json.dumps({
    "none": send("GET", "/v1/jobs", b"", None),
    "forged": send("GET", "/v1/jobs", b"", "MUNGE:AwQDAACm9ZrFgm7q0Ktk:"),
    "fresh": send("GET", "/v1/jobs", b"", fresh),
    "replayed": send("GET", "/v1/jobs", b"", fresh),
    "other_request": send("GET", "/v1/history", b"", made("GET", "/v1/jobs", b"")),
    "tampered_body": send("POST", "/v1/jobs", b'{"jobs": []}', made("POST", "/v1/jobs", b'{"jobs": [1]}')),
    "expired": (time.sleep(2.2), send("GET", "/v1/jobs", b"", short_lived))[1],
}))
"""


def test_forged_replayed_expired_and_tampered_credentials_are_refused_and_logged(
        across: tuple[Hosts, Munged], users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts, _ = across
    alice, _ = users
    node = hosts.nodes["node1"]
    probe = run_as_user(alice, [system_install.python, "-c", PROBE, str(node.state_dir / "cluster.json")],
                        prefix=node.command())
    assert probe.returncode == 0, probe.stderr
    answers = {name: (status, text) for name, (status, text) in json.loads(probe.stdout).items()}
    assert answers["fresh"][0] == 200
    expected = {
        "none": "carries a MUNGE credential", "forged": "the MUNGE credential is refused",
        "replayed": "it was used before (a replay)", "other_request": "made for another request",
        "tampered_body": "made for another request", "expired": "it has expired",
    }
    for name, words in expected.items():
        status, text = answers[name]
        assert status == 403 and words in text, (name, status, text)
    log = hosts.controller_log()
    wait_until(lambda: hosts.controller_log().count("refused a user's request from 10.213.0.2:") >= 5,
               describe="each refusal logged with the peer's address")
    assert "a replay" in log or "a replay" in hosts.controller_log()


def test_a_node_runs_only_what_the_jobs_owner_signed(
        across: tuple[Hosts, Munged], users: tuple[str, str], system_install: SystemInstall) -> None:
    """The node joined where munged runs, so it requires signed jobs. A job its owner signed
    runs; one submitted where no munged runs (the controller's host here) is not signed and does
    not run; and one changed in the controller's store after it was signed (a controller taken
    over) does not run either: each ends FAILED with the node's reason, nothing of it run."""
    hosts, _ = across
    alice, _ = users
    node = hosts.nodes["node1"]
    assert "require_signed_jobs = true" in (node.state_dir / "drover.toml").read_text()
    run = as_user_on(hosts, system_install, "node1")
    home = Path(pwd.getpwnam(alice).pw_dir)

    # Unsigned: alice on the controller's host, through its local socket, where no munged runs.
    os.chmod(hosts.ctl.state_dir, 0o711)
    unsigned = run_as_user(alice, ["drover", "submit", "--parsable", "--", "touch", str(home / "unsigned")],
                           prefix=hosts.ctl.command(),
                           env={"PATH": f"{system_install.bindir}:{LOGIN_PATH}",
                                "DROVER_SOCKET": str(hosts.ctl.state_dir / "api.sock"), **NO_MUNGE})
    assert unsigned.returncode == 0, unsigned.stderr
    job = unsigned.stdout.split()[0]
    run(alice, "drover", "wait", "--timeout", "60", job, check=False)
    shown = json.loads(run(alice, "drover", "show", "--json", job).stdout)
    (attempt,) = shown["tasks"][0]["attempts"]
    assert shown["state"] == "failed" and "not signed by its owner" in attempt["failure"], shown
    assert not (home / "unsigned").exists()

    # Signed, then changed where only the controller could change it.
    held = run(alice, "drover", "submit", "--parsable", "--hold", "--", "touch", str(home / "signed")).stdout.split()[0]
    hosts.kill_controller()
    import sqlite3

    with sqlite3.connect(hosts.ctl.state_dir / "drover.db") as db:
        changed = db.execute("UPDATE job_payloads SET script = ? WHERE job_id = ?",  # where a job's script is kept
                             (f"touch {home / 'tampered'}\n", int(held))).rowcount
    assert changed == 1
    hosts.restart_controller()
    wait_until(lambda: json.loads(hosts.ctl.drover("nodes", "--json").stdout)[0]["state"] == "up",
               describe="node1 back with the controller")
    run(alice, "drover", "release", held)
    run(alice, "drover", "wait", "--timeout", "60", held, check=False)
    shown = json.loads(run(alice, "drover", "show", "--json", held).stdout)
    (attempt,) = shown["tasks"][0]["attempts"]
    assert shown["state"] == "failed" and "is not what its owner signed" in attempt["failure"], shown
    assert not (home / "tampered").exists() and not (home / "signed").exists()
    assert f"attempt {held}.0.1 refused: what the job runs is not what its owner signed" in \
        (node.state_dir / "execd.log").read_text()
