"""With no personal cluster running, a user's commands talk to the machine's shared cluster: the
first says so on stderr, the next ones do not, and after the user's own cluster stops (`drover
down`) the next one says so again; `drover status` always names the cluster that answered, and
DROVER_SOCKET picks one and keeps the notice away. As a real unprivileged user, whose fall-back
is their own; the shared cluster is seen at /var/lib/drover, where commands look for it, through
a bind mount in a mount namespace of each command's own."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import run_as_user

SHARED = "/var/lib/drover"
NOTICE = f"drover: no personal cluster is running; using the shared cluster at {SHARED}/api.sock"


@pytest.fixture
def as_user(system_cluster: SystemCluster, users: tuple[str, str]) -> Iterator[Callable[..., subprocess.CompletedProcess[str]]]:
    """`as_user(*argv, env=None)`: the installed command run as the first user, with no
    DROVER_SOCKET, where /var/lib/drover is the shared cluster's state directory."""
    if not os.path.isdir(SHARED) or shutil.which("unshare") is None:
        pytest.skip(f"a bind mount over {SHARED} needs that directory and unshare(1)")
    user = users[0]
    uid = int(subprocess.run(["id", "-u", user], capture_output=True, text=True, check=True).stdout)
    mounted = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               f'mount --bind "$0" {SHARED} && exec "$@"', str(system_cluster.state_dir)]

    def run(*argv: str, env: dict[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
        return run_as_user(user, argv, env={"PATH": system_cluster.user_path, "DROVER_SOCKET": None, **(env or {})},
                           prefix=mounted, timeout=90)

    try:
        yield run
    finally:
        run("drover", "down")
        shutil.rmtree(f"/tmp/drover-{uid}", ignore_errors=True)  # the user's pointer directory


def test_the_fall_back_to_the_shared_cluster_is_said_once_and_again_after_down(
        as_user: Callable[..., subprocess.CompletedProcess[str]], system_cluster: SystemCluster) -> None:
    first = as_user("drover", "status")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(NOTICE) == 1, first.stderr
    assert first.stdout.splitlines() == ["no jobs", f"cluster: the machine's shared cluster ({SHARED}/api.sock)"]
    again = as_user("drover", "status")
    assert again.returncode == 0 and again.stderr == "", again.stderr  # once, not on every command
    assert again.stdout.splitlines()[-1] == f"cluster: the machine's shared cluster ({SHARED}/api.sock)"

    started = as_user("drover", "up")
    assert started.returncode == 0, started.stderr
    own = as_user("drover", "status")
    assert own.returncode == 0 and NOTICE not in own.stderr, own.stderr
    assert own.stdout.splitlines()[-1].startswith("cluster: your personal cluster ("), own.stdout
    assert as_user("drover", "down").returncode == 0

    after_down = as_user("drover", "status")  # the surprise this is for: "no jobs" from another cluster
    assert after_down.returncode == 0
    assert after_down.stderr.count(NOTICE) == 1, after_down.stderr
    assert after_down.stdout.splitlines()[-1] == f"cluster: the machine's shared cluster ({SHARED}/api.sock)"


def test_drover_socket_picks_the_cluster_and_keeps_the_notice_away(
        as_user: Callable[..., subprocess.CompletedProcess[str]], system_cluster: SystemCluster) -> None:
    named = as_user("drover", "status", env={"DROVER_SOCKET": system_cluster.socket})
    assert named.returncode == 0 and named.stderr == "", named.stderr
    assert named.stdout.splitlines()[-1] == f"cluster: {system_cluster.socket} (named by DROVER_SOCKET)"
    listed = as_user("drover", "status", "--json", env={"DROVER_SOCKET": system_cluster.socket})
    assert listed.stdout.strip() == "[]"  # --json stays the list scripts read
    # The notice was never given: the first fall-back still says it.
    assert NOTICE in as_user("drover", "status").stderr


def test_the_notice_is_each_users_own(as_user: Callable[..., subprocess.CompletedProcess[str]],
                                      system_cluster: SystemCluster, users: tuple[str, str]) -> None:
    assert NOTICE in as_user("drover", "status").stderr
    other = run_as_user(users[1], ["drover", "status"],
                        env={"PATH": system_cluster.user_path, "DROVER_SOCKET": None},
                        prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                f'mount --bind "$0" {SHARED} && exec "$@"', str(system_cluster.state_dir)])
    try:
        assert NOTICE in other.stderr, other.stderr  # the first user's marker is not the second's
    finally:
        uid = int(subprocess.run(["id", "-u", users[1]], capture_output=True, text=True, check=True).stdout)
        shutil.rmtree(Path(f"/tmp/drover-{uid}"), ignore_errors=True)
