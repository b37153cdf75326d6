"""scontrol on a real cluster: the records toil parses, the settings snakemake reads, the host
list psij reads inside a job, and refusals in Slurm's words."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def records(text: str) -> list[dict[str, str]]:
    """Toil's reading: blank-line separated records of Key=Value words."""
    out = []
    for block in text.strip().split("\n\n"):
        out.append(dict(word.split("=", 1) for word in block.split() if "=" in word))
    return out


def test_show_job_node_partition_and_config(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    failed = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "boom", "--wrap", "exit 4").stdout.strip()
    array = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "--array=1-3", "--wrap", "true").stdout.strip()
    cluster.drover("wait", failed, check=False)
    (job,) = records(run(cluster, bin_dir, "scontrol", "show", "job", failed).stdout)
    assert (job["JobId"], job["JobName"], job["JobState"], job["ExitCode"]) == (failed, "boom", "FAILED", "4:0")
    both = records(run(cluster, bin_dir, "scontrol", "show", "job").stdout)
    assert {(r["JobId"], r.get("ArrayTaskId")) for r in both} == {(failed, None), (array, "1-3")}
    one_line = run(cluster, bin_dir, "scontrol", "-o", "show", "job", failed).stdout
    assert one_line.count("\n") == 1 and one_line.startswith(f"JobId={failed} JobName=boom UserId=")
    node = cluster.drover_json("nodes")[0]["name"]
    (shown,) = records(run(cluster, bin_dir, "scontrol", "show", "node", node).stdout)
    assert (shown["NodeName"], shown["State"], shown["Partitions"]) == (node, "IDLE", "default")
    (partition,) = records(run(cluster, bin_dir, "scontrol", "show", "partition").stdout)
    assert (partition["PartitionName"], partition["Nodes"], partition["Default"]) == ("default", node, "YES")
    config = run(cluster, bin_dir, "scontrol", "show", "config").stdout
    assert "\nMinJobAge               = 300 sec\n" in config
    cluster.drover("cancel", array)


def test_hostnames_hold_release_and_refusals(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    out = run(cluster, bin_dir, "scontrol", "show", "hostnames", env={"SLURM_JOB_NODELIST": "n[01-03],gpu7"})
    assert out.stdout.split() == ["n01", "n02", "n03", "gpu7"]
    assert run(cluster, bin_dir, "scontrol", "show", "hostlist", "n1,n2,n3").stdout == "n[1-3]\n"
    cpus = cluster.drover_json("nodes")[0]["cpus"]
    blocker = run(cluster, bin_dir, "sbatch", "--parsable", "-c", str(cpus), "--wrap", "sleep 30").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", blocker)["state"] == "running", describe="running")
    job = run(cluster, bin_dir, "sbatch", "--parsable", "--array=1-2", "--wrap", "true").stdout.strip()
    assert run(cluster, bin_dir, "scontrol", "hold", job).returncode == 0
    assert cluster.drover_json("show", job)["state"] == "held"
    assert run(cluster, bin_dir, "scontrol", "release", f"{job}_1", f"{job}_2").returncode == 0
    assert cluster.drover_json("show", job)["state"] == "pending"
    started = run(cluster, bin_dir, "scontrol", "hold", blocker)
    assert (started.returncode, started.stderr) == (1, f"Job is no longer pending execution for job {blocker}\n")
    # requeuehold is two steps on Drover, a requeue and then a hold, which lands before the job
    # starts again only while it cannot start: the node is drained, so the requeued job waits
    # (when it may start at once, the hold comes too late, and is refused in Slurm's words)
    node = cluster.drover_json("nodes")[0]["name"]
    cluster.drover("node", "drain", node, "--reason", "requeuehold")
    try:
        assert run(cluster, bin_dir, "scontrol", "requeuehold", blocker).returncode == 0
        held = wait_until(lambda: (shown := cluster.drover_json("show", blocker))["state"] == "held" and shown,
                          describe="the requeued job held")
        assert len(held["tasks"][0]["attempts"]) == 1, held["tasks"][0]["attempts"]
        cluster.drover("cancel", job, blocker)  # while the node runs nothing of theirs
    finally:
        cluster.drover("node", "resume", node)
    missing = run(cluster, bin_dir, "scontrol", "show", "job", "777777")
    assert (missing.returncode, missing.stderr) == (1, "slurm_load_jobs error: Invalid job id specified\n")
    refused = run(cluster, bin_dir, "scontrol", "hold", "777777")
    assert (refused.returncode, refused.stderr) == (1, "Invalid job id specified for job 777777\n")
    assert run(cluster, bin_dir, "scontrol", "show", "node", "nosuchnode").stderr == "Node nosuchnode not found\n"
    unknown = run(cluster, bin_dir, "scontrol", "frobnicate")
    assert (unknown.returncode, unknown.stderr) == (1, "invalid keyword: frobnicate\n")
