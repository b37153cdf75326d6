"""Limits against one user starving everyone, on a shared cluster started the way docs/shared-machine.md says and
used by two real users through the installed `drover`: each limit reached is refused with a
message naming the limit and its key in drover.toml, nothing of the request is queued, the
controller never reloads, and the other user's jobs are unaffected."""

from __future__ import annotations

import json
import os
import pwd
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.system_cluster import SystemCluster

SMALL_LIMITS = """[controller]
max_request_bytes = 65536
max_jobs_per_request = 3
max_pending_jobs_per_user = 4
max_pending_tasks_per_user = 20
max_array_size = 10
max_name_bytes = 16
max_path_bytes = 64
max_env_vars = 20
max_env_bytes = 4096
max_script_bytes = 1024
max_stage_in_bytes = 2048
"""


@pytest.fixture
def limited(system_cluster_factory: Callable[..., SystemCluster]) -> SystemCluster:
    return system_cluster_factory(config_toml=SMALL_LIMITS)


def _workdir(user: str) -> Path:
    entry = pwd.getpwnam(user)
    work = Path(entry.pw_dir) / "work"
    work.mkdir(mode=0o700, exist_ok=True)
    os.chown(work, entry.pw_uid, entry.pw_gid)
    return work


def _owned(user: str, path: Path, text: str) -> Path:
    path.write_text(text)
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def _jobs_of(cluster: SystemCluster, user: str) -> list[dict[str, object]]:
    return json.loads(cluster.run_as(user, "drover", "status", "--all", "--json").stdout)  # type: ignore[no-any-return]


def _refused(cluster: SystemCluster, user: str, *args: str, key: str, cwd: Path) -> None:
    before = len(_jobs_of(cluster, user))
    result = cluster.run_as(user, "drover", *args, cwd=cwd)
    assert result.returncode != 0, (args, result.stdout)
    assert key in result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
    assert len(_jobs_of(cluster, user)) == before, args  # nothing of the request was queued


def test_each_limit_is_refused_with_its_key_and_others_are_unaffected(limited: SystemCluster,
                                                                       users: tuple[str, str]) -> None:
    greedy, other = users
    mine, theirs = _workdir(greedy), _workdir(other)
    others_job = limited.submit_as(other, "--hold", "--", "echo", "unaffected", cwd=theirs)

    _refused(limited, greedy, "submit", "--each-line", str(_owned(greedy, mine / "lines", "true\n" * 4)),
             key="max_jobs_per_request", cwd=mine)
    _refused(limited, greedy, "submit", "--array", "1-11", "--", "true", key="max_array_size", cwd=mine)
    _refused(limited, greedy, "submit", "-J", "a-name-of-17-byte", "--", "true", key="max_name_bytes", cwd=mine)
    _refused(limited, greedy, "submit", "-o", "o" * 65, "--", "true", key="max_path_bytes", cwd=mine)
    _refused(limited, greedy, "submit", "--env", "BIG=" + "x" * 5000, "--", "true", key="max_env_bytes", cwd=mine)
    _refused(limited, greedy, "submit", *[arg for n in range(20) for arg in ("--env", f"V{n}=1")], "--", "true",
             key="max_env_vars", cwd=mine)
    _refused(limited, greedy, "submit", str(_owned(greedy, mine / "big.sh", "# padding\n" * 120)),
             key="max_script_bytes", cwd=mine)
    _refused(limited, greedy, "submit", "--stage-in", str(_owned(greedy, mine / "input", "x" * 3000)), "--", "true",
             key="max_stage_in_bytes", cwd=mine)
    _refused(limited, greedy, "submit", "--stage-in", str(_owned(greedy, mine / "huge", "x" * 70_000)), "--", "true",
             key="max_request_bytes", cwd=mine)

    # Pending tasks: two arrays of 10 fill the allowance; one more task is refused.
    arrays = [limited.submit_as(greedy, "--hold", "--array", "1-10", "--", "true", cwd=mine) for _ in range(2)]
    _refused(limited, greedy, "submit", "--hold", "--", "true", key="max_pending_tasks_per_user", cwd=mine)
    assert limited.run_as(greedy, "drover", "cancel", *map(str, arrays), cwd=mine).returncode == 0
    # Pending jobs: four fill the allowance; a fifth is refused.
    for _ in range(4):
        limited.submit_as(greedy, "--hold", "--", "true", cwd=mine)
    _refused(limited, greedy, "submit", "--hold", "--", "true", key="max_pending_jobs_per_user", cwd=mine)

    # The other user still submits, and the job they had runs.
    assert limited.run_as(other, "drover", "release", str(others_job), cwd=theirs).returncode == 0
    assert limited.wait_ended(others_job)["state"] == "completed"
    assert (theirs / f"drover-{others_job}.out").read_text() == "unaffected\n"
    assert "reloading the working set" not in (limited.state_dir / "controller.log").read_text()


