"""The workflow clients, unchanged, as an ordinary user of a shared cluster (`drover up --system`,
started by root from the installed command): the user installs the front ends into a directory
of their own with the installed `drover compat install` (the default flavour, and `--flavor
pbs`), then runs, from a login's environment, dask-jobqueue (SGE, Slurm, PBS, LSF and HTCondor
clusters scaling to two workers), parsl (a Slurm, Grid Engine, PBS Pro, LSF and Condor block),
PSI/J (its Slurm, PBS and LSF executors: a workflow with a failing step, and a cancel), HTCondor's
JobEventLog over a log of the user's job, and submitit on Slurm. Every job is the user's (`drover
show --json` as the user says so); another user's scancel, qdel or bkill of them is refused in
the real command's words, and condor_rm refused too, leaving them as they were.

The tools run from copies every user can read (tests/helpers/user_tools.py), with the drivers the
personal-cluster tests use, unchanged."""

from __future__ import annotations

import json
import pwd
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.user_tools import SharedTools, start_as
from tests.helpers.wait import wait_until
from tests.helpers.workflow_tools import ToolEnv, ToolRun, ToolUnavailable

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Login:
    """An ordinary user with front ends of their own on a shared cluster, and another user."""

    name: str
    other: str
    home: Path
    shared: SystemCluster
    front_ends: Path      # `drover compat install ~/bin`: Slurm, Grid Engine, LSF, HTCondor
    pbs_front_ends: Path  # `drover compat install --flavor pbs ~/bin-pbs`

    def run(self, *argv: str) -> Any:
        return self.shared.run_as(self.name, *argv, env={"PATH": f"{self.front_ends}:{self.shared.user_path}"})

    def as_other(self, *argv: str, pbs: bool = False) -> Any:
        """`argv` run by the other user, through front ends they installed for themselves."""
        bin_dir = Path(pwd.getpwnam(self.other).pw_dir) / ("bin-pbs" if pbs else "bin")
        if not bin_dir.exists():
            done = self.shared.run_as(self.other, "drover", "compat", "install", *(["--flavor", "pbs"] if pbs else []),
                                      str(bin_dir))
            assert done.returncode == 0, done.stderr
        return self.shared.run_as(self.other, *argv, env={"PATH": f"{bin_dir}:{self.shared.user_path}"})

    def start(self, tools: SharedTools, env: ToolEnv, script: str, *args: str, pbs: bool = False) -> ToolRun:
        log = self.shared.root / f"{env.name}-{time.monotonic_ns()}.log"  # root's, outside the user's reach
        return start_as(self.name, env, tools.driver(env, script, *args), self.shared,
                        self.pbs_front_ends if pbs else self.front_ends, self.home, log,
                        # HTCondor's event-log followers give up on a stopped cluster within seconds
                        extra={"DROVER_HTCONDOR_FOLLOW_GRACE_S": "3"})

    def summary(self, tools: SharedTools, env: ToolEnv, script: str, *args: str, pbs: bool = False,
                timeout: float = 200) -> dict[str, Any]:
        status, out = self.start(tools, env, script, *args, pbs=pbs).finish(timeout=timeout)
        assert status == 0, out + self.diagnosis()
        line = next((line for line in out.splitlines() if line.startswith("SUMMARY ")), None)
        assert line is not None, out
        found: dict[str, Any] = json.loads(line[8:])
        return found

    def diagnosis(self) -> str:
        """What the cluster made of the user's jobs, and the ends of their output files."""
        from drover.client import Client

        with Client(self.shared.socket, timeout_s=10) as root:
            jobs = [(job.id, job.name, job.state, job.exit_status, job.pending_reason) for job in root.jobs(include_ended=True)]
        files = [path for path in self.home.rglob("*") if path.is_file() and path.suffix in (".out", ".err", ".log",
                                                                                            ".stdout", ".stderr")]
        tails = "".join(f"\n--- {path}\n{_ends(path.read_text(errors='replace'))}" for path in files[:20])
        return f"\njobs: {jobs}{tails}\n{self.shared.logs()[-3000:]}"

    def owns(self, job_id: str) -> dict[str, Any]:
        """The job as its owner sees it with `drover show --json` (a PBS/HTCondor id's number):
        it must be theirs."""
        number = re.match(r"\d+", job_id)
        assert number is not None, job_id
        shown = self.run("drover", "show", "--json", number.group())
        assert shown.returncode == 0, shown.stderr
        record: dict[str, Any] = json.loads(shown.stdout)
        record = record[0] if isinstance(record, list) else record
        assert record["owner"] == self.name, record
        return record


def _ends(text: str, size: int = 1200) -> str:
    """A traceback's cause is at its start, the last words at its end: both."""
    return text if len(text) <= 2 * size else f"{text[:size]}\n[...]\n{text[-size:]}"


@pytest.fixture(scope="session")
def tools() -> Iterator[SharedTools]:
    """The tools' copies every user can run: the test run's, made once for all its workers."""
    made = SharedTools()
    yield made
    made.remove()


