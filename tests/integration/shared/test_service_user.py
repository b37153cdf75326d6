"""A shared cluster's controller runs as the unprivileged service user `drover`, as slurmctld runs
as SlurmUser; only the execd is root. Started the way docs/shared-machine.md says (`drover up --system`, as root,
with the install every user runs), used by two real users through the installed `drover`: their
jobs run as themselves, an event log is written as its owner by the execd (the controller
cannot become anyone), and the controller refuses what it refused as root. A state directory of
an earlier Drover, whose controller ran as root, is given to the service user on the next
`drover up --system`."""

from __future__ import annotations

import json
import os
import pwd
import stat
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

from drover.config import SERVICE_USER


def ids_of(pid: int) -> dict[str, list[int]]:
    """The process's Uid, Gid (real, effective, saved, filesystem) and Groups, as the kernel says."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "Groups"):
            found[key] = [int(n) for n in value.split()]
    return found


def daemon_pid(cluster: SystemCluster, name: str) -> int:
    """The daemon's pid from its pid file: a shared cluster's controller writes its own in its
    directory (controller/), which the service user owns; the execd, and a root controller, in
    the state directory."""
    for pid_file in (cluster.state_dir / name / f"{name}.pid", cluster.state_dir / f"{name}.pid"):
        if pid_file.exists():
            return int(pid_file.read_text().split()[0])
    raise AssertionError(f"no pid file of the {name} in {cluster.state_dir}")


def owner_and_mode(path: Path) -> tuple[str, int]:
    found = path.lstat()
    return pwd.getpwuid(found.st_uid).pw_name, stat.S_IMODE(found.st_mode)


@pytest.fixture
def workdirs(users: tuple[str, str]) -> Iterator[dict[str, Path]]:
    """Each user's own work directory (0700) in their home."""
    made = {}
    for user in users:
        entry = pwd.getpwnam(user)
        work = Path(entry.pw_dir) / "work"
        work.mkdir(mode=0o700)
        os.chown(work, entry.pw_uid, entry.pw_gid)
        made[user] = work
    yield made


def test_the_controller_runs_as_the_service_user_and_the_execd_as_root(system_cluster: SystemCluster) -> None:
    service = pwd.getpwnam(SERVICE_USER)
    assert service.pw_uid != 0 and service.pw_shell in ("/usr/sbin/nologin", "/bin/false")
    controller = ids_of(daemon_pid(system_cluster, "controller"))
    assert controller["Uid"] == [service.pw_uid] * 4 and controller["Gid"] == [service.pw_gid] * 4
    assert controller["Groups"] == []  # none of root's groups
    execd = ids_of(daemon_pid(system_cluster, "execd"))
    assert execd["Uid"] == [0] * 4
    # The controller's files are its user's, with tight modes; the state directory and what
    # root's execd trusts stay root's.
    state = system_cluster.state_dir
    assert owner_and_mode(state) == ("root", 0o711)
    assert owner_and_mode(state / "controller") == (SERVICE_USER, 0o711)
    assert owner_and_mode(state / "controller" / "drover.db") == (SERVICE_USER, 0o600)
    assert owner_and_mode(state / "tls") == (SERVICE_USER, 0o700)
    assert owner_and_mode(state / "tls" / "ca.key") == (SERVICE_USER, 0o600)
    assert owner_and_mode(state / "execd.log")[0] == "root"
    # Users find the socket where they always did.
    assert os.readlink(state / "api.sock") == "controller/api.sock"
    assert stat.S_ISSOCK(os.stat(state / "api.sock").st_mode)
    assert owner_and_mode(state / "controller" / "api.sock") == (SERVICE_USER, 0o666)


# The users are asked for before the cluster, so the cluster stops first: its execd ends the
# users' event log writers, which the users' removal would otherwise have to kill.

def test_two_users_run_their_jobs_and_an_event_log_is_written_as_its_owner_by_the_execd(
        users: tuple[str, str], workdirs: dict[str, Path], system_cluster: SystemCluster) -> None:
    jobs = {user: system_cluster.submit_as(user, "-o", "whoami.out", "--event-log", str(work / "events.jsonl"),
                                           "--", "id", "-un", cwd=work)
            for user, work in workdirs.items()}
    for user, job in jobs.items():
        work, uid = workdirs[user], pwd.getpwnam(user).pw_uid
        assert system_cluster.wait_ended(job)["state"] == "completed"
        assert (work / "whoami.out").read_text().split() == [user]
        log = work / "events.jsonl"
        wait_until(lambda log=log: log.exists() and "job_ended" in log.read_text(),  # type: ignore[misc]
                   describe=f"{user}'s event log's last line")
        assert log.stat().st_uid == uid  # the controller (drover) could not have made it: the execd's writer did
        events = [json.loads(line) for line in log.read_text().splitlines()]
        assert {event["job"] for event in events} == {job}
        assert [event["seq"] for event in events] == sorted({event["seq"] for event in events})  # each once
    kinds = {event["kind"] for event in json.loads(system_cluster.as_root("events", "--json").stdout)}
    assert "event_log_failed" not in kinds


