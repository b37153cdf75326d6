"""On a shared node the shepherd is root: a site's starter method (Grid Engine's queue_conf
starter_method, the Accelerator's step 3) and a named environment's setup and post scripts (its
steps 18 and 19) are part of firing the job, and run as the job's owner, never as root."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
import uuid
from pathlib import Path

from tests.helpers.spools import exit_status, make_spool
from tests.integration.shepherd.test_identity import identity_of, job_dir, tmp_path  # noqa: F401  (a fixture)


def unique_job() -> int:
    """A job id no other test's spool uses at the same time."""
    return 100000 + uuid.uuid4().int % 900000


def _shared_script(root: Path, name: str, text: str) -> str:
    """A site script any user may read and run."""
    path = root / name
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_gridengine_starter_method_and_accelerator_environments_run_as_the_owner(
        tmp_path: Path, users: tuple[str, str]) -> None:  # noqa: F811
    alice, _ = users
    work = Path(f"/tmp/{alice}-work")
    starter = _shared_script(tmp_path, "starter.sh",
                             '#!/bin/bash\necho "starter $(id -un) $*" >> "$DROVER_SUBMIT_DIR/seen"\n'
                             'exec "$SGE_STARTER_SHELL_PATH" "$@"\n')
    setup = _shared_script(tmp_path, "env.sh", 'echo "setup $(id -un)" >> "$DROVER_SUBMIT_DIR/seen"; export TOOL=on\n')
    post = _shared_script(tmp_path, "post.sh", 'echo "post $(id -un) $TOOL" >> "$DROVER_SUBMIT_DIR/seen"\n')
    # An attempt name of its own: its cgroup is drover/<attempt>, which no other test's shepherd shares.
    spool = make_spool(tmp_path, 'echo "job $(id -un) $TOOL" >> seen\n', name=f"{unique_job()}.0.1",
                       workdir=str(job_dir(alice)), stdout=str(work / "out.txt"), identity=identity_of(alice),
                       owner=alice, queue_starter_method=starter,
                       environments=[{"name": "tools", "setup": setup, "post": post}])
    os.chmod(spool, 0o711)
    os.chown(spool / "job_script", pwd.getpwnam(alice).pw_uid, pwd.getpwnam(alice).pw_gid)
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60)
    assert exit_status(spool)["exit_code"] == 0, (spool / "error").read_text() if (spool / "error").exists() else ""
    lines = (work / "seen").read_text().splitlines()
    assert lines == [f"setup {alice}", f"starter {alice} {spool}/job_script", f"job {alice} on", f"post {alice} on"]
    assert (work / "seen").stat().st_uid == pwd.getpwnam(alice).pw_uid
    os.unlink(work / "seen")
