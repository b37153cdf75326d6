"""Where people watch jobs on a terminal: `drover wait --progress` and `drover status --watch`
draw a progress bar of the jobs' tasks on stderr (and nothing more elsewhere), and `drover top`
quits on q, restores the terminal and cuts its lines at the terminal's width. The terminal is a
real pseudo-terminal, of a given width."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import sys
import termios

from tests.helpers.cluster import LocalCluster
from tests.helpers.terminal import read_until
from tests.helpers.wait import wait_until

ESCAPES = re.compile(rb"\x1b\[[0-9;]*[A-Za-z]")


def _on_terminal(cluster: LocalCluster, argv: list[str], columns: int = 100) -> tuple[int, int]:
    """`argv` run on a terminal `columns` wide (stdin, stdout and stderr): its pid and the terminal."""
    env = {key: value for key, value in cluster.env.items() if key not in ("COLUMNS", "LINES")}
    pid, fd = pty.fork()
    if pid == 0:  # the terminal's side: its size set before the command reads it
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
            os.chdir(cluster.workdir)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)
    return pid, fd


def _ended(pid: int, fd: int) -> tuple[int, bytes]:
    """The rest of what the terminal shows, and the exit status, once the command has ended; one
    that has not ended within a minute (a failed test) is killed, with its process group."""
    try:
        rest = read_until(fd, b"\0never written")  # stops at the end of its output
    except AssertionError:
        rest = b""
    statuses: list[int] = []

    def reaped() -> bool:
        child, status = os.waitpid(pid, os.WNOHANG)
        statuses.extend([status] if child else [])
        return bool(child)

    try:
        wait_until(reaped, describe="the command to exit")
        status = statuses[0]
    except AssertionError:
        os.killpg(pid, signal.SIGKILL)  # pty.fork made it a session, and so a group, of its own
        _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), rest


def _drover(*args: str) -> list[str]:
    return [sys.executable, "-m", "drover", *args]


def test_wait_progress_draws_a_bar_of_the_tasks_on_a_terminal(cluster: LocalCluster) -> None:
    job = cluster.submit("--hold", "--array", "1-4", "--", "true")
    pid, fd = _on_terminal(cluster, _drover("wait", "--progress", str(job)))
    try:
        seen = read_until(fd, b"0/4 | 0 done, 0 running, 4 pending, 0 failed | ETA --")
        cluster.drover("release", str(job))
        seen += read_until(fd, f"job {job} completed, exit status 0".encode())
    finally:
        status, rest = _ended(pid, fd)
    seen += rest
    assert status == 0, seen
    assert b"\r[" in seen and b"] 4/4 | 4 done, 0 running, 0 pending, 0 failed | " in seen, seen
    assert re.search(rb"\d+\.\d tasks/s, ETA 0:00", seen), seen
    assert b"Traceback" not in seen


def test_wait_progress_off_a_terminal_prints_what_wait_prints(cluster: LocalCluster) -> None:
    job = cluster.submit("--array", "1-3", "--", "true")
    with_bar = cluster.drover("wait", "--progress", str(job))
    plain = cluster.drover("wait", str(job))
    assert (with_bar.stdout, with_bar.stderr) == (plain.stdout, plain.stderr) == (
        f"job {job} completed, exit status 0\n", "")


def test_status_watch_follows_the_listed_jobs_with_a_bar_on_a_terminal(cluster: LocalCluster) -> None:
    job = cluster.submit("--hold", "--array", "1-3", "--", "true")
    pid, fd = _on_terminal(cluster, _drover("status", "--watch"))
    try:
        seen = read_until(fd, b"0/3 | 0 done, 0 running, 3 pending, 0 failed")
        assert f"{job}".encode() in seen and b"JOB" in seen, seen  # the table first
        cluster.drover("release", str(job))
        seen += read_until(fd, b"3/3 | 3 done")
    finally:
        status, rest = _ended(pid, fd)
    assert status == 0, seen + rest


def test_status_watch_off_a_terminal_prints_the_table_alone(cluster: LocalCluster) -> None:
    job = cluster.submit("--array", "1-3", "--", "sleep", "0.5")
    watched = cluster.drover("status", "--watch")
    assert watched.stderr == "" and "\r" not in watched.stdout
    assert watched.stdout.splitlines()[0].split()[:2] == ["JOB", "NAME"] and str(job) in watched.stdout
    assert cluster.client().job(job).state == "completed"  # it returned once the jobs ended


def test_top_quits_on_q_restores_the_terminal_and_cuts_lines_at_its_width(cluster: LocalCluster) -> None:
    # Then stty says what the terminal is left as; a delay of a minute: only q ends top soon.
    script = f"{sys.executable} -m drover top -d 60; stty -a"
    pid, fd = _on_terminal(cluster, ["/bin/sh", "-c", script], columns=40)
    try:
        seen = read_until(fd, b"JOB")
        os.write(fd, b"q")
        seen += read_until(fd, b"icanon")
    finally:
        status, rest = _ended(pid, fd)
    seen += rest
    assert status == 0, seen
    top, _, after = seen.partition(b"speed")  # stty -a begins "speed 38400 baud; rows 24; columns 40"
    lines = ESCAPES.sub(b"", top).split(b"\r\n")
    assert lines[0].startswith(b"drover top - ") and all(len(line) <= 40 for line in lines), lines
    assert re.search(rb"(?<!-)icanon", after) and re.search(rb"(?<!-)echo ", after), after