def test_the_bytes_of_one_users_unfinished_jobs_are_limited(system_cluster_factory: Callable[..., SystemCluster],
                                                            users: tuple[str, str]) -> None:
    """What the store keeps of one user's unfinished jobs (their scripts, environments and staged
    files) is bounded in bytes, not only in number: over max_job_bytes_per_user a submission is
    refused with the limit's key and nothing of it is queued; the other user has room of their
    own, and what ended makes room again."""
    cluster = system_cluster_factory(config_toml="[controller]\nmax_job_bytes_per_user = 2500\n")
    greedy, other = users
    mine, theirs = _workdir(greedy), _workdir(other)
    script = str(_owned(greedy, mine / "kilobyte.sh", "#!/bin/sh\necho one kilobyte\n" + "#" * 970 + "\n"))
    held = [cluster.submit_as(greedy, "--hold", "--export", "NONE", script, cwd=mine) for _ in range(2)]
    _refused(cluster, greedy, "submit", "--hold", "--export", "NONE", script, key="max_job_bytes_per_user", cwd=mine)
    result = cluster.run_as(greedy, "drover", "submit", "--export", "NONE", script, cwd=mine)
    assert (f"of {greedy}'s unfinished jobs (2997 bytes with this request; 1998 bytes before it) is over this "
            "cluster's limit of 2500 bytes") in result.stderr, result.stderr
    others = _owned(other, theirs / "kilobyte.sh", Path(script).read_text())
    assert cluster.submit_as(other, "--hold", "--export", "NONE", str(others), cwd=theirs)
    assert cluster.run_as(greedy, "drover", "cancel", str(held[0]), cwd=mine).returncode == 0
    assert cluster.submit_as(greedy, "--hold", "--export", "NONE", script, cwd=mine)
    assert "reloading the working set" not in (cluster.state_dir / "controller.log").read_text()


def test_priority_above_zero_and_mail_to_anyone_are_refused(system_cluster: SystemCluster,
                                                            users: tuple[str, str]) -> None:
    user, other = users
    mine = _workdir(user)
    result = system_cluster.run_as(user, "drover", "submit", "-p", "5", "--", "true", cwd=mine)
    assert result.returncode != 0 and "priority above 0" in result.stderr, result.stderr
    job = system_cluster.submit_as(user, "--hold", "-p", "-5", "--", "true", cwd=mine)
    alter = system_cluster.run_as(user, "drover", "alter", "--priority", "1023", str(job), cwd=mine)
    assert alter.returncode != 0 and "priority above 0" in alter.stdout + alter.stderr
    system_cluster.as_root("alter", "--priority", "1023", str(job))  # root manages all
    assert system_cluster.job(job)["priority"] == 1023
    for mail_user in ("a@example.org,b@example.org", "a@example.org b@example.org", "Name <a@example.org>",
                      "nosuchuser-drover"):
        result = system_cluster.run_as(user, "drover", "submit", "--mail-user", mail_user, "--", "true", cwd=mine)
        assert result.returncode != 0 and "--mail-user takes one address" in result.stderr, (mail_user, result.stderr)
    for mail_user in ("someone@example.org", other):
        assert system_cluster.submit_as(user, "--hold", "--mail-user", mail_user, "--", "true", cwd=mine)


