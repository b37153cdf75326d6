"""srun inside a real job (steps of N tasks, with the options workflow tools pass) and outside
one (an allocation of its own), run as real processes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster


def install(cluster: LocalCluster) -> tuple[Path, dict[str, str]]:
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir, {**cluster.env, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def batch(cluster: LocalCluster, env: dict[str, str], body: str, *options: str) -> str:
    """Run `body` as a batch script through sbatch --wait; return its output."""
    script = cluster.workdir / "steps.sh"
    script.write_text("#!/bin/bash\n" + body)
    done = subprocess.run(["sbatch", "--wait", "-o", "steps.out", *options, str(script)], capture_output=True,
                          text=True, env=env, cwd=cluster.workdir, timeout=120)
    assert done.returncode == 0, done.stderr + (cluster.workdir / "steps.out").read_text()
    return (cluster.workdir / "steps.out").read_text()


def test_a_step_starts_the_jobs_tasks_each_with_its_rank(cluster: LocalCluster) -> None:
    _, env = install(cluster)
    out = batch(cluster, env, "srun bash -c 'echo $SLURM_PROCID/$SLURM_NTASKS $SLURM_LOCALID $SLURM_STEP_ID "
                              "$SLURM_STEP_NUM_TASKS' | sort\n"
                              "srun -n1 --cpu-bind=q --cpus-per-task=1 bash -c 'echo one $SLURM_STEP_ID'\n"
                              "srun --ntasks 2 -l echo labelled | sort\n", "-n", "2")
    assert out.splitlines() == ["0/2 0 0 2", "1/2 1 0 2", "one 1", "0: labelled", "1: labelled"]


def test_submitits_step_writes_a_log_per_task(cluster: LocalCluster) -> None:
    _, env = install(cluster)
    batch(cluster, env, f"srun --unbuffered --output {cluster.workdir}/%j_%t_log.out --error "
                        f"{cluster.workdir}/%j_%t_log.err bash -c 'echo out $SLURM_PROCID; echo err >&2'\n",
          "--ntasks-per-node=2")
    logs = sorted(path.name for path in cluster.workdir.glob("*_log.*"))
    job = logs[0].split("_")[0]
    assert logs == [f"{job}_0_log.err", f"{job}_0_log.out", f"{job}_1_log.err", f"{job}_1_log.out"]
    assert (cluster.workdir / f"{job}_1_log.out").read_text() == "out 1\n"
    assert (cluster.workdir / f"{job}_0_log.err").read_text() == "err\n"


def test_exit_statuses_and_kill_on_bad_exit_are_sruns(cluster: LocalCluster) -> None:
    _, env = install(cluster)
    out = batch(cluster, env, "srun -n 2 bash -c 'exit $((SLURM_PROCID + 3))' 2>&1; echo rc=$?\n"
                              "srun -n 2 -K bash -c '[ $SLURM_PROCID = 1 ] && exit 4; sleep 60' 2>&1; echo rc=$?\n"
                              "srun -n 1 bash -c 'kill -TERM $$' 2>&1; echo rc=$?\n"
                              "srun nosuchcommand 2>&1; echo rc=$?\n", "-n", "2")
    node = cluster.drover_json("nodes")[0]["name"]
    assert out.splitlines() == [
        f"srun: error: {node}: task 0: Exited with exit code 3", f"srun: error: {node}: task 1: Exited with exit code 4",
        "rc=4",
        f"srun: error: {node}: task 1: Exited with exit code 4", f"srun: error: {node}: task 0: Killed", "rc=137",
        f"srun: error: {node}: task 0: Terminated", "rc=143",
        "slurmstepd: error: execve(): nosuchcommand: No such file or directory",
        "slurmstepd: error: execve(): nosuchcommand: No such file or directory",
        f"srun: error: {node}: tasks 0-1: Exited with exit code 2", "rc=2"]


def test_a_step_runs_given_only_the_job_id_as_snakemake_leaves_it(cluster: LocalCluster) -> None:
    _, env = install(cluster)
    out = batch(cluster, env, "for v in $(env | grep -o '^SLURM_[A-Z_]*' | grep -v '^SLURM_JOB_ID$'); do unset $v; done\n"
                              "srun -n1 --cpu-bind=q --cpus-per-task=1 sh -c 'echo $SLURM_JOB_ID $SLURM_PROCID'\n")
    assert out.split()[1] == "0" and out.split()[0].isdigit()


def test_outside_a_job_srun_makes_its_own_allocation(cluster: LocalCluster) -> None:
    bin_dir, env = install(cluster)
    done = subprocess.run([str(bin_dir / "srun"), "-n", "2", "-J", "outside", "-t", "1", "bash", "-c",
                           "echo $SLURM_PROCID $SLURM_JOB_NAME $SLURM_CPUS_ON_NODE; exit 6"],
                          capture_output=True, text=True, env=env, cwd=cluster.workdir, timeout=120)
    assert done.returncode == 6 and sorted(done.stdout.splitlines()) == ["0 outside 2", "1 outside 2"]
    assert done.stderr.count("Exited with exit code 6") == 1
    refused = subprocess.run([str(bin_dir / "srun"), "--jobid=5", "true"], capture_output=True, text=True, env=env,
                             cwd=cluster.workdir, timeout=60)
    assert refused.returncode == 1 and "cannot join a job from outside" in refused.stderr
    unknown = subprocess.run([str(bin_dir / "srun"), "--bogus", "true"], capture_output=True, text=True, env=env,
                             cwd=cluster.workdir, timeout=60)
    assert unknown.returncode == 255 and "srun: unrecognized option '--bogus'" in unknown.stderr


def test_a_step_gets_the_jobs_variables_when_its_caller_removed_them(cluster: LocalCluster) -> None:
    """Snakemake's Slurm jobstep executor removes every SLURM_* variable but SLURM_JOB_ID,
    SLURM_JOBID, SLURM_ARRAY_*, SLURM_CLUSTER_NAME, SLURM_SUBMIT_DIR and SLURM_SUBMIT_HOST, then
    runs `srun -n1 --cpu-bind=q --cpus-per-task=N sh -s` with the rule's shell (`set -u`) on its
    standard input. The step's variables come from the job, as Slurm's do."""
    _, env = install(cluster)
    kept = "SLURM_JOB_ID|SLURM_JOBID|SLURM_ARRAY_.*|SLURM_CLUSTER_NAME|SLURM_SUBMIT_DIR|SLURM_SUBMIT_HOST"
    rule = ("set -u\n"
            "echo name=$SLURM_JOB_NAME nodes=$SLURM_JOB_NUM_NODES list=$SLURM_NODELIST part=$SLURM_JOB_PARTITION\n"
            "echo user=$SLURM_JOB_USER uid=$SLURM_JOB_UID gid=$SLURM_JOB_GID cpus=$SLURM_CPUS_ON_NODE\n"
            "echo dist=$SLURM_DISTRIBUTION prio=$SLURM_PRIO_PROCESS bind=$SLURM_CPU_BIND_VERBOSE"
            "/$SLURM_CPU_BIND_TYPE/$SLURM_CPU_BIND_LIST/$SLURM_CPU_BIND\n"
            "echo ntasks=$SLURM_NTASKS step=$SLURM_STEP_ID cpt=$SLURM_CPUS_PER_TASK\n")
    (cluster.workdir / "rule.sh").write_text(rule)
    out = batch(cluster, env,
                f"unset $(env | sed -n 's/^\\(SLURM_[A-Z_]*\\)=.*/\\1/p' | grep -Ev '^({kept})$')\n"
                "env | grep -c '^SLURM_' | sed 's/^/left=/'\n"
                "srun -n1 --cpu-bind=q --cpus-per-task=1 sh -s < rule.sh 2>&1; echo rc=$?\n",
                "-J", "snakejob.rule_a", "-c", "2")
    import pwd

    me = pwd.getpwuid(os.getuid())
    node = cluster.drover_json("nodes")[0]["name"]
    lines = out.splitlines()
    assert lines[0] == "left=5", out  # SLURM_JOB_ID, SLURM_JOBID, SLURM_CLUSTER_NAME, SLURM_SUBMIT_DIR and _HOST
    prio = lines[3].split()[1]
    assert prio.removeprefix("prio=").lstrip("-").isdigit(), out  # the job's nice value: the node renices jobs
    assert lines[1:] == [
        f"name=snakejob.rule_a nodes=1 list={node} part=default",
        f"user={me.pw_name} uid={me.pw_uid} gid={os.getgid()} cpus=2",
        f"dist=block {prio} bind=quiet///quiet",
        "ntasks=1 step=0 cpt=1",
        "rc=0",
    ], out
