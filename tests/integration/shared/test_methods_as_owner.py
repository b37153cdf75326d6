"""Grid Engine's suspend_method and terminate_method commands on a shared cluster run as root:
the command runs as the job's owner, as GE's start_async_command does (it switches to the
job_owner before it starts the method), never as root; and the shepherd's verify_method checks
the command as the owner, so one root could run but the owner cannot fails the attempt."""

from __future__ import annotations

import os
import pwd
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

RECORD = """#!/bin/sh
{ echo "user=$(id -un)"; echo "arg=$1"; echo "mark=$METHOD_MARK"; } > method.part
mv method.part method.out
"""


@pytest.fixture
def scripts() -> Iterator[tuple[Path, Path, Path]]:
    """A method everyone may run, one only root may, and one in a directory only root may enter."""
    tag = uuid.uuid4().hex[:8]
    public, private = Path(f"/var/tmp/drover-method-{tag}.sh"), Path(f"/var/tmp/drover-method-root-{tag}.sh")
    hidden_dir = Path(f"/var/tmp/drover-method-dir-{tag}")
    hidden_dir.mkdir(mode=0o700)
    hidden = hidden_dir / "method.sh"
    for path, mode in ((public, 0o755), (private, 0o700), (hidden, 0o755)):
        path.write_text(RECORD)
        os.chmod(path, mode)
    yield public, private, hidden
    for path in (public, private, hidden):
        path.unlink(missing_ok=True)
    hidden_dir.rmdir()


@pytest.fixture
def work(users: tuple[str, str]) -> Path:
    entry = pwd.getpwnam(users[0])
    where = Path(entry.pw_dir) / "methods"
    where.mkdir(mode=0o700, exist_ok=True)
    os.chown(where, entry.pw_uid, entry.pw_gid)
    return where


def test_gridengine_queue_conf_a_method_command_runs_as_the_job_owner_not_root(
        system_cluster_factory: Any, users: tuple[str, str], scripts: tuple[Path, Path, Path], work: Path) -> None:
    public, private, hidden = scripts
    cluster: SystemCluster = system_cluster_factory(
        config_toml=f'[queues.m]\nsuspend_method = "{public} $job_owner"\n'
                    f'[queues.locked]\nterminate_method = "{private}"\n'
                    f'[queues.hidden]\nresume_method = "{hidden}"\n')
    alice = users[0]
    job = cluster.run_as(alice, "drover", "submit", "--parsable", "--queue", "m", "--", "sleep", "60", cwd=work,
                         env={"METHOD_MARK": "alices"})
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.split()[0]
    wait_until(lambda: cluster.job(int(job_id))["state"] == "running", describe="the job running")
    cluster.as_root("suspend", job_id)
    out = work / "method.out"
    wait_until(out.exists, describe="the suspend method's record")
    assert out.read_text() == f"user={alice}\narg={alice}\nmark=alices\n"
    assert out.stat().st_uid == pwd.getpwnam(alice).pw_uid
    cluster.as_root("cancel", job_id)
    cluster.wait_ended(int(job_id))

    # verify_method, as the owner: root could run these, the owner may not.
    marker = work / "ran"
    for queue, failure in (("locked", f"terminate_method: {private}: not executable"),
                           ("hidden", f"resume_method: {hidden}: permission denied")):
        refused = cluster.submit_as(alice, "--queue", queue, "--", "touch", str(marker), cwd=work)
        ended = cluster.wait_ended(refused)
        assert ended["state"] == "failed"
        assert ended["tasks"][0]["attempts"][0]["failure"] == failure
        assert not marker.exists()
