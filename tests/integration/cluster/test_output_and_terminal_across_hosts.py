"""A user on one host, the job on another: `drover logs -f`, `drover run` and `drover run --pty`
run on host A (node1, drained so that nothing runs there) reach the job running on host B
(node2) through the controller and node2's channel. The files are read on node2 as their owner;
the terminal is node2's pseudo-terminal, driven here from a pty of the test's: typed input, the
job's output, a resize, Ctrl-C and the exit status. Another user can reach neither."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import pwd
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.munge_cluster import hosts_with_munge
from tests.helpers.netns import Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.terminal import read_until
from tests.helpers.users import LOGIN_PATH, run_as_user, user_command
from tests.helpers.wait import wait_until


@pytest.fixture
def two_hosts(users: tuple[str, str], system_install: SystemInstall) -> Iterator[Hosts]:
    # the nodes run the installed Drover, as the jobs' owners can
    with hosts_with_munge(["node1", "node2"], python=system_install.python) as (hosts, _):
        wait_until(lambda: _states(hosts) == {"node1": "up", "node2": "up"}, describe="both nodes up")
        hosts.ctl.drover("node", "drain", "node1", "--reason", "the user's own host: jobs go to node2")
        yield hosts


def _states(hosts: Hosts) -> dict[str, str]:
    return {n["name"]: n["state"] for n in json.loads(hosts.ctl.drover("nodes", "--json").stdout)}


def _user_env(hosts: Hosts, install: SystemInstall) -> dict[str, str | None]:
    return {"PATH": f"{install.bindir}:{LOGIN_PATH}",
            "DROVER_CLUSTER_FILE": str(hosts.nodes["node1"].state_dir / "cluster.json")}


def _on_node1(hosts: Hosts, install: SystemInstall, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_as_user(user, argv, prefix=hosts.nodes["node1"].command(), env=_user_env(hosts, install))


def test_logs_follow_and_run_from_another_host(two_hosts: Hosts, users: tuple[str, str],
                                               system_install: SystemInstall) -> None:
    hosts = two_hosts
    alice, bob = users
    home = Path(pwd.getpwnam(alice).pw_dir)
    go = home / "go"
    script = f"echo one; echo on $(hostname -I); while [ ! -e {go} ]; do sleep 0.1; done; echo two"
    submitted = _on_node1(hosts, system_install, alice, "drover", "submit", "--parsable", "-o", "/tmp/%u-%j.out",
                          "--", "sh", "-c", script)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[0]
    try:

        # logs -f on node1, while the job runs on node2: the first lines come before the job ends
        command, env = user_command(alice, ["drover", "logs", "-f", job], prefix=hosts.nodes["node1"].command(),
                                    env=_user_env(hosts, system_install))
        follower = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    start_new_session=True)
        try:
            assert follower.stdout is not None
            seen = read_until(follower.stdout.fileno(), b"on ")
            assert b"one\n" in seen
            # bob, on the same host, cannot read it through the node
            refused = _on_node1(hosts, system_install, bob, "drover", "logs", job)
            assert refused.returncode != 0 and f"belongs to {alice}" in refused.stderr, refused.stderr
            go.touch()
            os.chown(go, pwd.getpwnam(alice).pw_uid, -1)
            out, err = follower.communicate(timeout=60)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
        text = (seen + out).decode()
        assert follower.returncode == 0, err
        assert text.startswith("one\non ") and "10.213.1.2" in text and text.endswith("two\n"), text  # ran on node2

        # once the node has cleaned up after it, the output is still read there, as its owner
        wait_until(lambda: not _live_spools(hosts, "node2"), describe="node2's spool cleaned up")
        again = _on_node1(hosts, system_install, alice, "drover", "logs", job)
        assert again.returncode == 0 and again.stdout == text, again.stderr

        # drover run: the output streams here, the exit status is the job's
        ran = _on_node1(hosts, system_install, alice, "drover", "run", "--", "sh", "-c",
                        "echo out $(hostname -I); echo err >&2; exit 3")
        assert ran.returncode == 3, ran.stderr
        assert ran.stdout.startswith("out ") and "10.213.1.2" in ran.stdout and "err" in ran.stderr
    finally:
        Path(f"/tmp/{alice}-{job}.out").unlink(missing_ok=True)  # its output, which outlives the user


def _live_spools(hosts: Hosts, node: str) -> list[Path]:
    return [p for p in (hosts.nodes[node].state_dir / "spool").glob("[0-9]*") if p.is_dir()]


SCRIPT = (
    "read -p 'name? ' name; echo \"hi $name on $(hostname -I)\"; "
    "trap 'echo size $(stty size)' WINCH; trap 'echo got-int; exit 7' INT; "
    "echo ready; while :; do sleep 0.1; done"
)


def test_a_terminal_on_another_host(two_hosts: Hosts, users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts = two_hosts
    alice, bob = users
    command, env = user_command(alice, ["drover", "run", "--pty", "--", "bash", "-c", SCRIPT],
                                prefix=hosts.nodes["node1"].command(), env=_user_env(hosts, system_install))
    pid, fd = pty.fork()
    if pid == 0:  # alice's terminal on node1
        os.execvpe(command[0], command, env)
    try:
        read_until(fd, b"name? ")
        os.write(fd, b"alice\r")
        greeting = read_until(fd, b"ready")
        assert b"hi alice on 10.213.1.2" in greeting, greeting  # typed here, answered on node2
        # bob cannot attach to alice's terminal
        jobs = json.loads(hosts.ctl.drover("status", "--all", "--json").stdout)
        running = [j["id"] for j in jobs if j["state"] == "running"]
        assert running, jobs
        probe = run_as_user(bob, [system_install.python, "-c", ATTACH, str(running[0])],
                            prefix=hosts.nodes["node1"].command(), env=_user_env(hosts, system_install))
        assert probe.returncode == 0 and f"belongs to {alice}" in probe.stdout, (probe.stdout, probe.stderr)
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))  # alice resizes
        read_until(fd, b"size 40 100")
        os.write(fd, b"\x03")  # Ctrl-C
        read_until(fd, b"got-int")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 7


# bob's own program: the terminal WebSocket of alice's job, with bob's credential
ATTACH = """
import sys
from drover.client.client import Client
from websockets.exceptions import ConnectionClosed
with Client() as client:
    try:
        connection = client.terminal(int(sys.argv[1]), 0)
        connection.recv(timeout=30)
        print("attached")
    except ConnectionClosed as closed:
        print("refused:", closed.rcvd.reason if closed.rcvd else closed)
    except Exception as error:
        print("refused:", error)
"""
