"""sstat, sprio and sshare on a real cluster: what Drover has, shown in their fields."""

from __future__ import annotations

import getpass

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def test_sstat_sprio_and_sshare(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    cpus = cluster.drover_json("nodes")[0]["cpus"]
    big = run(cluster, bin_dir, "sbatch", "--parsable", "-c", str(cpus), "--wrap", "sleep 60").stdout.strip()
    queued = run(cluster, bin_dir, "sbatch", "--parsable", "--nice=-5", "--wrap", "true").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", big)["state"] == "running", describe="running")
    # sstat names no step: the header alone, as for a Slurm job with only its batch step
    assert len(run(cluster, bin_dir, "sstat", "-j", big, "-P").stdout.splitlines()) == 1
    out = run(cluster, bin_dir, "sstat", "-a", "-j", big, "-P", "-o", "JobID,Nodelist,NTasks")
    node = cluster.drover_json("nodes")[0]["name"]
    assert out.stdout.splitlines() == ["JobID|Nodelist|NTasks", f"{big}.batch|{node}|1"]
    assert "No steps running for JobId=" in run(cluster, bin_dir, "sstat", "-j", queued).stderr
    assert run(cluster, bin_dir, "sstat").stderr == "sstat: error: You didn't give me any jobs to stat.\n"
    # sprio: the pending job and its priority
    prio = run(cluster, bin_dir, "sprio", "-h", "-o", "%i %Y %u").stdout.split()
    assert prio == [queued, str(cluster.drover_json("show", queued)["priority"]), getpass.getuser()]
    # sshare: the caller under root, fair share 1
    share = run(cluster, bin_dir, "sshare", "-P", "-n", "-o", "Account,User,RawShares,FairShare").stdout
    assert share.splitlines() == ["root|||", f" root|{getpass.getuser()}|1|1.000000"]
    cluster.drover("cancel", big, queued)
