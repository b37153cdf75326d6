"""What an operator and a queue's owner may not do on a shared cluster, as real users through
the installed command: an operator (a real user named in `[controller] operators`) cannot set a
command on a queue, since it would run as the owner of each job of the queue (commands are
root's, in drover.toml); and the owner of a queue a user made cannot freeze or thaw another
user's running job in it (an operator's), though they may stop and start their queue."""

from __future__ import annotations

import os
import pwd
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import create_user, remove_user
from tests.helpers.wait import wait_until


@pytest.fixture
def operator(users: tuple[str, str]) -> Iterator[str]:
    """A third real user, the cluster's operator."""
    name = f"drvo{uuid.uuid4().hex[:6]}"
    create_user(name)
    yield name
    remove_user(name)


def state(cluster: SystemCluster, job: int) -> str:
    return str(cluster.job(job)["state"])


def test_an_operator_cannot_set_a_command_on_a_queue(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str], operator: str) -> None:
    _, bob = users
    home = Path(pwd.getpwnam(bob).pw_dir)
    secret = home / "secret"
    secret.write_text("bob's\n")
    os.chown(secret, pwd.getpwnam(bob).pw_uid, pwd.getpwnam(bob).pw_gid)
    os.chmod(secret, 0o600)
    stolen = Path(f"/tmp/{operator}-stolen")
    cluster = system_cluster_factory(config_toml=f'[controller]\noperators = ["{operator}"]\n[queues.q]\n')
    job = cluster.submit_as(bob, "-q", "q", "--", "sleep", "60")
    wait_until(lambda: state(cluster, job) == "running", describe="bob's job running")
    steal = f"/bin/sh -c 'cat {secret} > {stolen}'"
    for key in ("suspend_method", "resume_method", "terminate_method"):
        refused = cluster.run_as(operator, "drover", "queue", "set", "q", f"{key}={steal}")
        assert refused.returncode != 0, refused.stdout
        assert f"set by root in drover.toml ([queues.NAME] {key})" in refused.stderr, refused.stderr
    refused = cluster.run_as(operator, "drover", "queue", "create", "theirs", f"terminate_method={steal}")
    assert refused.returncode != 0 and "drover.toml" in refused.stderr, refused.stderr
    assert cluster.as_root("queue", "set", "q", "terminate_method=/bin/true", check=False).returncode != 0
    # A signal is the operator's to choose: it runs nothing.
    chosen = cluster.run_as(operator, "drover", "queue", "set", "q", "terminate_method=SIGINT")
    assert chosen.returncode == 0, chosen.stderr
    assert cluster.run_as(operator, "drover", "cancel", str(job)).returncode == 0
    assert cluster.wait_ended(job)["state"] == "cancelled"
    assert not stolen.exists()


def test_a_queues_owner_cannot_suspend_another_users_job_in_it(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    alice, bob = users
    cluster = system_cluster_factory(config_toml="[controller]\nuser_queues = true\n")
    made = cluster.run_as(alice, "drover", "queue", "create", "alices")
    assert made.returncode == 0, made.stderr
    job = cluster.submit_as(bob, "-q", "alices", "--", "sleep", "60")
    wait_until(lambda: state(cluster, job) == "running", describe="bob's job running in alice's queue")
    refused = cluster.run_as(alice, "drover", "queue", "suspend", "alices")
    assert refused.returncode != 0
    assert f"queue alices runs jobs of other users there ({job}): suspending them needs an operator" in refused.stderr
    assert state(cluster, job) == "running"
    for verb in ("stop", "drain", "start"):  # the queue itself is hers
        acted = cluster.run_as(alice, "drover", "queue", verb, "alices")
        assert acted.returncode == 0, (verb, acted.stderr)
    assert state(cluster, job) == "running"
    cluster.as_root("queue", "suspend", "alices")  # an operator may
    wait_until(lambda: state(cluster, job) == "suspended", describe="bob's job suspended by root")
    refused = cluster.run_as(alice, "drover", "queue", "unsuspend", "alices")
    assert refused.returncode != 0 and "resuming them needs an operator" in refused.stderr
    assert state(cluster, job) == "suspended"
    cluster.as_root("cancel", str(job))
    cluster.wait_ended(job)
