"""Reading what a program writes to a terminal (the primary side of a pty) in tests."""

from __future__ import annotations

import os
import pty
import select
import time
from pathlib import Path


def read_until(fd: int, marker: bytes, timeout: float = 60) -> bytes:
    """Everything read from `fd` until `marker` was seen; AssertionError with what was seen if it
    does not come within `timeout` seconds. Stops early at the end of the output (EOF or EIO, as
    a pty's primary side reports its last writer gone)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"never saw {marker!r}; saw {seen!r}")
        if select.select([fd], [], [], remaining)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def until_the_shell_answers(fd: int) -> None:
    """What is typed before a job's shell reads its terminal is not its input: ask until the
    shell itself answers (the terminal echoes `$((6*7))`, only the shell says 42)."""
    for _ in range(60):
        os.write(fd, b"echo ready-$((6*7))\n")
        try:
            read_until(fd, b"ready-42", timeout=1)
            return
        except AssertionError:
            continue
    raise AssertionError("the interactive job's shell never answered")


def interactive_job(argv: list[str], env: dict[str, str], cwd: Path, waiting: bytes, typed: bytes,
                    finished: bytes) -> tuple[bytes, int]:
    """A front end's interactive job on a new terminal, as a user starts one (`qsub -I`, `bsub
    -Is`): once the command says the job waits (`waiting`) and the job's shell answers, type
    `typed` and read until the command says the job `finished`. What the terminal showed from
    then on, and the command's exit status."""
    pid, fd = pty.fork()
    if pid == 0:  # the user's side: the command on its terminal
        try:
            os.chdir(cwd)
            os.execve(argv[0], argv, env)
        finally:
            os._exit(127)  # never back into the test's own code
    try:
        read_until(fd, waiting)
        until_the_shell_answers(fd)
        os.write(fd, typed)
        seen = read_until(fd, finished)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return seen, os.waitstatus_to_exitcode(status)
