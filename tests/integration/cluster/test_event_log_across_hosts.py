"""A job's event log when the controller runs as the service user (as a shared cluster's does)
and cannot become anyone: the node on the host the job was submitted from writes it, as the
job's owner, with the controller's writer. Here a real user of a joined host (a network
namespace) submits over TLS with a MUNGE credential; the node of that host (its channel comes
from the request's address) appends every event once, and, since it runs signed jobs only,
only to the event log the owner signed: one changed in the controller's store is refused (what
the controller sends no longer matches the owner's credential), and the refusal is kept with the
job. A job with an event log submitted where no node runs (the
controller's host here) is refused."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.munge_cluster import hosts_with_munge
from tests.helpers.netns import Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import LOGIN_PATH, run_as_user
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER


@pytest.fixture
def hosts(users: tuple[str, str], system_install: SystemInstall) -> Iterator[Hosts]:
    with hosts_with_munge(["node1"], python=system_install.python, service_user=True) as (made, _):
        yield made


def test_the_submitting_hosts_node_writes_the_event_log_as_its_owner_and_only_the_signed_one(
        hosts: Hosts, users: tuple[str, str], system_install: SystemInstall) -> None:
    alice, _ = users
    node = hosts.nodes["node1"]
    assert hosts.controller_process is not None  # `ip netns exec` and setpriv exec the controller: one process
    assert os.stat(f"/proc/{hosts.controller_process.pid}").st_uid == pwd.getpwnam(SERVICE_USER).pw_uid

    def run(*argv: str, on: str = "node1", check: bool = True) -> str:
        host = hosts.nodes[on] if on != "ctl" else hosts.ctl
        env = {"PATH": f"{system_install.bindir}:{LOGIN_PATH}"}
        env.update({"DROVER_CLUSTER_FILE": str(node.state_dir / "cluster.json")} if on != "ctl"
                   else {"DROVER_SOCKET": str(hosts.ctl.state_dir / "api.sock")})
        result = run_as_user(alice, argv, prefix=host.command(), env=env)
        assert result.returncode == 0 or not check, result.stderr
        return result.stdout + result.stderr

    home = Path(pwd.getpwnam(alice).pw_dir)
    log = home / "events.jsonl"
    job = run("drover", "submit", "--parsable", "--event-log", str(log), "--", "true").split()[0]
    run("drover", "wait", "--timeout", "60", job)
    wait_until(lambda: log.exists() and "job_ended" in log.read_text(), describe="the event log's last line")
    assert log.stat().st_uid == pwd.getpwnam(alice).pw_uid
    seqs = [json.loads(line)["seq"] for line in log.read_text().splitlines()]
    assert seqs == sorted(set(seqs)) and {json.loads(line)["job"] for line in log.read_text().splitlines()} == {int(job)}

    # Changed where only the controller could change it: the node refuses the path.
    held = run("drover", "submit", "--parsable", "--hold", "--event-log", str(home / "held.jsonl"), "--",
               "true").split()[0]
    wait_until(lambda: (home / "held.jsonl").exists(), describe="the held job's first line")
    hosts.kill_controller()
    tampered = home / ".profile-by-the-controller"
    change = ("import sqlite3, sys\n"
              "with sqlite3.connect(sys.argv[1]) as db:\n"
              "    db.execute(\"UPDATE jobs SET spec = json_set(spec, '$.event_log', ?) WHERE id = ?\","
              " (sys.argv[2], int(sys.argv[3])))\n")
    changed = run_as_user(SERVICE_USER, [system_install.python, "-c", change,  # as the controller's user: its files
                                         str(hosts.ctl.state_dir / "controller" / "drover.db"), str(tampered), held],
                          cwd="/")
    assert changed.returncode == 0, changed.stderr
    hosts.restart_controller()  # it catches up: sends the held job's events again, to the changed path

    def refusal() -> list[dict[str, object]]:
        events = json.loads(run("drover", "events", "--json", held))
        return [e for e in events if e["kind"] == "event_log_failed"]

    (failed,) = wait_until(refusal, describe="the node's refusal kept with the job", timeout=30)
    # The controller sends what its store holds: no longer what the credential signed.
    assert failed["detail"] == {"path": str(tampered), "error": "what the controller sent as the job's signed fields "
                                "is not what its owner signed (written as " + alice + " on node node1)"}
    assert not tampered.exists()
    assert "refused to append to its event log" in (node.state_dir / "execd.log").read_text()
    run("drover", "cancel", held)

    # From the controller's host, where no node runs: refused at once, with the reason.
    os.chmod(hosts.ctl.state_dir, 0o711)
    refused = run("drover", "submit", "--event-log", str(home / "never.jsonl"), "--", "true", on="ctl", check=False)
    assert "no node of this host is connected" in refused, refused

