"""The shared machine: one cluster every local user uses, started by root from the install for
all users; each request's user read from the kernel; users see and change only their own jobs;
root manages all. Every command below is the installed `drover`, run as a real user."""

from __future__ import annotations

import json
import os
import pwd

from tests.helpers.system_cluster import SystemCluster


def test_each_user_sees_and_changes_only_their_own_jobs(system_cluster: SystemCluster,
                                                        users: tuple[str, str]) -> None:
    alice, bob = users
    alices = system_cluster.submit_as(alice, "--hold", "--", "true")
    bobs = system_cluster.submit_as(bob, "--hold", "--", "true")

    listed = system_cluster.run_as(bob, "drover", "status", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [job["id"] for job in json.loads(listed.stdout)] == [bobs]
    for verb in ("cancel", "hold", "release"):
        refused = system_cluster.run_as(bob, "drover", verb, str(alices))
        assert refused.returncode != 0, (verb, refused.stdout)
        assert f"belongs to {alice}" in refused.stdout + refused.stderr, (verb, refused.stdout, refused.stderr)
    shown = system_cluster.run_as(bob, "drover", "show", str(alices))
    assert shown.returncode != 0
    assert f"job {alices} belongs to {alice}; {bob} cannot see" in shown.stderr

    everyone = json.loads(system_cluster.as_root("status", "--json").stdout)  # root manages all
    assert {job["owner"] for job in everyone} == {alice, bob}
    system_cluster.as_root("cancel", str(alices), str(bobs))
    assert system_cluster.job(alices)["state"] == "cancelled"


def test_root_jobs_do_not_run_on_a_shared_cluster_unless_allowed(system_cluster: SystemCluster) -> None:
    refused = system_cluster.as_root("submit", "--", "true", check=False)
    assert refused.returncode != 0
    assert "allow_root_jobs" in refused.stderr


def test_each_users_job_runs_as_that_user(system_cluster: SystemCluster, users: tuple[str, str]) -> None:
    jobs = {user: system_cluster.submit_as(user, "--output", "whoami.out", "--", "sh", "-c", "id -un; echo $HOME")
            for user in users}
    for user, job in jobs.items():
        info = system_cluster.wait_ended(job)
        assert info["state"] == "completed", info
        home = pwd.getpwnam(user).pw_dir
        out = os.path.join(home, "whoami.out")
        assert open(out).read().split() == [user, home]
        assert os.stat(out).st_uid == pwd.getpwnam(user).pw_uid
