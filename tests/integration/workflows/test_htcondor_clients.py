"""The tools that speak HTCondor, unchanged, on the HTCondor front ends: HTCondor's own Python
bindings reading a Drover job event log (`htcondor.JobEventLog`, PyPI's htcondor 24.0), while it
is written, through jobs that succeed, fail, are killed by a signal, are held and released, and
are removed, and through the image size events of a job whose memory grows as it runs; dask-jobqueue's HTCondorCluster (`condor_submit FILE` with `RequestMemory =
floor(MY.DaskWorkerMemory / 1048576)`, `MY.JobId = "$(ClusterId).$(ProcId)"`, Output/Error/Log
through `$F(MY.JobId)`, `condor_rm ID`); parsl's CondorProvider (a sandbox with
`should_transfer_files = YES`, `transfer_input_files`, `leave_in_queue`, `condor_q IDS -af:jr
JobStatus`, `condor_rm IDS; condor_rm -forcex IDS`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.compat_install import run
from tests.helpers.wait import wait_until
from tests.helpers.workflow_tools import ToolEnv
from tests.integration.workflows.test_dask_jobqueue import run_workflow as run_dask
from tests.integration.workflows.test_pbs_clients import run_parsl

pytestmark = pytest.mark.timeout(240)

LIFE = """\
executable = /bin/sh
arguments = "-c 'case $(Process) in 0) echo fine;; 1) echo failing >&2; exit 3;; 2) kill -KILL $$;; esac'"
output = out.$(Process)
error = err.$(Process)
log = life.log
request_memory = 64MB
queue 3
"""
HELD = """\
executable = /bin/echo
arguments = released
output = held.out
log = life.log
hold = true
queue
"""
REMOVED = """\
executable = /bin/sleep
arguments = 300
log = life.log
queue
"""


def submit(cluster: LocalCluster, bin_dir: Path, text: str) -> int:
    (cluster.workdir / "job.sub").write_text(text)
    done = run(cluster, bin_dir, "condor_submit", "job.sub")
    assert done.returncode == 0, done.stderr
    match = re.fullmatch(r"Submitting job\(s\)\.+\n(\d+) job\(s\) submitted to cluster (\d+)\.\n", done.stdout)
    assert match is not None, done.stdout
    return int(match.group(2))


def status(cluster: LocalCluster, bin_dir: Path, job: str) -> str:
    return run(cluster, bin_dir, "condor_q", job, "-af", "JobStatus").stdout.strip()


def test_htcondor_job_event_log_reads_a_drover_log_through_a_jobs_life(
        cluster: LocalCluster, htcondor_front_ends: Path, htcondor_env: ToolEnv) -> None:
    bin_dir = htcondor_front_ends
    log = cluster.workdir / "life.log"
    life = submit(cluster, bin_dir, LIFE)
    reader = htcondor_env.start(htcondor_env.driver("htcondor_event_log.py", str(log), "5", "120"), cluster, bin_dir)
    try:
        held = submit(cluster, bin_dir, HELD)
        wait_until(lambda: status(cluster, bin_dir, f"{held}.0") == "5", describe="the held job in condor_q as 5")
        released = run(cluster, bin_dir, "condor_release", str(held))
        assert released.stdout == f"All jobs in cluster {held} have been released\n", released.stderr
        removed = submit(cluster, bin_dir, REMOVED)
        wait_until(lambda: status(cluster, bin_dir, str(removed)) == "2", describe="the sleeping job to run")
        removal = run(cluster, bin_dir, "condor_rm", f"{removed}.0")
        assert removal.stdout == f"Job {removed}.0 marked for removal\n", removal.stderr
        waited = run(cluster, bin_dir, "condor_wait", "-wait", "60", str(log))
        assert (waited.returncode, waited.stdout) == (0, "All jobs done.\n"), waited.stderr
        status_code, out = reader.finish(timeout=60)
    finally:
        reader.stop()
    assert status_code == 0 and out.rstrip().endswith("DONE"), out
    events = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("EVENT ")]

    def of(cluster_id: int, proc: int) -> list[dict[str, Any]]:
        return [e for e in events if (e["cluster"], e["proc"]) == (cluster_id, proc)]

    def types(cluster_id: int, proc: int) -> list[str]:
        return [e["type"] for e in of(cluster_id, proc)]

    ending = ["SUBMIT", "EXECUTE", "IMAGE_SIZE", "JOB_TERMINATED"]
    assert types(life, 0) == types(life, 1) == types(life, 2) == ending
    ends = [of(life, proc)[-1] for proc in range(3)]
    assert [(e["TerminatedNormally"], e.get("ReturnValue"), e.get("TerminatedBySignal")) for e in ends] == [
        (True, 0, None), (True, 3, None), (False, None, 9)]
    assert all(e["RequestMemory"] == 64 for e in ends)
    assert of(life, 0)[1]["ExecuteHost"].startswith("<")
    assert types(held, 0) == ["SUBMIT", "JOB_HELD", "JOB_RELEASED", "EXECUTE", "IMAGE_SIZE", "JOB_TERMINATED"]
    assert of(held, 0)[1]["HoldReasonCode"] == 15
    assert of(held, 0)[1]["HoldReason"] == "submitted on hold at user's request"
    assert types(removed, 0) == ["SUBMIT", "EXECUTE", "JOB_ABORTED"]
    assert of(removed, 0)[-1]["Reason"].startswith("via condor_rm (by user ")
    assert (cluster.workdir / "out.0").read_text() == "fine\n"
    assert (cluster.workdir / "err.1").read_text() == "failing\n"
    assert (cluster.workdir / "held.out").read_text() == "released\n"


@pytest.fixture
def sampled_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A personal cluster whose node samples its jobs' memory twice a second."""
    yield from serve(request, LocalCluster(config_toml="[execd]\nsample_s = 0.5\n"))


