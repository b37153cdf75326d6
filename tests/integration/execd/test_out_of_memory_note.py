"""A job the kernel's out-of-memory killer ends at its cgroup memory limit (--mem) says so: a line
in its error file, written as its owner, the state OUT_OF_MEMORY, and `drover show` and `drover
why` say "out of memory" with the limit. Under each cgroup backend this host can limit memory
with; the others skip, saying why."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.attempt_config import CLUSTER
from tests.helpers.attempts import backend_unusable
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.system_cluster import SystemCluster


def memory_unlimited(backend: str) -> str | None:
    """None where `backend` enforces a memory limit here, else why not."""
    why_not = backend_unusable(backend)
    if why_not:
        return why_not
    from drover.shepherd.containment import choose

    os.environ["DROVER_CONTAINMENT"] = backend
    try:
        made = choose("probe.0.1", 50, cluster=CLUSTER)  # its cgroups where the run clears them
    finally:
        del os.environ["DROVER_CONTAINMENT"]
    limited = made.memory_limit_mib > 0
    made.remove()
    return None if limited else f"{backend} has no memory controller here: --mem is not a cgroup limit"


@pytest.fixture(params=("cgroup-v2", "cgroup-v1"))
def backend_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    why_not = memory_unlimited(request.param)
    if why_not:
        pytest.skip(why_not)

    def start(local: LocalCluster) -> None:
        local.start_controller()
        local.start_execd(DROVER_CONTAINMENT=request.param)

    yield from serve(request, LocalCluster(), start)


def test_an_out_of_memory_kill_is_said_in_the_error_file_and_by_show(backend_cluster: LocalCluster) -> None:
    cluster = backend_cluster
    # Every page touched, so the cgroup's limit acts, and the shell goes on after its child is
    # killed: the attempt still ends out of memory.
    take = "python3 -c 'import time; block = b\"x\" * (200 << 20); time.sleep(60)'; echo after"
    job = cluster.submit("--mem", "50M", "--error", "job.err", "--", "sh", "-c", take)
    cluster.drover("wait", str(job), check=False, timeout=90)
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "out_of_memory", shown
    assert shown["tasks"][0]["attempts"][0]["out_of_memory"] is True
    error_file = (cluster.workdir / "job.err").read_text()
    expected = (f"drover: job {job} (attempt 1): 1 process killed by the out-of-memory killer: it used more "
                "than its 50 MiB memory limit")
    assert expected in error_file.splitlines(), error_file
    text = cluster.drover("show", str(job)).stdout
    assert "out of memory: it used more than its 50 MiB memory limit (--mem 50M)" in text, text
    why = cluster.drover("why", str(job)).stdout
    assert "out of memory: it used more than its 50 MiB memory limit" in why, why


def test_a_joined_job_gets_the_line_in_its_output_file(backend_cluster: LocalCluster) -> None:
    cluster = backend_cluster
    take = "echo before; python3 -c 'block = b\"x\" * (200 << 20)'"
    job = cluster.submit("--mem", "50M", "--output", "joined.out", "--", "sh", "-c", take)
    cluster.drover("wait", str(job), check=False, timeout=90)
    assert cluster.drover_json("show", str(job))["state"] == "out_of_memory"
    lines = (cluster.workdir / "joined.out").read_text().splitlines()
    assert lines[0] == "before"
    assert lines[-1].startswith(f"drover: job {job} (attempt 1): 1 process killed by the out-of-memory killer"), lines


def test_a_users_job_gets_the_line_in_its_own_file_on_the_shared_cluster(system_cluster: SystemCluster,
                                                                         users: tuple[str, str]) -> None:
    """On a shared cluster (a root node), a real user's job: the line lands in the error file in
    the user's own home, which stays the user's."""
    user = users[0]
    home = Path(pwd.getpwnam(user).pw_dir)
    take = "python3 -c 'block = b\"x\" * (200 << 20)'"
    submitted = system_cluster.run_as(user, "drover", "submit", "--parsable", "--mem", "50M", "--error", "job.err",
                                      "--", "sh", "-c", take, cwd=home)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    system_cluster.run_as(user, "drover", "wait", job, timeout=90)
    shown = json.loads(system_cluster.run_as(user, "drover", "show", "--json", job).stdout)
    if shown["tasks"][0]["attempts"][0]["usage"]["containment"] == "subreaper":
        pytest.skip("no memory cgroup is writable here: the node's own limit acts (test_reservation_against_use.py)")
    assert shown["state"] == "out_of_memory", shown
    error_file = home / "job.err"
    assert error_file.stat().st_uid == pwd.getpwnam(user).pw_uid
    assert (f"drover: job {job} (attempt 1): 1 process killed by the out-of-memory killer: it used more than its "
            "50 MiB memory limit") in error_file.read_text().splitlines()
