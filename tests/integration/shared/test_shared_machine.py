"""The shared machine: one cluster every local user uses, each request's user read from the
kernel; users see and change only their own jobs; root manages all."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.users import as_user

from drover.client import Client
from drover.core.errors import Forbidden


@pytest.fixture
def shared_cluster() -> Iterator[LocalCluster]:
    cluster = LocalCluster(shared=True)
    try:
        cluster.start()
        yield cluster
    finally:
        assert not cluster.stop()


def submit_as(cluster: LocalCluster, user: str, script: str, **fields: object) -> int:
    workdir = f"/tmp/{user}-work"

    def submit() -> int:
        os.makedirs(workdir, exist_ok=True)
        with Client(cluster.socket) as client:
            return client.submit([{"script": script, "workdir": workdir, **fields}])[0]

    return as_user(user, submit)


def test_each_user_sees_and_changes_only_their_own_jobs(shared_cluster: LocalCluster, users: tuple[str, str]) -> None:
    alice, bob = users
    alices = submit_as(shared_cluster, alice, "true\n", hold=True)
    bobs = submit_as(shared_cluster, bob, "true\n", hold=True)

    def bobs_view() -> tuple[list[int], list[tuple[bool, str]]]:
        with Client(shared_cluster.socket) as client:
            listed = [job.id for job in client.jobs()]
            actions = [(r.ok, r.message) for verb in ("cancel", "hold", "release")
                       for r in client._action(verb, [str(alices)])]
            return listed, actions

    listed, actions = as_user(bob, bobs_view)
    assert listed == [bobs]
    assert all(not ok and f"belongs to {alice}" in message for ok, message in actions)

    def bob_reads_alices_job() -> None:
        with Client(shared_cluster.socket) as client:
            client.job(alices)

    with pytest.raises(Forbidden, match=f"job {alices} belongs to {alice}; {bob} cannot see"):
        as_user(bob, bob_reads_alices_job)
    with Client(shared_cluster.socket) as root:  # root manages all
        assert {job.owner for job in root.jobs()} == {alice, bob}
        assert all(r.ok for r in root.cancel([str(alices), str(bobs)]))


def test_root_jobs_do_not_run_on_a_shared_cluster_unless_allowed(shared_cluster: LocalCluster) -> None:
    with Client(shared_cluster.socket) as client, pytest.raises(Forbidden, match="allow_root_jobs"):
        client.submit([{"script": "true\n", "workdir": "/tmp"}])


def test_each_users_job_runs_as_that_user(shared_cluster: LocalCluster, users: tuple[str, str]) -> None:
    import pwd

    jobs = {user: submit_as(shared_cluster, user, "id -un; echo $HOME\n", output="whoami.out") for user in users}
    with Client(shared_cluster.socket) as root:
        for user, job in jobs.items():
            info = root.wait(job, timeout_s=60)
            assert info is not None and info.state == "completed", info
            out = f"/tmp/{user}-work/whoami.out"
            assert open(out).read().split() == [user, pwd.getpwnam(user).pw_dir]
            assert os.stat(out).st_uid == pwd.getpwnam(user).pw_uid