GROWS = """\
executable = /usr/bin/python3
arguments = grow.py
log = grow.log
request_memory = 512MB
queue
"""


def test_htcondor_job_event_log_reads_the_image_size_events_of_a_job_whose_memory_grows(
        sampled_cluster: LocalCluster, htcondor_env: ToolEnv) -> None:
    cluster = sampled_cluster
    cluster.env["DROVER_HTCONDOR_FOLLOW_GRACE_S"] = "3"
    cluster.env["DROVER_HTCONDOR_IMAGE_SIZE_S"] = "1"  # the follower looks at its memory every second
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    (cluster.workdir / "grow.py").write_text("import time\nheld = []\nfor _ in range(8):\n"
                                             "    held.append(b'x' * (8 << 20))\n    time.sleep(0.6)\n")
    job = submit(cluster, bin_dir, GROWS)
    status_code, out = htcondor_env.start(htcondor_env.driver("htcondor_event_log.py", str(cluster.workdir / "grow.log"),
                                                              "1", "120"), cluster, bin_dir).finish(timeout=150)
    assert status_code == 0 and out.rstrip().endswith("DONE"), out
    events = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("EVENT ")]
    assert all((e["cluster"], e["proc"]) == (job, 0) for e in events), events
    types = [e["type"] for e in events]
    assert types[:2] == ["SUBMIT", "EXECUTE"] and types[-2:] == ["IMAGE_SIZE", "JOB_TERMINATED"], types
    # While it ran, the 006 events as HTCondor's parser reads them: the image size (KiB) grown
    # each time, with the memory usage (MB) and the resident set (KiB) that go with it.
    running = events[2:-2]
    assert {e["type"] for e in running} == {"IMAGE_SIZE"} and len(running) >= 2, types
    sizes = [e["Size"] for e in running]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0] + 8 * 1024, running
    for event in running:
        assert event["MemoryUsage"] == (event["Size"] + 1023) // 1024, event
        assert 0 < event["ResidentSetSize"] <= event["Size"], event
    last = events[-2]
    assert last["Size"] >= sizes[-1] and last["MemoryUsage"] >= 8 * 8, last  # the peak, from the attempt's record