def usable(tools: SharedTools, cached: ToolEnv) -> ToolEnv:
    try:
        return tools.usable(cached)
    except ToolUnavailable as why:
        pytest.skip(f"{cached.name} cannot be run by another user here: {why}")


@pytest.fixture
def login(system_cluster: SystemCluster, users: tuple[str, str]) -> Login:
    """The first test user, with the front ends installed by their own `drover compat install`."""
    name, other = users
    home = Path(pwd.getpwnam(name).pw_dir)
    for args in ([str(home / "bin")], ["--flavor", "pbs", str(home / "bin-pbs")]):
        done = system_cluster.run_as(name, "drover", "compat", "install", *args)
        assert done.returncode == 0, done.stderr
    return Login(name, other, home, system_cluster, home / "bin", home / "bin-pbs")


def ended(login: Login, job_id: str, state: str) -> None:
    number = int(job_id.split(".")[0])
    wait_until(lambda: login.shared.job(number)["state"] == state, describe=f"job {job_id} to be {state}")


@pytest.mark.parametrize("kind", ["sge", "slurm", "pbs", "lsf", "htcondor"])
def test_dask_jobqueue_scales_to_two_workers_of_the_user(
        login: Login, tools: SharedTools, dask_env: ToolEnv, kind: str) -> None:
    env = usable(tools, dask_env)
    summary = login.summary(tools, env, "dask_workflow.py", kind, str(login.home / "dask-logs"), pbs=kind == "pbs")
    assert summary["total"] == sum(i * i for i in range(5))
    assert summary["failure"] == "task 7 fails on purpose"
    assert len(summary["jobs"]) == 2
    for job_id in summary["jobs"]:
        record = login.owns(job_id)
        # 1 GiB; LSF's -M is dask-jobqueue's decimal KB, read as KiB: 1049 MiB (docs/compat.md)
        assert (record["cpus"], record["memory_mib"]) == (1, 1049 if kind == "lsf" else 1024)
        ended(login, job_id, "cancelled")  # the tool's qdel/scancel/bkill/condor_rm on leaving


@pytest.mark.parametrize("kind", ["slurm", "gridengine", "pbspro", "lsf", "condor"])
def test_a_parsl_block_of_the_user_runs_the_apps_and_is_read_back(
        login: Login, tools: SharedTools, parsl_env: ToolEnv, kind: str) -> None:
    env = usable(tools, parsl_env)
    summary = login.summary(tools, env, "parsl_workflow.py", kind, str(login.home / "runinfo"), pbs=kind == "pbspro")
    assert summary["total"] == 1 + 2 + 3 + 4
    assert summary["failure"] == "BashExitFailure: bash_app fails failed with unix exit code 3"
    assert summary["block_states"] == ["RUNNING"]  # through sacct, qstat, bjobs or condor_q, as the user
    (block,) = summary["blocks"]
    assert login.owns(block)["cpus"] == 2
    ended(login, block, "cancelled")


@pytest.mark.parametrize("kind", ["slurm", "pbs", "lsf"])
def test_psij_runs_the_users_steps_and_reads_the_failed_ones_exit_code(
        login: Login, tools: SharedTools, psij_env: ToolEnv, kind: str) -> None:
    env = usable(tools, psij_env)
    work = login.home / "psij"
    summary = login.summary(tools, env, "psij_workflow.py", str(work), "workflow", kind, pbs=kind == "pbs")
    assert [(step["state"], step["exit_code"]) for step in summary.values()] == [
        ("COMPLETED", 0), ("COMPLETED", 0), ("FAILED", 3)]
    for step in summary.values():
        login.owns(step["id"])
    produced = summary["produce"]["id"]
    assert (work / "consumed.txt").read_text() == f"{produced}\n{produced}\n"


# What each real command says when a user cancels another's job, and how it ends.
REFUSALS = {
    "slurm": (["scancel"], 1, r"scancel: error: Kill job error on job id {id}: Access/permission denied"),
    "pbs": (["qdel"], 159, r"qdel: Unauthorized Request +{id}"),
    "lsf": (["bkill"], 255, r"Job <{id}>: User permission denied"),
}


