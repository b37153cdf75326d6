"""A promised job on a real cluster ([scheduler] promises = true, one CPU) is shown waiting by
every command a user looks with, `drover status` and `drover show`, squeue and scontrol (PD,
Reason Promised), Grid Engine's and PBS's qstat (qw, Q), bjobs (PEND) and condor_q (Idle), until
its node starts it: then it runs in all of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

# Said here, not left to the default: this is about promises.
PROMISING = "[scheduler]\npromises = true\n"


@pytest.fixture
def one_cpu(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=1, config_toml=PROMISING))


def gated(cluster: LocalCluster, gate: Path) -> int:
    return cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.02; done")


def afters(cluster: LocalCluster, job: int) -> list[str | None]:
    """The attempt each attempt of the job's task follows, as `drover show --json` says it."""
    return [attempt.get("after") for attempt in cluster.drover_json("show", str(job))["tasks"][0]["attempts"]]


def views(cluster: LocalCluster, sge: Path, pbs: Path, job: int) -> dict[str, str]:
    """The job's state as each command shows it."""
    status = {row["id"]: row["state"] for row in cluster.drover_json("status")}
    shown = cluster.drover("show", str(job)).stdout
    state_line = next(line.split(None, 1)[1] for line in shown.splitlines() if line.strip().startswith("state "))
    qstat = next(line.split() for line in run(cluster, sge, "qstat").stdout.splitlines()
                 if line.split() and line.split()[0] == str(job))
    pbs_full = run(cluster, pbs, "qstat", "-f", "-F", "json", str(job)).stdout
    (pbs_job,) = json.loads(pbs_full)["Jobs"].values()
    return {
        "status": status[job], "show": state_line,
        "squeue": run(cluster, sge, "squeue", "-h", "-o", "%t %r", "-j", str(job)).stdout.strip(),
        "qstat": qstat[4], "pbs": pbs_job["job_state"],
        "bjobs": run(cluster, sge, "bjobs", "-o", "stat", "-noheader", str(job)).stdout.strip(),
        "condor_q": run(cluster, sge, "condor_q", str(job), "-af", "JobStatus").stdout.strip(),
    }


def test_a_promised_job_shows_waiting_everywhere_then_running_once_it_starts(one_cpu: LocalCluster) -> None:
    cluster = one_cpu
    sge, pbs = install(cluster), install(cluster, "pbs")
    first_gate, second_gate = cluster.workdir / "first-gate", cluster.workdir / "second-gate"
    first = gated(cluster, first_gate)
    second = gated(cluster, second_gate)
    wait_until(lambda: afters(cluster, second) == [f"{first}.0.1"], describe="the second job promised behind the first")
    wait_until(lambda: cluster.drover_json("show", str(first))["state"] == "running", describe="the first running")

    assert views(cluster, sge, pbs, second) == {
        "status": "pending", "show": "PENDING", "squeue": "PD Promised", "qstat": "qw", "pbs": "Q",
        "bjobs": "PEND", "condor_q": "1"}
    shown = cluster.drover("show", str(second)).stdout
    assert "waiting     promised: starts on " in shown and f"the moment attempt {first}.0.1 ends there" in shown
    assert "Reason=Promised" in run(cluster, sge, "scontrol", "show", "job", str(second)).stdout
    assert second in [row["id"] for row in cluster.drover_json("status", "-s", "pending")]
    assert second not in [row["id"] for row in cluster.drover_json("status", "-s", "dispatched")]
    assert views(cluster, sge, pbs, first)["squeue"] == "R None"

    first_gate.touch()  # the first ends; its node starts the second at once
    wait_until(lambda: cluster.drover_json("show", str(second))["state"] == "running", describe="the second running")
    assert views(cluster, sge, pbs, second) == {
        "status": "running", "show": "RUNNING", "squeue": "R None", "qstat": "r", "pbs": "R",
        "bjobs": "RUN", "condor_q": "2"}
    second_gate.touch()
    assert cluster.drover("wait", str(first), str(second)).returncode == 0
    assert [len(task["attempts"]) for task in cluster.drover_json("show", str(second))["tasks"]] == [1]
