"""`drover signal JOB SEGV` (or ABRT, BUS, ILL, SYS, IO) on a running job: the node refuses to
deliver it, whether or not the controller let it through; the job and its shepherd go on, and
the job's own signals still reach it."""

from __future__ import annotations

import psutil
from tests.helpers.attempts import shepherd_pid
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def test_signals_that_are_not_the_jobs_never_reach_the_shepherd_or_the_job(cluster: LocalCluster) -> None:
    got = cluster.workdir / "got-usr1"
    job = cluster.submit("--", "bash", "-c", f"trap 'touch {got}' USR1; while :; do sleep 0.05; done")
    job_pid = cluster.spool / f"{job}.0.1" / "job_pid"
    wait_until(lambda: job_pid.exists() and psutil.Process(int(job_pid.read_text())).children(), describe="the loop")
    shepherd = psutil.Process(shepherd_pid(cluster, f"{job}.0.1"))
    for name in ("SEGV", "ABRT", "BUS", "ILL", "SYS", "IO"):
        answer = cluster.drover("signal", str(job), name, check=False)
        if answer.returncode == 0:  # the controller let it through (it may refuse it first)
            wait_until(lambda name=name: f"refused to deliver 'SIG{name}'" in (cluster.state_dir / "execd.log").read_text(),
                       describe=f"the execd to refuse SIG{name}")
    assert shepherd.is_running() and shepherd.status() != psutil.STATUS_ZOMBIE
    assert cluster.drover_json("show", str(job))["state"] == "running"
    cluster.drover("signal", str(job), "USR1")
    wait_until(got.exists, describe="SIGUSR1 to reach the job")
    cluster.drover("cancel", str(job))
    assert cluster.drover("wait", str(job), check=False).returncode != 0
    assert cluster.drover_json("show", str(job))["state"] == "cancelled"
