"""snakemake's cluster-generic executor (snakemake-executor-plugin-cluster-generic) driving each
front end with the submit, status and cancel commands its users give it. The executor runs
`SUBMIT_CMD "JOBSCRIPT"` through a shell and takes the first line it prints as the job's id,
runs `STATUS_CMD 'ID'` for every job it waits on (which must print `running`, `success` or
`failed`), and on Ctrl-C runs `CANCEL_CMD ID...` (one program, no shell, 2 s at most):

- Grid Engine: `qsub -terse -cwd -V -pe smp N -l h_vmem=MBM -l h_rt=0:MIN:0 -j y -o logs/`;
  sge-status.sh (`qstat -j ID`, then `qacct -j ID`'s failed and exit_status); `qdel`.
- PBS Pro: `qsub -V -l select=1:ncpus=N:mem=MBmb -l walltime=0:MIN:0 -j oe -o logs/`; pbs-status.py
  (`qstat -x -f -F json ID`: job_state, Exit_status); `qdel`.
- LSF: lsf-submit.sh (`bsub -n N -M MBMB -R "rusage[mem=MBMB]" -W MIN -o logs/%J.out SCRIPT`,
  the id out of `Job <ID> is submitted…`); lsf-status.sh (`bjobs -noheader -o stat ID`); `bkill`.
- HTCondor: condor-submit.sh (a submit description beside the job script, `condor_submit -terse`,
  the cluster id before the dot); condor-status.sh (`condor_q ID -af JobStatus ExitCode`, then
  `condor_history`); `condor_rm`.
- Slurm: `sbatch --parsable -c N --mem MB -t MIN -o logs/%j.out`; slurm-status.sh (`sacct -j ID -X
  -n -P -o State`); `scancel`.

The scripts are in drivers/snakemake_generic/, as a user keeps them beside a profile."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.snakemake_rounds import HeldStatus
from tests.helpers.wait import wait_until
from tests.helpers.workflow_tools import DRIVERS, ToolEnv

pytestmark = pytest.mark.timeout(240)

SCRIPTS = DRIVERS / "snakemake_generic"
SUBMITTED = r"Submitted job (\d+) with external jobid '([^']*)'\."


@dataclass(frozen=True)
class Flavour:
    front_ends: str  # the fixture that installs them
    job_id_variable: str  # where a job finds its id
    submit: str
    status: str
    cancel: str
    # (cpus, MiB, time limit in s) Drover records for greet (1 thread, 500 MB), shout (2, 600),
    # broken (1, 400)
    recorded: dict[str, tuple[int, int, int | None]]


AS_ASKED: dict[str, tuple[int, int, int | None]] = {"greet": (1, 500, 300), "shout": (2, 600, 300), "broken": (1, 400, 300)}
FLAVOURS = {
    "gridengine": Flavour(
        "front_ends", "JOB_ID",
        "qsub -terse -cwd -V -pe smp {threads} -l h_vmem={resources.mem_mb}M "
        "-l h_rt=0:{resources.runtime}:0 -j y -o logs/",
        str(SCRIPTS / "sge-status.sh"), "qdel",
        # h_vmem is per slot in Grid Engine: shout's 2 slots hold 2 × 600 MB
        {**AS_ASKED, "shout": (2, 1200, 300)}),
    "pbs": Flavour(
        "pbs_front_ends", "PBS_JOBID",
        "qsub -V -l select=1:ncpus={threads}:mem={resources.mem_mb}mb "
        "-l walltime=0:{resources.runtime}:0 -j oe -o logs/",
        str(SCRIPTS / "pbs-status.py"), "qdel", AS_ASKED),
    "lsf": Flavour(
        "front_ends", "LSB_JOBID",
        f"{SCRIPTS / 'lsf-submit.sh'} -n {{threads}} -M {{resources.mem_mb}}MB "
        "-R 'rusage[mem={resources.mem_mb}MB]' -W {resources.runtime} -o logs/%J.out",
        str(SCRIPTS / "lsf-status.sh"), "bkill", AS_ASKED),
    "htcondor": Flavour(
        "htcondor_front_ends", "CLUSTER_ID",
        f"{SCRIPTS / 'condor-submit.sh'} {{threads}} {{resources.mem_mb}}",
        str(SCRIPTS / "condor-status.sh"), "condor_rm",
        {rule: (cpus, memory, None) for rule, (cpus, memory, _) in AS_ASKED.items()}),
    "slurm": Flavour(
        "front_ends", "SLURM_JOB_ID",
        "sbatch --parsable -c {threads} --mem {resources.mem_mb} -t {resources.runtime} -o logs/%j.out",
        str(SCRIPTS / "slurm-status.sh"), "scancel", AS_ASKED),
}


def snakemake(env: ToolEnv, flavour: Flavour, *targets: str, every: int = 1) -> list[str]:
    # Status checks every `every` s instead of 10, so the test stays short.
    return [str(env.bin / "snakemake"), "--executor", "cluster-generic",
            "--cluster-generic-submit-cmd", flavour.submit,
            "--cluster-generic-status-cmd", flavour.status,
            "--cluster-generic-cancel-cmd", flavour.cancel,
            "--jobs", "3", "--keep-going", "--latency-wait", "5", "--seconds-between-status-checks", str(every),
            "--nocolor", *targets, "--config", f"jobid={flavour.job_id_variable}"]  # --config takes all after it


def project(cluster: LocalCluster) -> Path:
    directory = cluster.workdir / "project"
    (directory / "logs").mkdir(parents=True)
    shutil.copy(SCRIPTS / "Snakefile", directory / "Snakefile")
    return directory


def submitted(out: str) -> dict[str, str]:
    """rule → the external job id snakemake printed for it (`rule R:` … `jobid: N` …
    `Submitted job N with external jobid 'ID'.`)."""
    rules = dict((job, rule) for rule, job in re.findall(r"^rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)$", out, re.M))
    return {rules[job]: external for job, external in re.findall(SUBMITTED, out)}


def drover_id(external: str) -> int:
    """PBS's `123.server`, the others' `123`: Drover's job 123."""
    match = re.match(r"\d+", external)
    assert match is not None, external
    return int(match.group())