def test_an_event_log_the_owner_may_not_write_is_refused_and_kept_with_the_job(
        users: tuple[str, str], workdirs: dict[str, Path], system_cluster: SystemCluster) -> None:
    alice, bob = users
    target = workdirs[bob] / "events.jsonl"  # bob's directory, 0700: alice may not write there
    job = system_cluster.submit_as(alice, "--event-log", str(target), "--", "true", cwd=workdirs[alice])
    assert system_cluster.wait_ended(job)["state"] == "completed"  # the job goes on without it

    def failed() -> list[dict[str, object]]:
        events = json.loads(system_cluster.as_root("events", "--json", str(job)).stdout)
        return [event for event in events if event["kind"] == "event_log_failed"]

    (refusal,) = wait_until(failed, describe="the refusal kept with the job")
    assert refusal["detail"]["path"] == str(target) and "Permission denied" in refusal["detail"]["error"]  # type: ignore[index]
    assert not target.exists()


def test_the_controller_still_refuses_what_it_refused_as_root(system_cluster: SystemCluster,
                                                              users: tuple[str, str]) -> None:
    alice, bob = users
    alices = system_cluster.submit_as(alice, "--hold", "--", "true")
    for argv in (("cancel", str(alices)), ("show", str(alices)), ("status", "--user", alice),
                 ("token", "create"), ("node", "drain", "x", "--reason", "no")):
        refused = system_cluster.run_as(bob, "drover", *argv)
        assert refused.returncode != 0, (argv, refused.stdout)
    assert "allow_root_jobs" in system_cluster.as_root("submit", "--", "true", check=False).stderr
    probe = system_cluster.run_as(bob, system_cluster.install.python, "-c", NODE_CHANNEL)
    assert probe.stdout.startswith("refused: InvalidStatus") and "403" in probe.stdout, probe.stdout
    assert system_cluster.job(alices)["state"] == "held"
    system_cluster.as_root("cancel", str(alices))  # root remains an admin of the cluster


NODE_CHANNEL = """
import os
from websockets.sync.client import unix_connect
try:
    with unix_connect(os.environ["DROVER_SOCKET"], "ws://localhost/v1/nodes/channel") as ws:
        ws.send(b"[]")
        ws.recv(timeout=10)
    print("accepted")
except Exception as error:
    print("refused:", type(error).__name__, error)
"""


def test_an_earlier_root_controllers_state_is_given_to_the_service_user(system_install: SystemInstall,
                                                                      users: tuple[str, str]) -> None:
    """An earlier Drover's controller ran as root and kept its store, its socket and the CA in the
    state directory itself. The next `drover up --system` moves the store into the controller's
    directory, makes it and the CA the service user's, and the jobs are all still there."""
    cluster = SystemCluster(system_install, config_toml="[controller]\nshared = true\n")
    state = cluster.state_dir
    try:
        # The earlier layout: a controller run as root on this state directory (`drover up` as
        # root, the cluster shared by its drover.toml) and its CA made by root.
        cluster.as_root("cluster", "init", "--state-dir", str(state))
        cluster.as_root("up", "--state-dir", str(state), "--cpus", "1")
        cluster.daemons += [psutil.Process(daemon_pid(cluster, name)) for name in ("controller", "execd")]
        assert ids_of(daemon_pid(cluster, "controller"))["Uid"][0] == 0
        assert owner_and_mode(state / "drover.db")[0] == "root" and stat.S_ISSOCK((state / "api.sock").lstat().st_mode)
        earlier = cluster.submit_as(users[0], "--hold", "--", "true")
        cluster.as_root("down", "--state-dir", str(state))

        cluster.start()  # drover up --system
        service = pwd.getpwnam(SERVICE_USER)
        assert ids_of(daemon_pid(cluster, "controller"))["Uid"][0] == service.pw_uid
        assert not (state / "drover.db").exists()
        assert owner_and_mode(state / "controller" / "drover.db") == (SERVICE_USER, 0o600)
        assert owner_and_mode(state / "tls" / "ca.key") == (SERVICE_USER, 0o600)
        assert os.readlink(state / "api.sock") == "controller/api.sock"
        assert cluster.job(earlier)["state"] == "held"  # the store moved whole
        later = cluster.submit_as(users[1], "--", "true")
        assert cluster.wait_ended(later)["state"] == "completed"
    finally:
        problems = cluster.stop()
    assert not problems, problems
