"""Process set-up: nice from the priority, CPU affinity (a cpuset where writable), rlimits, and
the warning signal before the time limit."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from tests.helpers.spools import exit_status, make_spool, usage

from drover.shepherd.setup import nice_for


def run(spool: Path, **env: str) -> None:
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60, env={**os.environ, **env})


@pytest.mark.parametrize(("priority", "nice"), [(0, 8), (3, 5), (8, 0), (100, 0), (-11, 19), (-500, 19)])
def test_nice_is_8_minus_the_priority_clamped(priority: int, nice: int) -> None:
    assert nice_for(priority) == nice


def test_the_job_runs_niced_on_its_cpus_with_the_nodes_rlimits(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    spool = make_spool(tmp_path, "ps -o ni= -p $$; grep Cpus_allowed_list /proc/self/status; ulimit -n; ulimit -c\n",
                       priority=3, cpu_ids=[1], rlimits={"nofile": 512, "core": 0})
    run(spool)
    nice, cpus, nofile, core = (tmp_path / "out.txt").read_text().split("\n")[:4]
    assert nice.strip() == "5"
    assert cpus.split()[-1] == str(sorted(os.sched_getaffinity(0))[1])
    assert nofile == "512" and core == "0"


def test_a_cpuset_keeps_the_job_from_widening_its_affinity(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    spool = make_spool(tmp_path, "taskset -p -c 0-1 $$ > /dev/null 2>&1; grep Cpus_allowed_list /proc/self/status\n",
                       cpu_ids=[0])
    run(spool, DROVER_CONTAINMENT="cgroup-v1")
    if exit_status(spool)["exit_code"] != 0:
        pytest.skip("cgroup v1 is not usable here")
    if usage(spool)["containment"] != "cgroup-v1":
        pytest.skip("no cgroup v1 here")
    assert (tmp_path / "out.txt").read_text().split()[-1] == str(sorted(os.sched_getaffinity(0))[0])


def test_the_warning_signal_comes_before_the_time_limit(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "trap 'echo warned; exit 0' USR1; sleep 30 & wait\n",
                       time_limit_s=3, warn_signal="SIGUSR1", warn_before_s=2, kill_grace_s=0.2)
    run(spool)
    record = exit_status(spool)
    assert (tmp_path / "out.txt").read_text() == "warned\n"
    assert record["exit_code"] == 0 and not record["timed_out"]


REPORT = "echo {label} $(ps -o ni= -p $$) $(grep Cpus_allowed_list /proc/self/status | cut -f2) $(ulimit -n)"


def _own_cpus_allowed() -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[-1]
    raise AssertionError("no Cpus_allowed_list")


def test_accelerator_step_13_nice_applies_to_precmd_job_and_postcmd_not_to_the_sites_methods(
    users: tuple[str, str]
) -> None:
    """Accelerator steps 8 and 13 (affinity, nice) come before the precmd (step 20): the job's
    own prolog, the job and its own epilog run niced, pinned and limited; the node's prolog and
    epilog, which run as root before and after them, run as the shepherd does.

    1. a job of a user's, of priority 3 (nice 5), on the node's second CPU, nofile 512, with a
       node prolog, a job prolog, a job epilog and a node epilog, each reporting its nice, CPUs
       and nofile;
    2. the job's three run at nice 5 on that CPU with 512 open files; the node's at the
       shepherd's own nice, on all its CPUs, with its own nofile. (Where a cpuset holds the
       attempt, the site's methods are outside it: test_the_sites_methods_run_outside_the_jobs_cpuset.)"""
    from tests.integration.shepherd.test_identity import spool_for

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    alice, _ = users
    pinned = str(sorted(os.sched_getaffinity(0))[1])
    root = Path(tempfile.mkdtemp(prefix="drv-spool-", dir="/tmp"))
    try:
        os.chmod(root, 0o711)
        spool = spool_for(root, alice, REPORT.format(label="job") + "\n", priority=3, cpu_ids=[1],
                          rlimits={"nofile": 512}, node_prolog=REPORT.format(label="node_prolog"),
                          prolog=REPORT.format(label="job_prolog"), epilog=REPORT.format(label="job_epilog"),
                          node_epilog=REPORT.format(label="node_epilog"))
        run(spool, DROVER_CONTAINMENT="subreaper")
        assert exit_status(spool)["exit_code"] == 0
        out = Path(f"/tmp/{alice}-work/out.txt").read_text()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines()}
    assert list(lines) == ["node_prolog", "job_prolog", "job", "job_epilog", "node_epilog"]
    for label in ("job_prolog", "job", "job_epilog"):
        assert lines[label] == ["5", pinned, "512"], label
    own = [str(os.getpriority(os.PRIO_PROCESS, 0)), _own_cpus_allowed(),
           str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])]
    for label in ("node_prolog", "node_epilog"):
        assert lines[label] == own, label


