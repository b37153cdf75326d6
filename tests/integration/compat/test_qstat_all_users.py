"""qstat -u, against a real cluster: `-u '*'` lists every user's jobs, so the current user's
too; `-u` with another user's name lists none of them, as Grid Engine's qstat lists only that
user's jobs (and nothing, with status 0, for a user who has none)."""

from __future__ import annotations

import os
import pwd

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

JOB = "#!/bin/sh\nsleep 60\n"


def job_ids(table: str) -> list[str]:
    """The job-ID column of qstat's table (after its two header lines)."""
    lines = table.splitlines()
    assert not lines or lines[0].split()[:2] == ["job-ID", "prior"], table
    return [line.split()[0] for line in lines[2:]]


def test_all_users_lists_the_current_users_jobs_and_another_user_lists_none(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "job.sh").write_text(JOB)
    me = pwd.getpwuid(os.getuid()).pw_name
    # One that runs (the cluster has 2 CPUs), one that waits behind it, one held.
    ids = [run(cluster, bin_dir, "qsub", "-terse", "-cwd", *options, "job.sh").stdout.strip()
           for options in (["-pe", "smp", "2"], [], ["-h"])]
    assert all(job.isdigit() for job in ids), ids
    wait_until(lambda: cluster.drover_json("show", ids[0])["state"] == "running", describe="the first job to run")
    for argv in (["-u", "*"], ["-u", me], ["-u", f"nobody,{me}"], []):
        listed = run(cluster, bin_dir, "qstat", *argv)
        assert listed.returncode == 0 and listed.stderr == "", (argv, listed.stderr)
        assert sorted(job_ids(listed.stdout)) == sorted(ids), argv
        owners = {line.split()[3] for line in listed.stdout.splitlines()[2:]}
        assert owners == {me[:12]}, argv
    for other in ("someoneelse", "nobody"):
        assert other != me
        listed = run(cluster, bin_dir, "qstat", "-u", other)
        assert (listed.returncode, listed.stdout, listed.stderr) == (0, "", ""), other
        xml = run(cluster, bin_dir, "qstat", "-u", other, "-xml")
        assert xml.returncode == 0 and "<job_list" not in xml.stdout and "</job_info>" in xml.stdout, other
    everyone = run(cluster, bin_dir, "qstat", "-u", "*", "-xml").stdout
    assert all(f"<JB_job_number>{job}</JB_job_number>" in everyone for job in ids)
    cluster.drover("cancel", *ids)
