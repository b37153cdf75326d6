"""scancel on a real cluster: ids, array tasks, filters, signals after the operand (submitit),
-Q on a job that is gone (psij), and Slurm's refusals."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def test_filters_tasks_signals_and_refusals(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    trap = cluster.workdir / "got-usr1"
    runner = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "runner", "--wrap",
                 f"trap 'touch {trap}' USR1; for i in $(seq 600); do sleep 0.1; done").stdout.strip()
    waiting = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "-J", "waiting", "--array=1-5",
                  "--wrap", "true").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", runner)["state"] == "running", describe="running")
    # submitit: the signal after the operand, with and without SIG
    assert run(cluster, bin_dir, "scancel", runner, "--signal", "SIGUSR1").returncode == 0
    wait_until(trap.exists, describe="the USR1 trap")
    # one task, a range of tasks, then every pending job named `waiting`
    assert run(cluster, bin_dir, "scancel", f"{waiting}_2", f"{waiting}_[4-5]").returncode == 0
    states = {t["index"]: t["state"] for t in cluster.drover_json("show", waiting)["tasks"]}
    assert (states[2], states[4], states[5]) == ("cancelled", "cancelled", "cancelled")
    assert run(cluster, bin_dir, "scancel", "--state=PENDING", "-n", "waiting").returncode == 0
    wait_until(lambda: cluster.drover_json("show", waiting)["state"] == "cancelled", describe="all cancelled")
    assert cluster.drover_json("show", runner)["state"] == "running"  # the filters spared it
    assert run(cluster, bin_dir, "scancel", "--me", "-t", "R").returncode == 0
    cluster.drover("wait", runner, check=False)
    # psij: -Q on a job that ended is no error; without -Q it is Slurm's message and status 1
    assert run(cluster, bin_dir, "scancel", "-Q", runner).returncode == 0
    gone = run(cluster, bin_dir, "scancel", runner)
    assert (gone.returncode, gone.stderr) == (
        1, f"scancel: error: Kill job error on job id {runner}: Job/step already completing or completed\n")
    unknown = run(cluster, bin_dir, "scancel", "888888")
    assert unknown.stderr == "scancel: error: Kill job error on job id 888888: Invalid job id specified\n"
    assert run(cluster, bin_dir, "scancel").stderr == "scancel: error: No job identification provided\n"
    assert "Unknown job signal: NOPE" in run(cluster, bin_dir, "scancel", "-s", "NOPE", runner).stderr
