"""A script written for Slurm, submitted through sbatch, watched with squeue, ended with
scancel, accounted with sacct: the same file names and outputs as on Slurm."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

SCRIPT = """#!/bin/bash
#SBATCH --job-name=greet
#SBATCH --array=1-3
#SBATCH --time=00:05:00
#SBATCH --account=physics
#SBATCH --cpus-per-task=1
echo "task $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID named $SLURM_JOB_NAME cpus $SLURM_CPUS_PER_TASK"
"""


def test_a_slurm_array_script_runs_with_slurms_file_names_and_environment(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    script = cluster.workdir / "greet.sh"
    script.write_text(SCRIPT)
    submitted = run(cluster, bin_dir, "sbatch", str(script))
    assert submitted.returncode == 0, submitted.stderr
    assert submitted.stdout.startswith("Submitted batch job ")
    assert "--account=physics: ignored: Drover keeps no accounts" in submitted.stderr
    job = submitted.stdout.split()[-1]
    script.unlink()  # callers delete the script the moment sbatch returns
    cluster.drover("wait", job)
    for index in (1, 2, 3):
        out = (cluster.workdir / f"slurm-{job}_{index}.out").read_text()
        assert out == f"task {index} of {job} named greet cpus 1\n"
    accounted = run(cluster, bin_dir, "sacct", "-j", job, "-P", "-n", "-X", "-o", "JobID,JobName,State,ExitCode")
    assert accounted.stdout.splitlines() == [f"{job}_{i}|greet|COMPLETED|0:0" for i in (1, 2, 3)]


def test_parsable_wait_exit_status_squeue_and_scancel(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    waited = run(cluster, bin_dir, "sbatch", "--parsable", "--wait", "--wrap", "exit 3")
    job = waited.stdout.strip()
    assert job.isdigit() and waited.returncode == 3
    sleeper = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "sleeper", "--wrap", "sleep 60").stdout.strip()
    held = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "--wrap", "true").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", sleeper)["state"] == "running", describe="running")
    queue = run(cluster, bin_dir, "squeue", "-h", "-o", "%i %j %t %R").stdout.splitlines()
    assert f"{sleeper} sleeper R {cluster.drover_json('nodes')[0]['name']}" in queue
    assert f"{held} wrap PD (JobHeldUser)" in queue  # sbatch names a --wrap job "wrap"
    header = run(cluster, bin_dir, "squeue").stdout.splitlines()[0].split()
    assert header == ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"]
    assert run(cluster, bin_dir, "scancel", sleeper, held).returncode == 0
    cluster.drover("wait", sleeper, check=False)
    states = run(cluster, bin_dir, "sacct", "-j", f"{sleeper},{job}", "-P", "-n", "-o", "JobID,State,ExitCode").stdout
    assert f"{job}|FAILED|3:0" in states and f"{sleeper}|CANCELLED by 0" in states
    assert run(cluster, bin_dir, "scancel", "-Q", job).returncode == 0  # ended already: quiet and fine
    assert run(cluster, bin_dir, "scancel", job).returncode == 1


def test_bad_scripts_and_directives_are_refused(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    script = cluster.workdir / "bad.sh"
    script.write_text("#!/bin/bash\n#SBATCH --time=1:00\n#SBATCH walltime\ntrue\n")
    refused = run(cluster, bin_dir, "sbatch", str(script))
    assert refused.returncode == 255  # as sbatch: an option refused while reading options
    assert "sbatch: error: Invalid directive found in batch script: walltime (line 3)" in refused.stderr
    no_shebang = run(cluster, bin_dir, "sbatch", stdin="true\n")
    assert no_shebang.returncode == 1 and "line must start with #! followed by the path" in no_shebang.stderr
    assert cluster.drover_json("status", "--all") == []


def test_scontrol_and_sinfo(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    held = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "-J", "later", "--wrap", "true").stdout.strip()
    shown = run(cluster, bin_dir, "scontrol", "show", "job", held).stdout
    assert f"JobId={held} JobName=later" in shown and "JobState=PENDING" in shown
    assert run(cluster, bin_dir, "scontrol", "show", "hostnames", "n[1-2]").stdout.split() == ["n1", "n2"]
    assert run(cluster, bin_dir, "scontrol", "release", held).returncode == 0
    cluster.drover("wait", held)
    assert run(cluster, bin_dir, "scontrol", "requeue", held).returncode == 1  # ended: nothing to requeue
    flag = cluster.workdir / "second-run"
    looping = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap",
                  f"if [ -e {flag} ]; then exit 0; fi; touch {flag}; sleep 60").stdout.strip()
    wait_until(flag.exists, describe="the first run")
    assert run(cluster, bin_dir, "scontrol", "requeue", looping).returncode == 0
    cluster.drover("wait", looping)
    assert len(cluster.drover_json("show", looping)["tasks"][0]["attempts"]) == 2
    waiting = run(cluster, bin_dir, "sbatch", "--parsable", "-H", "--wrap", "true").stdout.strip()
    assert run(cluster, bin_dir, "scontrol", "update", f"JobId={waiting}", "Priority=7").returncode == 0
    assert cluster.drover_json("show", waiting)["priority"] == 7
    cluster.drover("cancel", waiting)
    info = run(cluster, bin_dir, "sinfo").stdout.splitlines()
    assert info[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE", "NODELIST"]
    assert info[1].split()[-1] == cluster.drover_json("nodes")[0]["name"]


def test_dependencies_through_sbatch_and_qsub(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    order = cluster.workdir / "order"
    first = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap", f"sleep 0.3; echo first >> {order}").stdout.strip()
    second = run(cluster, bin_dir, "sbatch", "--parsable", "-J", "step-two", f"--dependency=afterok:{first}",
                 "--wrap", f"echo second >> {order}").stdout.strip()
    # qsub -b y joins the command's words for the shell, as Grid Engine does; -hold_jid by name.
    third = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-hold_jid", "step-two", "-b", "y",
                f"echo third >> {order}").stdout.strip()
    cluster.drover("wait", first, second, third)
    assert order.read_text() == "first\nsecond\nthird\n"


def test_afternotok_waits_for_a_failure_and_shows_as_slurm_shows_it(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    order, gate = cluster.workdir / "order", cluster.workdir / "go"
    # The first job runs until the test has seen the second wait on it, however slow the machine.
    first = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap",
                f"until [ -e {gate} ]; do sleep 0.05; done; echo first >> {order}; exit 3").stdout.strip()
    second = run(cluster, bin_dir, "sbatch", "--parsable", "-d", f"afternotok:{first}",
                 "--wrap", f"echo second >> {order}").stdout.strip()
    squeue = run(cluster, bin_dir, "squeue", "-h", "-j", second, "-o", "%i %r %E").stdout.split()
    assert squeue == [second, "Dependency", f"afternotok:{first}(unfulfilled)"]
    assert f"Dependency=afternotok:{first}(unfulfilled)" in run(cluster, bin_dir, "scontrol", "show", "job",
                                                                  second).stdout
    gate.touch()
    cluster.drover("wait", second)
    assert order.read_text() == "first\nsecond\n"


def test_qsub_hold_jid_by_name_waits_for_the_named_job(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    order, gate = cluster.workdir / "order", cluster.workdir / "go"
    first = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-N", "stage_one", "-b", "y",
                f"until [ -e {gate} ]; do sleep 0.05; done; echo first >> {order}; exit 1").stdout.strip()
    second = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-hold_jid", "stage_*", "-b", "y",
                 f"echo second >> {order}").stdout.strip()
    detail = run(cluster, bin_dir, "qstat", "-j", second).stdout
    (line,) = [line for line in detail.splitlines() if line.startswith("jid_predecessor_list (req):")]
    assert line.split(":", 1)[1].strip() == first
    gate.touch()
    cluster.drover("wait", second)  # Grid Engine's hold ends however the predecessor ended
    assert order.read_text() == "first\nsecond\n"
