"""sge_pe(5) on a shared machine: "An optional prefix "user@" specifies the user under which this
procedure is to be started". A PE's start procedure without a prefix runs as the job's owner,
with the job's environment; a stop procedure prefixed root@ runs as root, with the site's clean
environment; and a job's name put into root's command line by $job_name stays one word, never
a command of root's."""

from __future__ import annotations

import os
import pwd
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.helpers.system_cluster import SystemCluster

PROCEDURE = '#!/bin/sh\necho "$1 $(id -un) mark=${MARK:-none} name=$2"\n'


def test_a_pe_procedure_runs_as_the_owner_and_a_root_at_one_as_root(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    """1. PE mpi: start_proc_args as the owner, stop_proc_args root@, both given $job_name.
    2. A user submits a job of mpi whose name is a shell command, with MARK=job in its
    environment. 3. The start ran as the user and saw MARK; the stop ran as root without it;
    both got the name as one word, and root never ran it."""
    tag = uuid.uuid4().hex[:8]
    procedure, owned = Path(f"/var/tmp/drover-pe-{tag}.sh"), Path(f"/var/tmp/drover-pe-owned-{tag}")
    procedure.write_text(PROCEDURE)
    procedure.chmod(0o755)
    try:
        cluster = system_cluster_factory(config_toml=(
            f'[parallel_environments.mpi]\nslots = 2\nstart_proc_args = "{procedure} start $job_name"\n'
            f'stop_proc_args = "root@{procedure} stop $job_name"\n'))
        alice = users[0]
        name = f"x; touch {owned}"
        job = cluster.submit_as(alice, "--pe", "mpi", "1", "--env", "MARK=job", "-J", name, "--output", "pe.out",
                                "--", "true")
        info = cluster.wait_ended(job)
        assert info["state"] == "completed", info
        out = Path(pwd.getpwnam(alice).pw_dir) / "pe.out"
        assert out.read_text().splitlines() == [f"start {alice} mark=job name={name}",
                                                f"stop root mark=none name={name}"]
        assert os.stat(out).st_uid == pwd.getpwnam(alice).pw_uid
        assert not owned.exists()
    finally:
        procedure.unlink(missing_ok=True)
        owned.unlink(missing_ok=True)