def test_accelerator_step_8_affinity_applies_to_the_precmd_even_when_it_fails(tmp_path: Path) -> None:
    """Accelerator step 8 before step 20: a precmd that fails ran pinned all the same, and the
    job did not run."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    pinned = str(sorted(os.sched_getaffinity(0))[1])
    spool = make_spool(tmp_path, "echo the job ran\n", cpu_ids=[1],
                       prolog=REPORT.format(label="job_prolog") + "; exit 3")
    run(spool)
    record = exit_status(spool)
    assert record["failure"] == "the job prolog exited with status 3; the job did not run"
    assert (tmp_path / "out.txt").read_text().split()[:3] == ["job_prolog", "8", pinned]


SITE_REPORT = ("echo {label} $(ulimit -n -H) $(ulimit -n) $(grep Cpus_allowed_list /proc/self/status | cut -f2) "
               "$(grep -c {attempt} /proc/self/cgroup)")


def _site_methods_report(tmp_path: Path, containment: str) -> dict[str, list[str]]:
    """A parallel job of the shepherd's own user (root's, on a node run by root), nofile 777, on
    the node's second CPU, whose job, PE stop, queue epilog and node epilog each report their
    hard and soft nofile, their CPUs and whether they are in the attempt's cgroup."""
    attempt = "7.0.1"
    spool = make_spool(tmp_path, SITE_REPORT.format(label="job", attempt=attempt) + "\n", attempt,
                       rlimits={"nofile": 777}, cpu_ids=[1], pe="smp", pe_slots=1,
                       node_pe_stop=SITE_REPORT.format(label="pe_stop", attempt=attempt),
                       queue_epilog=SITE_REPORT.format(label="queue_epilog", attempt=attempt),
                       node_epilog=SITE_REPORT.format(label="node_epilog", attempt=attempt))
    run(spool, DROVER_CONTAINMENT=containment)
    record = exit_status(spool)
    assert record["exit_code"] == 0, record
    lines = {line.split()[0]: line.split()[1:] for line in (tmp_path / "out.txt").read_text().splitlines()}
    assert list(lines) == ["job", "pe_stop", "queue_epilog", "node_epilog"]
    return lines


def test_a_root_jobs_hard_limits_do_not_reach_the_sites_methods_after_it(tmp_path: Path) -> None:
    """GE sets the job's limits in the job's child alone: a job run as the shepherd's own user
    (root's job on a node run by root) with nofile 777, locked hard, is followed by PE stop, the
    queue's and the node's epilogs with the node's own nofile, soft and hard (where root cannot
    raise a hard limit again, without CAP_SYS_RESOURCE, as in many containers)."""
    if os.geteuid() != 0:
        pytest.skip("the shepherd must be root")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    lines = _site_methods_report(tmp_path, "subreaper")
    assert lines["job"][:3] == ["777", "777", str(sorted(os.sched_getaffinity(0))[1])]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    for label in ("pe_stop", "queue_epilog", "node_epilog"):
        assert lines[label][:3] == [str(hard), str(soft), _own_cpus_allowed()], label


def test_the_sites_methods_run_outside_the_jobs_cpuset(tmp_path: Path) -> None:
    """Where a cpuset cgroup holds the attempt (cgroup v1), the site's methods are not in it:
    they run on the node's CPUs, in the shepherd's own cgroups, never pinned or limited by what
    one job asked for; the job is in the attempt's cgroups, on its CPU."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    try:
        lines = _site_methods_report(tmp_path, "cgroup-v1")
    except AssertionError:
        if not Path("/sys/fs/cgroup/cpuset/cgroup.procs").exists():
            pytest.skip("no cgroup v1 cpuset here")
        raise
    # Pinned by its slot's cpuset (kept between attempts: slots.py), in the attempt's own
    # freezer, memory and cpuacct cgroups.
    assert lines["job"][2:] == [str(sorted(os.sched_getaffinity(0))[1]), "3"]
    for label in ("pe_stop", "queue_epilog", "node_epilog"):
        assert lines[label][2:] == [_own_cpus_allowed(), "0"], label