@pytest.mark.parametrize("name", sorted(FLAVOURS))
def test_a_cluster_generic_workflow_runs_its_rules_as_jobs_and_reports_the_failed_rule(
        name: str, request: pytest.FixtureRequest, cluster: LocalCluster, snakemake_env: ToolEnv) -> None:
    flavour = FLAVOURS[name]
    front_ends: Path = request.getfixturevalue(flavour.front_ends)
    directory = project(cluster)
    run = snakemake_env.start(snakemake(snakemake_env, flavour), cluster, front_ends, cwd=directory)
    status, out = run.finish(timeout=150)
    assert status == 1, out  # with --keep-going: what could run ran, and the failure is reported
    jobs = submitted(out)
    assert set(jobs) == {"greet", "shout", "broken"}, out
    assert (directory / "shout.txt").read_text() == f"HELLO FROM {jobs['greet'].upper()}\n"
    assert not (directory / "broken.txt").exists()
    # each job's output went where the submit command said: the failed rule's errors are there
    assert any("this rule fails on purpose" in log.read_text() for log in (directory / "logs").iterdir())
    # the status command said `failed`: snakemake names the rule and the job's id
    assert re.search(rf"Error in rule broken:\n(?:    .*\n)*?    external_jobid: {re.escape(jobs['broken'])}$",
                     out, re.M), out
    client = cluster.client()
    for rule, recorded in flavour.recorded.items():
        job = client.job(drover_id(jobs[rule]))
        assert (job.cpus, job.memory_mib, job.time_limit_s) == recorded, rule
    assert client.job(drover_id(jobs["broken"])).state == "failed"
    assert client.job(drover_id(jobs["shout"])).state == "completed"


def holding_each_query(cluster: LocalCluster, flavour: Flavour) -> tuple[Flavour, HeldStatus]:
    """The flavour with its status command held at the end of each query until the test ends
    the round."""
    held = HeldStatus(cluster.workdir / "status-held.sh", flavour.status, cluster.workdir)
    return replace(flavour, status=str(held.command)), held


EVERY_S = 5


@pytest.mark.parametrize("name", sorted(FLAVOURS))
def test_interrupting_snakemake_cancels_the_job_through_the_cancel_command(
        name: str, request: pytest.FixtureRequest, cluster: LocalCluster, snakemake_env: ToolEnv,
        nothing_left_running: Callable[[], None]) -> None:
    flavour = FLAVOURS[name]
    front_ends: Path = request.getfixturevalue(flavour.front_ends)
    directory = project(cluster)
    flavour, rounds = holding_each_query(cluster, flavour)
    run = snakemake_env.start(snakemake(snakemake_env, flavour, "long.txt", every=EVERY_S), cluster, front_ends,
                              cwd=directory)
    try:
        job_id = drover_id(run.wait_for(SUBMITTED).group(2))
        # The executor takes its jobs out of the list it cancels on an interrupt while it asks
        # their status, and puts those still running back after: Ctrl-C lands between two
        # rounds of status queries, once the first one ended and the executor's thread sleeps
        # until the next. (Interrupted during one, the status command dies of the signal too,
        # and the executor fails with "cannot access local variable 'ret'" before it cancels
        # anything.) The first round ends when the test says, and the next one is EVERY_S away.
        rounds.end_round(run.process.pid)
        status, out = run.interrupt()
    finally:
        run.stop()
    assert status not in (None, 0), out  # snakemake stops, reporting the interruption
    assert "calls to --cluster-cancel failed" not in out, out
    wait_until(lambda: cluster.client().job(job_id).state == "cancelled", describe=f"job {job_id} cancelled:\n{out}")
    assert not (directory / "long.txt").exists()
    nothing_left_running()