def test_dask_jobqueue_htcondorcluster_scales_to_two_workers_and_computes(
        cluster: LocalCluster, htcondor_front_ends: Path, dask_env: ToolEnv) -> None:
    logs = cluster.workdir / "logs"
    summary = run_dask(cluster, htcondor_front_ends, dask_env, "htcondor", logs)
    assert summary["total"] == sum(i * i for i in range(5))
    assert summary["failure"] == "task 7 fails on purpose"
    ids = summary["jobs"]
    assert isinstance(ids, list) and len(ids) == 2 and all(i.endswith(".0") for i in ids)
    for job_id in ids:
        number = int(job_id.split(".")[0])
        job = cluster.client().job(number)
        # RequestCpus = MY.DaskWorkerCores, RequestMemory = floor(MY.DaskWorkerMemory / 1048576)
        assert (job.cpus, job.memory_mib) == (1, 1024)
        wait_until(lambda n=number: cluster.client().job(n).state == "cancelled",  # type: ignore[misc]
                   describe="the worker job removed by the tool")
    names = sorted(p.name for p in logs.iterdir())
    assert names == sorted([f"worker-{i}.{ext}" for i in ids for ext in ("err", "out")] +
                           [f"worker-{i.split('.')[0]}.log" for i in ids])
    for job_id in ids:  # its own job event log: submitted, ran, removed
        text = (logs / f"worker-{job_id.split('.')[0]}.log").read_text()
        wait_until(lambda t=job_id: "Job was aborted." in (logs / f"worker-{t.split('.')[0]}.log").read_text(),
                   describe="the abort event")
        assert text.startswith(f"000 ({int(job_id.split('.')[0]):03d}.000.000) ")


def test_a_parsl_app_runs_in_a_condor_block_read_back_through_condor_q(
        cluster: LocalCluster, htcondor_front_ends: Path, parsl_env: ToolEnv) -> None:
    summary = run_parsl(cluster, htcondor_front_ends, parsl_env, "condor")
    assert summary["total"] == 1 + 2 + 3 + 4
    assert summary["failure"] == "BashExitFailure: bash_app fails failed with unix exit code 3"
    assert summary["block_states"] == ["RUNNING"]  # JobStatus 2, through condor_q ID -af:jr JobStatus
    (block,) = summary["blocks"]
    assert re.fullmatch(r"\d+\.0", block)
    job = cluster.client().job(int(block.split(".")[0]))
    assert (job.cpus, job.memory_mib) == (2, 1024)  # RequestCpus = 2, RequestMemory = 1024
    assert job.workdir == ""  # should_transfer_files = YES: a sandbox of its own
    assert job.state == "cancelled"


def test_interrupting_dask_and_parsl_on_htcondor_removes_their_jobs(
        cluster: LocalCluster, htcondor_front_ends: Path, dask_env: ToolEnv, parsl_env: ToolEnv,
        nothing_left_running: Callable[[], None]) -> None:
    dask = dask_env.start(dask_env.driver("dask_workflow.py", "htcondor", str(cluster.workdir / "logs"), "interrupt"),
                          cluster, htcondor_front_ends)
    try:
        workers = dask.wait_for_line("SUBMITTED ").split()
        assert len(workers) == 2
        status, out = dask.interrupt()
    finally:
        dask.stop()
    assert status is not None, out
    parsl = parsl_env.start(parsl_env.driver("parsl_workflow.py", "condor", str(cluster.workdir / "runinfo"),
                                             "interrupt"), cluster, htcondor_front_ends)
    try:
        blocks = parsl.wait_for_line("SUBMITTED ").split()
        assert len(blocks) == 1
        # SIGINT to parsl's main process only, as test_parsl.py says why.
        status, out = parsl.interrupt(whole_group=False)
    finally:
        parsl.stop()
    assert status == -2 and "KeyboardInterrupt" in out, out
    for job_id in [*workers, *blocks]:  # condor_rm ID (parsl: then condor_rm -forcex ID)
        assert cluster.client().job(int(job_id.split(".")[0])).state == "cancelled"
    nothing_left_running()
