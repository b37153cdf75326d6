"""`drover run --pty`: a prompt, Ctrl-C and a resize round-trip between the user's terminal and
the job's, and the job's exit status comes back."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import sys
import termios

from tests.helpers.cluster import LocalCluster
from tests.helpers.terminal import read_until

SCRIPT = (
    "read -p 'name? ' name; echo \"hi $name\"; "
    "trap 'echo size $(stty size)' WINCH; trap 'echo got-int; exit 7' INT; "
    "echo ready; while :; do sleep 0.1; done"
)


def test_a_prompt_ctrl_c_and_a_resize_round_trip(cluster: LocalCluster) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the user's side: `drover run --pty` on a terminal
        os.chdir(cluster.workdir)
        os.execve(sys.executable, [sys.executable, "-m", "drover", "run", "--pty", "--", "bash", "-c", SCRIPT],
                  cluster.env)
    try:
        read_until(fd, b"name? ")
        os.write(fd, b"bob\r")
        assert b"hi bob" in read_until(fd, b"ready")
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))  # the user resizes
        read_until(fd, b"size 40 100")
        os.write(fd, b"\x03")  # Ctrl-C
        read_until(fd, b"got-int")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 7


def test_a_job_that_ends_before_the_terminal_connects_still_shows_its_output_and_status(
        cluster: LocalCluster) -> None:
    for attempt in range(5):  # the job ends in milliseconds: mostly before the relay is reached
        pid, fd = pty.fork()
        if pid == 0:
            os.chdir(cluster.workdir)
            os.execve(sys.executable, [sys.executable, "-m", "drover", "run", "--pty", "--", "bash", "-c",
                                       f"echo quick-{attempt}; exit 3"], cluster.env)
        try:
            seen = read_until(fd, b"\x00never")  # everything, up to the end of the output
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        assert b"Traceback" not in seen, seen
        assert f"quick-{attempt}".encode() in seen, seen
        assert os.waitstatus_to_exitcode(status) == 3, seen