@pytest.mark.parametrize("kind", ["slurm", "pbs", "lsf"])
def test_another_user_cannot_cancel_the_users_psij_jobs_and_the_user_can(
        login: Login, tools: SharedTools, psij_env: ToolEnv, kind: str) -> None:
    env = usable(tools, psij_env)
    run = login.start(tools, env, "psij_workflow.py", str(login.home / "psij"), "interrupt", kind, pbs=kind == "pbs")
    try:
        ids = run.wait_for_line("SUBMITTED ").split()
        assert len(ids) == 2
        for job_id in ids:
            login.owns(job_id)
        before = login.shared.job(int(ids[0].split(".")[0]))
        command, status, words = REFUSALS[kind]
        refused = login.as_other(*command, ids[0], pbs=kind == "pbs")
        assert refused.returncode == status, (refused.stdout, refused.stderr)
        assert re.search(words.format(id=re.escape(ids[0])), refused.stderr), refused.stderr
        after = login.shared.job(int(ids[0].split(".")[0]))
        assert after["state"] == before["state"] and after["state"] in ("pending", "running"), after
        code, out = run.interrupt()
    finally:
        run.stop()
    assert code == 130, out  # the user's Ctrl-C: PSI/J cancels both, as the user
    states = json.loads(next(line for line in out.splitlines() if line.startswith("CANCELLED "))[10:])
    # PSI/J's LSF executor has no cancelled state: it reads a bkill'd job as FAILED, as on LSF.
    assert states == {job_id: "FAILED" if kind == "lsf" else "CANCELED" for job_id in ids}
    for job_id in ids:
        ended(login, job_id, "cancelled")


LIFE = """\
executable = /bin/sh
arguments = "-c 'id -un; case $(Process) in 1) exit 3;; esac'"
output = out.$(Process)
log = life.log
queue 2
"""
REMOVED = """\
executable = /bin/sleep
arguments = 300
log = life.log
queue
"""


def condor_submit(login: Login, text: str) -> int:
    (login.home / "job.sub").write_text(text)
    done = login.run("condor_submit", "job.sub")
    assert done.returncode == 0, done.stderr
    found = re.search(r"submitted to cluster (\d+)\.", done.stdout)
    assert found is not None, done.stdout
    return int(found.group(1))


def test_htcondor_job_event_log_of_the_users_jobs_and_another_users_condor_rm(
        login: Login, tools: SharedTools, htcondor_env: ToolEnv) -> None:
    env = usable(tools, htcondor_env)
    life = condor_submit(login, LIFE)
    reader = login.start(tools, env, "htcondor_event_log.py", str(login.home / "life.log"), "3", "120")
    try:
        removed = condor_submit(login, REMOVED)
        wait_until(lambda: login.shared.job(removed)["state"] == "running", describe="the sleeping job to run")
        refused = login.as_other("condor_rm", f"{removed}.0")
        assert (refused.returncode, refused.stdout) == (1, ""), (refused.stdout, refused.stderr)
        assert login.shared.job(removed)["state"] == "running"
        removal = login.run("condor_rm", f"{removed}.0")
        assert removal.stdout == f"Job {removed}.0 marked for removal\n", removal.stderr
        status, out = reader.finish(timeout=90)
    finally:
        reader.stop()
    assert status == 0 and out.rstrip().endswith("DONE"), out
    events = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("EVENT ")]
    ends = {(e["cluster"], e["proc"]): e for e in events if e["type"] in ("JOB_TERMINATED", "JOB_ABORTED")}
    assert [(ends[(life, p)]["TerminatedNormally"], ends[(life, p)]["ReturnValue"]) for p in (0, 1)] == [
        (True, 0), (True, 3)]
    assert ends[(removed, 0)]["type"] == "JOB_ABORTED"
    assert (login.home / "out.0").read_text() == f"{login.name}\n"  # the job ran as the user
    login.owns(str(life))


def test_submitit_on_slurm_as_the_user(login: Login, tools: SharedTools, submitit_env: ToolEnv) -> None:
    env = usable(tools, submitit_env)
    summary = login.summary(tools, env, "submitit_workflow.py", str(login.home / "submitit"))
    assert summary["prepared"]["values"] == [1, 2, 3]
    assert summary["squares"] == [1, 4, 9]
    assert summary["failure"] == "Job (task=0) failed during processing with trace:"
    assert summary["failed_state"] == "FAILED"
    for job_id in (summary["prepared"]["job_id"], summary["failed_id"], summary["square_ids"][0].split("_")[0]):
        login.owns(job_id)


def test_another_users_grid_engine_qdel_is_refused_and_the_users_own_qdel_deletes(login: Login) -> None:
    """The Grid Engine family's check (what dask-jobqueue's SGECluster and parsl's
    GridEngineProvider cancel with): qdel of another user's job, in the qmaster's words."""
    submitted = login.run("qsub", "-b", "y", "-N", "long", "sleep", "300")
    assert submitted.returncode == 0, submitted.stderr
    job = int(submitted.stdout.split()[2])  # Your job N ("long") has been submitted
    login.owns(str(job))
    before = login.shared.job(job)["state"]
    refused = login.as_other("qdel", str(job))
    assert (refused.returncode, refused.stdout) == (1, ""), (refused.stdout, refused.stderr)
    assert refused.stderr == f'{login.other} - you do not have the necessary privileges to delete the job "{job}"\n'
    assert login.shared.job(job)["state"] == before
    deleted = login.run("qdel", str(job))
    assert deleted.returncode == 0 and f"{login.name} has " in deleted.stdout, deleted.stderr
    ended(login, str(job), "cancelled")
