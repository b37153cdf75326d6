"""HyperQueue as a reference in bench/run.py: a private server and one worker of 2 CPUs.

PyPI's `hyperqueue` (installed into this environment when missing, as the Debian references are
installed with apt-get) is HyperQueue's Python API; it ships no `hq` binary, but its extension
module holds the server and the worker themselves. bench/hq_host.py runs them in a process of
its own, with a server directory of its own under /tmp; jobs go through the package's client,
from this process: an array is one job of N tasks, a single submission one job of one task.
Tasks run with no output files (HyperQueue's `--stdout none --stderr none`), as Drover's jobs
here write to /dev/null.

Waiting: the package's own wait asks the server for the jobs' state once a second, which would
add up to a second to every figure; `finished` asks it once (the first answer comes at once, and
the callback that receives it ends the wait), and `wait` asks every 10 ms. The server's CPU
includes answering those questions (a few hundred per run).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HOST = Path(__file__).with_name("hq_host.py")
POLL_S = 0.01


def available() -> bool:
    """Whether the `hyperqueue` package imports, installing it from PyPI if it is missing."""
    if importlib.util.find_spec("hyperqueue") is None:
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "hyperqueue"],
                              capture_output=True, text=True)
        importlib.invalidate_caches()
        if importlib.util.find_spec("hyperqueue") is None:
            reason = (done.stderr.strip().splitlines() or ["no reason given"])[-1]
            print(f"missing: HyperQueue (pip install hyperqueue failed: {reason})", file=sys.stderr)
            return False
    return True


class _Answered(Exception):
    """Raised by the wait's callback to end the package's wait after its first answer."""


class HyperQueue:
    """A running server and worker (bench/hq_host.py) and a client connected to them."""

    def __init__(self, root: Path, host: subprocess.Popen[str], pid: int, server_threads: list[int]) -> None:
        from hyperqueue import Client

        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        self.host = host
        self.pid = pid
        self.server_threads = server_threads
        self.client = Client(root / "server")

    def submit(self, commands: list[list[str]]) -> int:
        """One job holding one task per command; its id."""
        from hyperqueue import Job

        job = Job(default_workdir=self.work)
        for command in commands:
            job.program(command, stdout=None, stderr=None)
        return int(self.client.submit(job).id)

    def finished(self, jobs: list[int]) -> list[int]:
        """Those of `jobs` that have ended, from one answer of the server."""
        answer: dict[int, dict[str, Any]] = {}

        def seen(state: dict[int, dict[str, Any]]) -> None:
            answer.update(state)
            raise _Answered

        try:
            self.client.connection.wait_for_jobs(jobs, seen)
        except _Answered:
            pass
        failed = [job for job, state in answer.items() if state["failed"]]
        if failed:
            raise RuntimeError(f"HyperQueue jobs {failed} had failed tasks")
        return [job for job, state in answer.items() if state["completed"]]

    def wait(self, jobs: list[int]) -> None:
        remaining = set(jobs)
        while remaining:
            remaining -= set(self.finished(sorted(remaining)))
            if remaining:
                time.sleep(POLL_S)

    def run(self, commands: list[list[str]], one_job: bool) -> float:
        """Seconds from the first submission until every task has ended: all the commands as one
        job (an array), or each as a job of its own, submitted one after the other."""
        began = time.perf_counter()
        jobs = [self.submit(commands)] if one_job else [self.submit([command]) for command in commands]
        self.wait(jobs)
        return time.perf_counter() - began

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far: the server's thread, the worker (the rest of the process), and the
        tasks (reaped by the worker: the process's cutime and cstime)."""
        ticks = os.sysconf("SC_CLK_TCK")
        fields = stat_fields(f"/proc/{self.pid}/stat")
        server = 0
        for tid in self.server_threads:
            thread = stat_fields(f"/proc/{self.pid}/task/{tid}/stat")
            server += int(thread[11]) + int(thread[12])
        own = int(fields[11]) + int(fields[12])
        return {"server": server / ticks, "worker": (own - server) / ticks,
                "tasks": (int(fields[13]) + int(fields[14])) / ticks}


def stat_fields(path: str) -> list[str]:
    """The fields of a /proc stat file after the command name (field 3 onwards)."""
    return Path(path).read_text().rpartition(")")[2].split()


@contextmanager
def hyperqueue(cpus: int = 2) -> Iterator[HyperQueue | None]:
    """A private server and one worker of `cpus` CPUs, stopped (by the host's pid) afterwards;
    None if HyperQueue cannot be had."""
    if not available():
        yield None
        return
    root = Path(tempfile.mkdtemp(prefix="hqb-", dir="/tmp"))
    (root / "server").mkdir()
    log = open(root / "host.log", "w")  # noqa: SIM115 - the host writes to it until it stops
    host = subprocess.Popen([sys.executable, str(HOST), str(root / "server"), str(cpus)],
                            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        ready = root / "server" / "ready.json"
        deadline = time.monotonic() + 60
        while not ready.exists():
            if host.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"HyperQueue did not start: {(root / 'host.log').read_text()[-2000:]}")
            time.sleep(0.01)
        started = json.loads(ready.read_text())
        yield HyperQueue(root, host, started["pid"], started["server_threads"])
    finally:
        if host.stdin is not None:
            host.stdin.close()
        try:
            host.wait(timeout=30)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)
