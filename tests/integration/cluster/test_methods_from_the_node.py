"""A controller taken over cannot make a node run a command, as root or as a user: the site's
commands (a queue's prolog, epilog, starter and stop methods, a parallel environment's
procedures, a named environment's scripts, a checkpoint environment's commands) come from the
node's own drover.toml, which root owns; the controller's order only names them.

The controller here runs as the `drover` service user with the cluster's own files, and its
drover.toml is the attacker's: each of those commands writes `id` into a directory anyone may
write to. A node joined where munged runs (it requires signed jobs) gets genuinely signed jobs
of a real user, alice: every attempt that would run one of the controller's commands fails
with the node's reason, and nothing is written. Then the node's root gives the node commands of
its own, under the same names: they run (the prolog and the PE start as root, the starter as
alice), and the controller's still do not."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.munge import Munged
from tests.helpers.munge_cluster import hosts_with_munge
from tests.helpers.netns import Hosts
from tests.helpers.system_install import SystemInstall
from tests.integration.cluster.test_users_across_hosts import as_user_on


def impostors_config(evidence: Path) -> str:
    """The drover.toml of a controller taken over: each command writes who ran it."""
    def writes(name: str) -> str:
        return f"id > {evidence}/{name}"

    return f"""
[queues.default]
prolog = "{writes('queue_prolog')}"
epilog = "{writes('queue_epilog')}"
starter_method = "{evidence}/impostor-starter"
terminate_method = "/bin/sh -c '{writes('terminate_method')}'"

[queues.plain]

[parallel_environments.evil]
slots = 8
start_proc_args = "root@{writes('pe_start_as_root')}"
stop_proc_args = "{writes('pe_stop_as_owner')}"

[environments.evil]
setup = "{evidence}/impostor-setup.sh"

[checkpoints.evil]
interface = "application-level"
ckpt_command = "/bin/sh -c '{writes('ckpt_command')}'"
clean_command = "/bin/sh -c '{writes('clean_command')}'"
"""


def nodes_own_config(evidence: Path) -> str:
    """What the node's root configures under the same names."""
    return f"""
[queues.default]
prolog = "id -u > {evidence}/node_prolog"
starter_method = "{evidence}/node-starter"
terminate_method = "SIGTERM"
epilog = "true"

[parallel_environments.evil]
slots = 8
start_proc_args = "root@id -u > {evidence}/node_pe_start"
stop_proc_args = "true"

[environments.evil]
setup = "{evidence}/node-setup.sh"
"""


@pytest.fixture
def evidence() -> Iterator[Path]:
    """A directory anyone may write to, and the scripts each side names (root's, 0755)."""
    import shutil
    import tempfile

    made = Path(tempfile.mkdtemp(prefix="drv-evidence-", dir="/tmp"))
    os.chmod(made, 0o1777)
    for name, body in {
        "impostor-starter": f"#!/bin/sh\nid > {made}/starter_method\nexec \"$@\"\n",
        "impostor-setup.sh": f"id > {made}/environment_setup\n",
        "node-starter": f"#!/bin/sh\nid -un > {made}/node_starter\nexec \"$@\"\n",
        "node-setup.sh": f"id -un > {made}/node_setup\n",
    }.items():
        (made / name).write_text(body)
        os.chmod(made / name, 0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


@pytest.fixture
def impostor(users: tuple[str, str], system_install: SystemInstall, evidence: Path) -> Iterator[tuple[Hosts, Munged]]:
    with hosts_with_munge(["node1"], python=system_install.python, service_user=True,
                          more_config=impostors_config(evidence)) as made:
        yield made


def written(evidence: Path) -> list[str]:
    """What the commands that ran left behind (the scripts themselves are not evidence)."""
    return sorted(p.name for p in evidence.iterdir() if not p.name.endswith(("-starter", ".sh")))


def test_a_controller_taken_over_cannot_make_a_node_run_its_commands(
        impostor: tuple[Hosts, Munged], users: tuple[str, str], system_install: SystemInstall,
        evidence: Path) -> None:
    hosts, _ = impostor
    alice, _ = users
    node = hosts.nodes["node1"]
    assert "require_signed_jobs = true" in (node.state_dir / "drover.toml").read_text()
    controller_pid = hosts.controller_process.pid if hosts.controller_process else 0
    assert controller_pid  # the controller runs as the service user, as `drover up --system` runs it
    run = as_user_on(hosts, system_install, "node1")
    home = Path(pwd.getpwnam(alice).pw_dir)

    def failure_of(*options: str) -> str:
        job = run(alice, "drover", "submit", "--parsable", *options, "--", "touch", str(home / "ran")).stdout.split()[0]
        run(alice, "drover", "wait", "--timeout", "60", job, check=False)
        shown = json.loads(run(alice, "drover", "show", "--json", job).stdout)
        (attempt,) = shown["tasks"][0]["attempts"]
        assert shown["state"] == "failed", shown
        return str(attempt["failure"])

    own = str(node.state_dir / "drover.toml")
    refused = failure_of()  # queue default: prolog, epilog, starter, terminate method
    assert "[queues.default] prolog" in refused and "[queues.default] starter_method" in refused
    assert own in refused and "does not" in refused
    refused = failure_of("-q", "plain", "--pe", "evil", "1")
    assert "[parallel_environments.evil] start_proc_args" in refused and "stop_proc_args" in refused
    assert "no named environment 'evil'" in failure_of("-q", "plain", "--environment", "evil")
    assert "no checkpoint environment 'evil'" in failure_of("-q", "plain", "--checkpoint", "evil")
    assert written(evidence) == [] and not (home / "ran").exists()
    assert "refused: the controller's drover.toml sets [queues.default] prolog" in \
        (node.state_dir / "execd.log").read_text()

    # The node's root configures the same names: the node's commands run, the controller's never.
    hosts.configure_node("node1", nodes_own_config(evidence))
    job = run(alice, "drover", "submit", "--parsable", "--pe", "evil", "1", "--environment", "evil", "--",
              "touch", str(home / "ran")).stdout.split()[0]
    run(alice, "drover", "wait", "--timeout", "60", job, check=False)
    shown = json.loads(run(alice, "drover", "show", "--json", job).stdout)
    assert shown["state"] == "completed", shown
    assert (home / "ran").exists()
    assert written(evidence) == ["node_pe_start", "node_prolog", "node_setup", "node_starter"]
    assert (evidence / "node_prolog").read_text().strip() == "0"  # the node's prolog, as root
    assert (evidence / "node_pe_start").read_text().strip() == "0"  # root@: as the node daemon's user
    assert (evidence / "node_starter").read_text().strip() == alice  # the node's starter, as the owner
    assert (evidence / "node_setup").read_text().strip() == alice
    assert "differs from the controller's drover.toml; this node's" in (node.state_dir / "execd.log").read_text()
