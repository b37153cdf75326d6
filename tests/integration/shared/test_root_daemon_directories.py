"""Root's daemons make their directories without following a link a user planted: /dev/shm is
everyone's and empty after each boot, so a user can make `/dev/shm/drover-0` first, as a link to
a directory of root's that the execd would chmod (and make its spool in). The execd does not use
it (its spool goes to the state directory, and its log says why); a spool it was told to use
that a user replaced by a link is refused, and `drover up --system` fails saying so. Either way
the link's target is untouched.

The daemons of the first test run in a mount namespace of their own, with a /dev/shm of their
own, so the real one (other clusters' spools) is never touched."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import can_manage_users, user_command


@pytest.fixture
def roots_directory() -> Iterator[Path]:
    """A directory of root's, 0755 with a file in it: what a link would point root's chmod at
    (/etc, a home)."""
    target = Path(tempfile.mkdtemp(prefix="drover-target-", dir="/tmp"))
    os.chmod(target, 0o755)
    (target / "kept").write_text("untouched\n")
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture
def cluster(unstarted_system_cluster: SystemCluster) -> SystemCluster:
    return unstarted_system_cluster


def untouched(target: Path) -> bool:
    info = target.stat()
    return (stat.S_IMODE(info.st_mode) == 0o755 and info.st_uid == 0
            and sorted(p.name for p in target.iterdir()) == ["kept"])


def test_a_users_link_at_the_default_spool_is_not_followed(
        cluster: SystemCluster, users: tuple[str, str], roots_directory: Path) -> None:
    if not shutil.which("unshare"):
        pytest.skip("unshare is not installed")
    user = pwd.getpwnam(users[0])
    plant = " ".join(user_command(user.pw_name, ["ln", "-s", str(roots_directory), "/dev/shm/drover-0"])[0])
    # In a mount namespace of the daemons' own: a fresh /dev/shm, where the user was first.
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-ec",
              f"mount -t tmpfs -o mode=1777 drover-test /dev/shm; env -i PATH=/usr/bin:/bin {plant}; "
              "exec \"$@\"", "sh"]
    cluster.start(prefix=prefix)
    assert untouched(roots_directory)
    assert cluster.spool() == cluster.state_dir / "spool"
    log = (cluster.state_dir / "execd.log").read_text()
    assert "not using the default spool: /dev/shm/drover-0 is a symbolic link" in log, log
    job = cluster.submit_as(user.pw_name, "--", "true")  # and the node works
    assert cluster.wait_ended(job)["state"] == "completed"
    assert untouched(roots_directory)


def test_a_spool_a_user_replaced_by_a_link_is_refused(
        system_install: SystemInstall, users: tuple[str, str], roots_directory: Path) -> None:
    why_not = can_manage_users()
    if why_not:
        pytest.skip(why_not)
    shared = Path(tempfile.mkdtemp(prefix="drover-shared-", dir="/tmp"))
    os.chmod(shared, 0o1777)  # a directory every user may write in, as /tmp
    cluster = SystemCluster(system_install, config_toml=f'[execd]\nspool = "{shared}/spool"\n')
    try:
        planted = subprocess.run(user_command(users[0], ["ln", "-s", str(roots_directory), f"{shared}/spool"])[0],
                                 env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
        assert planted.returncode == 0, planted.stderr
        with pytest.raises(AssertionError, match="is a symbolic link") as refused:
            cluster.start()
        assert "drover up --system exited 1" in str(refused.value)
        assert untouched(roots_directory)
        assert not any(daemon.is_running() for daemon in cluster.daemons)
    finally:
        problems = cluster.stop()
        shutil.rmtree(shared, ignore_errors=True)
    assert not problems, "; ".join(problems)