def test_bad_numbers_and_signals_never_reload_the_controller(system_cluster: SystemCluster,
                                                             users: tuple[str, str]) -> None:
    user, other = users
    mine, theirs = _workdir(user), _workdir(other)
    others_job = system_cluster.submit_as(other, "--", "bash", "-c", "sleep 2; echo fine", cwd=theirs)
    job = system_cluster.submit_as(user, "--", "sleep", "30", cwd=mine)
    huge = "9" * 20
    for args, expected in (
        (("submit", "--array", huge, "--", "true"), "at most"),
        (("submit", "--array", f"1-5%{huge}", "--", "true"), "between 1 and"),
        (("submit", "--dependency", f"afterok:{huge}", "--", "true"), "dependency"),
        (("submit", "--time", "1" + "0" * 40, "--", "true"), "time"),
        (("cancel", huge), "not a job id"),
        (("cancel", "٣"), "not a job id"),
        (("signal", str(job), "SEGV"), "not a signal a job may be sent"),
        (("signal", str(job), "11"), "not a signal a job may be sent"),
        (("signal", str(job), "99"), "not a signal a job may be sent"),
    ):
        result = system_cluster.run_as(user, "drover", *args, cwd=mine)
        assert result.returncode != 0, args
        assert expected in result.stdout + result.stderr and "Traceback" not in result.stderr, (args, result.stderr)
    assert system_cluster.wait_ended(others_job)["state"] == "completed"
    assert system_cluster.job(job)["state"] == "running"
    assert "reloading the working set" not in (system_cluster.state_dir / "controller.log").read_text()
    system_cluster.as_root("cancel", str(job))


def test_a_body_over_the_request_limit_is_refused_before_it_is_read(cluster: LocalCluster) -> None:
    """160 MiB sent at once: the controller answers 413 from the Content-Length, without reading
    (or keeping) the body, and the client reads that answer although its send was cut short."""
    from drover.client import Client
    from drover.core.errors import DroverError

    with Client(cluster.socket) as client, pytest.raises(DroverError, match="max_request_bytes"):
        client.submit([{"script": "#" * (160 * 1024 * 1024), "workdir": str(cluster.workdir)}])
    assert cluster.drover_json("status", "--all") == []
    assert cluster.submit("--", "true")  # and it goes on serving


def test_one_users_fork_bomb_stops_at_its_process_limit_and_the_other_users_job_forks_on(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    """1. On a shared cluster whose jobs may have 64 processes each, the other user's job waits
    for a file. 2. The greedy user's job forks without end, stops at the limit, and `drover
    show` tells its owner so. 3. The other user's job, let go, forks 230 processes (30 at once:
    its own limit is 64 too) and succeeds, none of its forks refused."""
    from tests.integration.shepherd.test_containment import FORK_BOMB, pids_controller_unusable

    if pids_controller_unusable("cgroup-v1") and pids_controller_unusable("cgroup-v2"):
        pytest.skip("no writable pids controller here")
    cluster = system_cluster_factory(config_toml="[execd]\npids_max = 64\n")
    greedy, other = users
    mine, theirs = _workdir(greedy), _workdir(other)
    gate = _owned(other, theirs / "wait.sh", f"while [ ! -e {theirs}/go ]; do sleep 0.05; done\n"
                  "for i in $(seq 1 30); do sleep 0.5 & done; wait; for i in $(seq 1 200); do /bin/true; done\n")
    others_job = cluster.submit_as(other, str(gate), cwd=theirs)
    bomb = cluster.submit_as(greedy, str(_owned(greedy, mine / "bomb.sh", FORK_BOMB)), cwd=mine)
    assert cluster.run_as(greedy, "drover", "wait", str(bomb), cwd=mine, timeout=120).returncode == 0
    shown = cluster.run_as(greedy, "drover", "show", str(bomb), cwd=mine).stdout
    assert "hit its process limit of 64" in shown, shown
    assert cluster.job(others_job)["tasks"][0]["state"] == "running"
    _owned(other, theirs / "go", "")
    assert cluster.run_as(other, "drover", "wait", str(others_job), cwd=theirs, timeout=120).returncode == 0
    (attempt,) = cluster.job(others_job)["tasks"][0]["attempts"]
    assert attempt["exit_code"] == 0 and attempt["pids_refused"] == 0
