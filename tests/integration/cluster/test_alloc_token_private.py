"""The join token of an allocation is the allocation's alone: an ordinary user of the outer
cluster, whose jobs run on the same hosts, cannot read it. The outer cluster here is a shared
Drover cluster (`drover up --system`, real users) reached through its PBS and LSF commands; the
inner cluster's controller (root) asks it for an allocation, whose worker joins with the token.
The user then looks everywhere the token passed: every process's environment and command line
(the worker's /proc/PID/environ keeps the token after the worker dropped it from its own
environment), the outer cluster's view of the allocation's job (`drover show`, `qstat -f`,
`bjobs -l`), and every file of the outer spool and of the allocation's directory that holds
it (the batch script, the job's environment, its output). None of them gives it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.outer_allocations import allocating_cluster
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

pytestmark = [pytest.mark.xdist_group("outer_drover"), pytest.mark.timeout(600)]

# PBS's qsub passes only what it is told (-V: qsub's environment, DROVER_SOCKET with it, so the
# worker's qstat reaches the outer cluster); bsub passes its whole environment.
EXTRA = {"pbs": ["--", "-V"], "lsf": []}


@pytest.fixture
def outer(system_cluster_factory: Callable[..., SystemCluster]) -> SystemCluster:
    """The shared cluster; its allocations are root's jobs (the inner controller's user)."""
    return system_cluster_factory(config_toml="[controller]\nallow_root_jobs = true\n")


@pytest.fixture
def commands(outer: SystemCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The outer cluster's PBS and LSF commands, in a directory every user can run them from."""
    bindir = tmp_path_factory.mktemp("outer-bin")
    outer.as_root("compat", "install", "--flavor", "pbs", str(bindir))
    for path in (bindir, *bindir.parents):
        if str(path) in ("/", "/tmp"):
            break
        os.chmod(path, 0o755)
    return bindir


@pytest.fixture
def inner(outer: SystemCluster, commands: Path) -> Iterator[LocalCluster]:
    """A cluster of root's serving TLS on loopback, with no node of its own, whose controller
    asks the shared cluster for allocations."""
    path = f"{commands}:{outer.install.bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    with allocating_cluster(lambda: not _allocations(outer), "the allocations to end in the outer cluster",
                            controller_env={"PATH": path, "DROVER_SOCKET": outer.socket}) as local:
        yield local


def _allocations(outer: SystemCluster) -> list[int]:
    jobs = outer.as_root("status", "--json", check=False)
    if jobs.returncode != 0:
        return []
    import json

    return [job["id"] for job in json.loads(jobs.stdout) if str(job["name"]).startswith("drover-")
            and job["state"] in ("pending", "dispatched", "running", "completing")]


def _holding(token: str, roots: list[Path]) -> list[Path]:
    """Every file under `roots` whose bytes hold the token (looked at as root)."""
    found = []
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in names:
                path = Path(directory) / name
                try:
                    if path.is_file() and not path.is_symlink() and token.encode() in path.read_bytes():
                        found.append(path)
                except OSError:
                    continue
    return found


@pytest.mark.parametrize("manager", ["pbs", "lsf"])
def test_an_ordinary_user_of_the_outer_cluster_cannot_read_an_allocations_join_token(
        manager: str, outer: SystemCluster, commands: Path, inner: LocalCluster, users: tuple[str, str]) -> None:
    run_as = outer.run_as
    inner.drover("alloc", "add", manager, "--time-limit", "10m", "--max-workers", "1", "--idle-timeout", "10m",
                 *EXTRA[manager])
    job = inner.submit("-t", "5m", "--", "sleep", "300")
    try:
        wait_until(lambda: inner.drover_json("show", str(job))["state"] == "running", timeout=120, interval=0.5,
                   describe="the job to run inside an allocation")
    except AssertionError:
        print(inner.drover("alloc", "info", "1").stdout, outer.as_root("status", "--all", check=False).stdout)
        raise
    (outer_job,) = _allocations(outer)
    (script,) = (inner.state_dir / "alloc").glob("*.sh")
    token = next(line.split("=", 1)[1] for line in script.read_text().splitlines()
                 if line.startswith("export DROVER_JOIN_TOKEN="))
    assert len(token) > 40
    # Where root finds it: the script the allocator wrote, and the outer job's own records.
    holders = _holding(token, [inner.state_dir / "alloc", outer.spool(), outer.state_dir])
    assert script in holders, holders
    assert any(outer.state_dir in path.parents or outer.spool() in path.parents for path in holders), holders
    # Root reads it in the worker's environment: the look below would find it there if it could.
    every_process = "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null; done"
    assert token in subprocess.run(["sh", "-c", every_process], capture_output=True, text=True, timeout=60).stdout
    user = users[0]
    env = {"PATH": f"{commands}:{outer.user_path}"}
    looks = {
        "every process's environment and command line": run_as(
            user, "sh", "-c", every_process, env=env),
        "drover show": run_as(user, "drover", "show", str(outer_job), "--json", env=env),
        "drover status": run_as(user, "drover", "status", "--all", "--json", env=env),
        "qstat -f": run_as(user, "qstat", "-f", str(outer_job), env=env),
        "bjobs -l": run_as(user, "bjobs", "-l", str(outer_job), env=env),
        "the files that hold it": run_as(user, "sh", "-c", 'for f in "$@"; do cat "$f" 2>/dev/null; done', "sh",
                                         *map(str, holders), env=env),
    }
    # The looks ran (the user could see the processes, and the outer job's id is known to them).
    assert "sleep" in looks["every process's environment and command line"].stdout
    for what, done in looks.items():
        assert token not in done.stdout and token not in done.stderr, (what, done.stdout[-2000:])
        assert token.split(".")[-1] not in done.stdout + done.stderr, (what, done.stdout[-2000:])
